"""Rank cut-off: keep the top k candidates of each query."""

from __future__ import annotations

from typing import Sequence

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.stages.base import Stage
from sleuth.stages.run import Run


class Cutoff(Stage):
    """Keeps the first ``k`` candidates per query (input must be ranked, as every stage's output is)."""

    def __init__(self, k: int):
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigError(f"cutoff: k must be a positive integer, got {k!r}")
        self.k = k
        self.name = f"cutoff({k})"

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        return (candidates or Run()).cut(self.k)
