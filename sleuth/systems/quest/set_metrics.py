"""Set-seeking evaluation (Malaviya et al., ACL 2023): per-query set precision / recall / F1 macro-averaged, overall, per
template and per domain; average Recall@K and MRecall@K of rankings.

Conventions (QUEST, Appendix A): predictions are joined to gold by query id, never by query string; a query with
no true positive scores P = R = F1 = 0 (so does an empty prediction); a gold example with an empty set is an error
(InputError naming the query); a gold query missing from the predictions counts as an empty prediction.
MRecall@K is 1 when the whole gold set is inside the first K ranked documents (Min et al., 2021).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sleuth.errors import InputError
from sleuth.eval.measures import mean

RECALL_KS = (20, 50, 100, 1000)  # the cut-offs of the paper's Table 4
SET_MEASURES = ("P", "R", "F1")

Gold = Mapping[str, Sequence[str]]  # query id -> gold document ids (titles)
Predictions = Mapping[str, Sequence[str]]  # query id -> predicted set, or a ranking (best first)


def check_gold(gold: Gold, where: Callable[[str], Mapping[str, Any]] = lambda qid: {}) -> None:
    """Raise an InputError naming the first query whose gold set is empty (and, by ``where(qid)``, the ``path``
    and ``line`` it was read from)."""
    for qid, docs in gold.items():
        if not docs:
            raise InputError(f"query '{qid}' has an empty gold set; set metrics are undefined for it",
                             **where(qid), field="docs")


def true_positives(predicted: Iterable[str], gold: Iterable[str]) -> int:
    """How many distinct predicted documents are gold."""
    return len(set(predicted) & set(gold))


def set_precision(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """|predicted ∩ gold| / |predicted|; 0 when there is no true positive (including an empty prediction)."""
    hits = true_positives(predicted, gold)
    return hits / len(set(predicted)) if hits else 0.0


def set_recall(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """|predicted ∩ gold| / |gold|; 0 when there is no true positive."""
    hits = true_positives(predicted, gold)
    return hits / len(set(gold)) if hits else 0.0


def set_f1(predicted: Sequence[str], gold: Sequence[str]) -> float:
    """Harmonic mean of set precision and recall; 0 when there is no true positive."""
    p, r = set_precision(predicted, gold), set_recall(predicted, gold)
    return 2 * p * r / (p + r) if p + r else 0.0


def recall_at(ranking: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of the gold set found in the first ``k`` ranked documents."""
    return set_recall(ranking[:k], gold)


def mrecall_at(ranking: Sequence[str], gold: Sequence[str], k: int) -> float:
    """1.0 when every gold document is in the first ``k`` ranked documents, else 0.0."""
    return float(set(gold) <= set(ranking[:k]))


SET_FUNCTIONS = {"P": set_precision, "R": set_recall, "F1": set_f1}


def set_per_query(predictions: Predictions, gold: Gold) -> dict[str, dict[str, float]]:
    """``{"P"|"R"|"F1": {qid: value}}`` over every gold query (a query absent from ``predictions`` predicts nothing)."""
    check_gold(gold)
    return {name: {qid: fn(list(predictions.get(qid, ())), list(docs)) for qid, docs in gold.items()}
            for name, fn in SET_FUNCTIONS.items()}


def recall_per_query(rankings: Predictions, gold: Gold, ks: Iterable[int] = RECALL_KS) -> dict[str, dict[str, float]]:
    """``{"Recall@K": {qid: ...}, "MRecall@K": {qid: ...}}`` for each ``k`` over every gold query."""
    check_gold(gold)
    values: dict[str, dict[str, float]] = {}
    for k in ks:
        values[f"Recall@{k}"] = {qid: recall_at(list(rankings.get(qid, ())), list(d), k) for qid, d in gold.items()}
        values[f"MRecall@{k}"] = {qid: mrecall_at(list(rankings.get(qid, ())), list(d), k) for qid, d in gold.items()}
    return values


def average(per_query: Mapping[str, Mapping[str, float]], qids: Iterable[str] | None = None) -> dict[str, float]:
    """Macro average of each measure over ``qids`` (default: all queries of the measure)."""
    chosen = None if qids is None else list(qids)
    return {name: mean(values.values() if chosen is None else (values[q] for q in chosen))
            for name, values in per_query.items()}


def grouped(per_query: Mapping[str, Mapping[str, float]], groups: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """Macro averages per group (``groups``: qid -> template or domain), groups in sorted order."""
    members: dict[str, list[str]] = defaultdict(list)
    for qid, group in groups.items():
        members[group].append(qid)
    return {group: average(per_query, qids) for group, qids in sorted(members.items())}


def set_report(predictions: Predictions, gold: Gold, templates: Mapping[str, str] | None = None,
               domains: Mapping[str, str] | None = None) -> dict[str, dict]:
    """Average P / R / F1 ``overall``, ``per_template`` and ``per_domain`` (the last two when the labels are given)."""
    values = set_per_query(predictions, gold)
    report: dict[str, dict] = {"overall": average(values)}
    if templates is not None:
        report["per_template"] = grouped(values, {q: templates[q] for q in gold})
    if domains is not None:
        report["per_domain"] = grouped(values, {q: domains[q] for q in gold})
    return report
