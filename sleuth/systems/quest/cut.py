"""Where a ranked, probability-scored candidate list becomes a predicted set.

A candidate is a member when its score is above ``threshold`` (the paper's rule) and, with ``gap``, also within
``gap`` of the best candidate's score (a cut by the classifier's score gap: a query whose best candidate scores .97
keeps only near-certain ones, a query whose best scores .5 keeps more). With ``keep_top`` the best candidate is
always a member (every QUEST query has at least one answer). The sweep tries every combination and keeps the
best average F1 (ties: the simplest rule, then the lowest threshold).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Self

from sleuth.errors import ConfigError
from sleuth.stages.run import Hit, Run
from sleuth.systems.quest.set_metrics import average, set_per_query

THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(20))  # 0.00 .. 0.95, the paper's sweep
GAPS = (None, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


@dataclass(frozen=True)
class SetCut:
    """The rule that turns scored candidates into a set (see the module docstring)."""

    threshold: float = 0.5
    gap: float | None = None
    keep_top: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold < 1.0:
            raise ConfigError(f"threshold must be in [0, 1), got {self.threshold}")
        if self.gap is not None and not 0.0 < self.gap <= 1.0:
            raise ConfigError(f"gap must be in (0, 1], got {self.gap}")

    def members(self, hits: Sequence[Hit]) -> list[Hit]:
        """The hits in the set, in their order."""
        if not hits:
            return []
        top = max(h.score for h in hits)
        kept = [h for h in hits if h.score > self.threshold and (self.gap is None or h.score >= top - self.gap)]
        if self.keep_top and not kept:
            kept = [max(hits, key=lambda h: h.score)]
        return kept

    def record(self) -> dict:
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping | float) -> SetCut:
        """A cut from its record, or from a bare threshold (older training.json files)."""
        if isinstance(record, (int, float)):
            return cls(float(record))
        return cls(float(record["threshold"]), record.get("gap"), bool(record.get("keep_top", False)))


class CutsToSet:
    """A stage that keeps only the members of a predicted set, by the :class:`SetCut` rules in its ``cut`` (and
    ``set_cut``, the rule of the queries parsed as set operations, where it has one); :meth:`uncut` is the same stage
    keeping and ranking every candidate."""

    cut: SetCut | None
    set_cut: SetCut | None = None

    def uncut(self) -> Self:
        """A shallow copy without its set rules (it shares the caches, so no candidate is scored twice)."""
        whole = copy.copy(self)
        whole.cut = whole.set_cut = None
        return whole


def as_cut(cut: SetCut | float) -> SetCut:
    """A set rule from a rule or a bare threshold."""
    return cut if isinstance(cut, SetCut) else SetCut(float(cut))


def predicted_sets(run: Run, cut: SetCut | float) -> dict[str, list[str]]:
    """Each query's set under ``cut`` (a bare number is a threshold alone)."""
    cut = as_cut(cut)
    return {qid: [h.id for h in cut.members(hits)] for qid, hits in run.items()}


def cut_sweep(run: Run, gold: Mapping[str, Sequence[str]], thresholds: Sequence[float] = THRESHOLDS,
              gaps: Sequence[float | None] = (None,), keep_top: Sequence[bool] = (False,)) -> list[dict]:
    """Average P / R / F1 over ``gold``'s queries for every combination of the rule's settings."""
    rows = []
    for keep in keep_top:
        for gap in gaps:
            for threshold in thresholds:
                cut = SetCut(threshold, gap, keep)
                rows.append({**cut.record(), **average(set_per_query(predicted_sets(run, cut), gold))})
    return rows


def best_cut(sweep: Sequence[Mapping]) -> SetCut:
    """The rule of best average F1; on ties the one without gap and keep_top, then the lowest threshold."""
    best = max(sweep, key=lambda r: (round(r["F1"], 12), r["gap"] is None, not r["keep_top"], -r["threshold"]))
    return SetCut.from_record(best)
