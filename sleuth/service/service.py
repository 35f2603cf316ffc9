"""The service's logic, independent of the web framework: the served pipelines (:mod:`~sleuth.service.served`),
searching (:mod:`~sleuth.service.searcher`) and document updates (:mod:`~sleuth.service.documents`), sharing one
set of limits and one bounded executor."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from sleuth.service.documents import DocumentUpdates
from sleuth.service.executor import BoundedExecutor
from sleuth.service.limits import Limits
from sleuth.service.query_log import QueryLog
from sleuth.service.searcher import Searcher
from sleuth.service.served import ServedPipelines
from sleuth.stages.base import Stage

MAX_K = 1000
T = TypeVar("T")


class SearchService:
    """What endpoints (and systems' extensions) use: ``served``, ``searcher``, ``documents``, ``limits`` and
    :meth:`timed` for other work within the time limit."""

    def __init__(self, pipelines: Mapping[str, Stage], query_log: QueryLog, max_k: int = MAX_K,
                 limits: Limits | None = None, loader: Callable[[], Mapping[str, Stage]] | None = None,
                 index_dirs: Mapping[str, str | Path] | None = None):
        self.limits = limits or Limits(max_k=max_k)
        self.query_log = query_log
        self.served = ServedPipelines(pipelines, loader)
        self.executor = BoundedExecutor(self.limits.workers, self.limits.max_queued, self.limits.timeout_seconds)
        self.searcher = Searcher(self.served, self.executor, self.limits, query_log)
        self.documents = DocumentUpdates(index_dirs, self.served, self.limits)

    @property
    def pipelines(self) -> dict[str, Stage]:
        return self.served.current.pipelines

    @property
    def ready(self) -> bool:
        """Whether the default pipeline is loaded and its requests can be answered (others may still build)."""
        return self.served.ready

    def timed(self, work: Callable[[], T]) -> T:
        """``work()`` run on the bounded executor within the time limit (503 when busy, 504 when it takes longer)."""
        return self.executor.run(lambda deadline: work())

    def describe(self) -> dict[str, Any]:
        """The served pipelines with their descriptions, the default one, the largest k and the largest
        ``max_chars`` a request may ask for (the web page asks for no more)."""
        return {**self.served.describe(), "max_k": self.limits.max_k, "max_text_chars": self.limits.max_text_chars}
