"""Paired comparison of two chains on the same questions (`sleuth cos compare`): from the per-question outcomes of
`sleuth cos eval --per-question --json` records, each measure's means, how many questions each side wins, and a
two-sided paired randomisation test of the difference.

Comparing models on a few hundred questions, a difference of one point in path R@20 is a handful of questions: two
seeds of one training recipe moved the fused chain's tuning-part R@20 by 1.6 points (docs/cos/README.md, session
26). A rule that reads means alone then chooses on noise; the p-value says how often a difference that large comes
from flipping which side won each question.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.eval.significance import paired_randomisation


@dataclass(frozen=True)
class PairedMeasure:
    """One measure of side ``a`` against side ``b`` over the same questions."""

    measure: str
    a: float
    b: float
    a_wins: int  # questions where a scores 1 and b 0
    b_wins: int
    p_value: float

    def row(self) -> dict[str, Any]:
        return {"measure": self.measure, "a": round(self.a, 4), "b": round(self.b, 4),
                "difference": round(self.a - self.b, 4), "a_wins": self.a_wins, "b_wins": self.b_wins,
                "p": round(self.p_value, 4)}


def record_measures(record: dict[str, Any]) -> list[str]:
    """The measures of a record's rows, in the order of their per-question outcomes."""
    row = record["rows"][0]
    return [key for key in row if key.startswith("path_recall@")] + ["passage_em"]


def chain_outcomes(record: dict[str, Any], chain: str, where: str | Path) -> dict[str, list[int]]:
    """The per-question outcomes of ``chain`` in a record; a ConfigError names the record when the chain or the
    outcomes are missing."""
    rows = {row.get("chain"): row for row in record.get("rows", [])}
    if chain not in rows:
        raise ConfigError(f"{where}: no chain '{chain}' (it has {', '.join(map(str, rows)) or 'none'})")
    if "per_question" not in rows[chain]:
        raise ConfigError(f"{where}: no per-question outcomes; run `sleuth cos eval ... --per-question --json`")
    return rows[chain]["per_question"]


def compare_outcomes(a: dict[str, list[int]], b: dict[str, list[int]], measures: list[str],
                     samples: int = 10_000, seed: int = 0) -> list[PairedMeasure]:
    """Each measure of ``a`` against ``b``: both must hold the same questions (a ConfigError otherwise)."""
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        raise ConfigError(f"the two sides hold different questions ({len(only_a)} only in the first, e.g. "
                          f"{only_a[:1]}; {len(only_b)} only in the second, e.g. {only_b[:1]}): compare runs of "
                          "the same --questions, --part and --max-queries")
    qids = sorted(a)
    if not qids:
        raise ConfigError("no questions to compare")
    results = []
    for index, measure in enumerate(measures):
        x, y = [a[q][index] for q in qids], [b[q][index] for q in qids]
        results.append(PairedMeasure(measure, sum(x) / len(x), sum(y) / len(y),
                                     sum(1 for u, v in zip(x, y) if u > v), sum(1 for u, v in zip(x, y) if v > u),
                                     paired_randomisation(x, y, samples=samples, seed=seed)))
    return results
