"""Sequential composition of stages (``a >> b``)."""

from __future__ import annotations

from typing import Sequence

from sleuth.corpus.model import Query
from sleuth.stages.base import Stage
from sleuth.stages.run import Run


class Sequential(Stage):
    """Runs stages in order, each receiving the previous stage's candidates."""

    def __init__(self, stages: Sequence[Stage], name: str | None = None):
        flat: list[Stage] = []
        for stage in stages:
            flat.extend(stage.stages if isinstance(stage, Sequential) else [stage])
        self.stages = flat
        self.name = name or " >> ".join(s.name for s in flat)

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        for stage in self.stages:
            candidates = stage.transform(queries, candidates)
        return candidates if candidates is not None else Run()
