"""Pipelines built on first use, so that a service starts at once while slow indexes build behind it.

A :class:`LazyStage` stands for a pipeline until it is built: it has a name, a description and a ``build`` function,
and a status for ``GET /pipelines`` and the web page: ``ready``, ``building on first use`` (waiting for its turn),
``building: <phase> n%`` (read from the build's progress, :func:`sleuth.progress.running`) or ``failed: <one
line>``. A search that names it before it is ready is refused with :class:`NotReadyError` (503, ``Retry-After``,
the status line), so no request waits for a build, and a request for a pipeline that has not started moves it to
the front of the queue. :class:`BackgroundBuilds` builds the lazy stages of one set of pipelines on one thread, in
their order (requested ones first); a reload stops it after its current build and hands over to the next one.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from sleuth.errors import SleuthError
from sleuth.service.limits import RequestError
from sleuth.stages.base import Stage
from sleuth.stages.run import Run

#: seconds a client is told to wait before asking again for a pipeline being built
RETRY_AFTER_SECONDS = 10
PENDING, BUILDING, READY, FAILED = "building on first use", "building", "ready", "failed"
_requests = itertools.count(1)


class NotReadyError(RequestError):
    """A request for a pipeline that is not built (yet, or at all): 503 with the pipeline's status line, and a
    ``Retry-After`` header while it builds."""

    def __init__(self, message: str, retry_after: int | None = RETRY_AFTER_SECONDS):
        super().__init__(message, 503, {"Retry-After": str(retry_after)} if retry_after is not None else None)


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message (a sleuth error is one line already; others get their type)."""
    text = (str(exc).strip().splitlines() or [""])[0]
    return text if isinstance(exc, SleuthError) and text else f"{type(exc).__name__}: {text}".rstrip(": ")


class LazyStage(Stage):
    """A pipeline that is built by :meth:`build` (on the background thread), and refuses searches until then."""

    def __init__(self, name: str, build: Callable[[], Stage], description: str | None = None,
                 on_built: Callable[[LazyStage, float], None] | None = None):
        self.name, self.description = name, description
        self._build, self.on_built = build, on_built
        self._stage: Stage | None = None
        self._state, self._error = PENDING, ""
        self._builder_thread: int | None = None
        self.requested = 0  # order of the first request that named it before it was built (0: none)
        self._lock = threading.Lock()

    @property
    def ready(self) -> bool:
        return self._state == READY

    @property
    def pending(self) -> bool:
        return self._state == PENDING

    @property
    def status(self) -> str:
        """``ready``, ``building on first use``, ``building: <phase> n%`` or ``failed: <one line>``."""
        if self._state == FAILED:
            return f"{FAILED}: {self._error}"
        if self._state == BUILDING:
            from sleuth.progress import running

            task = running(self._builder_thread) if self._builder_thread is not None else None
            if task is None:
                return BUILDING
            if task.total:
                return f"{BUILDING}: {task.description} {100 * task.done // task.total}%"
            return f"{BUILDING}: {task.description}"
        return self._state

    def build(self) -> None:
        """Build the pipeline (once; a failure is kept as its status, one line, never raised), then call
        ``on_built(stage, seconds)``."""
        with self._lock:
            if self._state != PENDING:
                return
            self._state, self._builder_thread = BUILDING, threading.get_ident()
        start = time.perf_counter()
        try:
            stage = self._build()
            self.description = stage.description = self.description or stage.description  # either one's, in both
            self._stage, self._state = stage, READY
        except Exception as exc:  # any failure of a build is the pipeline's status, not the server's end
            self._error, self._state = one_line(exc), FAILED
        if self.on_built is not None:
            self.on_built(self, time.perf_counter() - start)

    def built(self) -> Stage:
        """The built pipeline; :class:`NotReadyError` while it is not (and a first request moves it forward)."""
        stage = self._stage
        if stage is not None:
            return stage
        if self._state == FAILED:
            raise NotReadyError(f"pipeline '{self.name}' is not available: {self.status}", retry_after=None)
        if self._state == PENDING and not self.requested:
            self.requested = next(_requests)
        raise NotReadyError(f"pipeline '{self.name}' is not ready: {self.status}; ask again shortly")

    def transform(self, queries: Sequence, candidates: Run | None = None) -> Run:
        return self.built().transform(queries, candidates)

    def index_folders(self) -> set[Path] | None:
        """The built pipeline's folders; none for one not started (it reads them as they are when built), None
        while it builds or after it failed."""
        stage = self._stage
        return stage.index_folders() if stage is not None else set() if self.pending else None


def status_of(stage: Stage) -> str:
    """A served stage's status line: a :class:`LazyStage`'s own, ``ready`` for any other."""
    return stage.status if isinstance(stage, LazyStage) else READY


def built(stage: Stage) -> Stage:
    """The stage to search with: a :class:`LazyStage`'s built pipeline (or :class:`NotReadyError`), else itself."""
    return stage.built() if isinstance(stage, LazyStage) else stage


class BackgroundBuilds:
    """Builds the pending :class:`LazyStage` s among ``stages`` on one daemon thread, in order, those a request
    named first; after ``previous`` (the builds of the set it replaces) is stopped and has finished its build."""

    def __init__(self, stages: Iterable[Stage], previous: BackgroundBuilds | None = None):
        self.stages = [stage for stage in stages if isinstance(stage, LazyStage)]
        self._previous, self._stopped = previous, threading.Event()
        self.thread = threading.Thread(target=self._run, name="sleuth-pipeline-builds", daemon=True)
        if self.stages:
            self.thread.start()

    def _next(self) -> LazyStage | None:
        pending = [stage for stage in self.stages if stage.pending]
        requested = sorted((stage for stage in pending if stage.requested), key=lambda stage: stage.requested)
        return (requested or pending)[0] if pending else None

    def _run(self) -> None:
        if self._previous is not None:
            self._previous.stop()
            self._previous.join()
            self._previous = None  # no chain of earlier sets kept alive
        while not self._stopped.is_set() and (stage := self._next()) is not None:
            stage.build()

    def stop(self) -> None:
        """Build nothing more once the current build ends."""
        self._stopped.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end (True when it has, or never started)."""
        if self.thread.ident is None:
            return True
        self.thread.join(timeout)
        return not self.thread.is_alive()
