"""Tuning DHR's lambda (paper section 5.3): grid search over [0, 2] in steps of 0.1, then steps of 0.01 within
+-0.05 of the best coarse value, maximising a dev-set metric (the paper: Top-20 accuracy). The same two-level search
picks the length prior of the default ``dhr`` score (:func:`rerank_with_prior`, grid PRIOR_COARSE).

The stage-1 documents and stage-2 passage scores do not depend on lambda, so a run scored once with every candidate
passage (carrying ``passage_score`` and ``document_score`` extras) is re-ranked for each lambda without new searches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sleuth.errors import ConfigError
from sleuth.stages.run import Hit, Run

COARSE = (0.0, 2.0, 0.1)  # range and step of the first grid
FINE_STEP, FINE_RADIUS = 0.01, 0.05  # second grid: this step within this distance of the best coarse value
PREFERRED = 1.0  # among equally good lambdas, the one closest to the recipe's value wins
PRIOR_COARSE = (0.0, 0.1, 0.005)  # length prior: range and step of the first grid (then 0.001 steps within 0.005)


def rerank_with_lambda(run: Run, lam: float, k: int | None = None) -> Run:
    """Each ranking re-scored as ``passage_score + lam * document_score`` (+ ``document_prior`` where a hit has one:
    the length prior does not depend on lambda), from the hits' extras, best first."""
    try:
        return rescored(run, lambda h: h.extras["passage_score"] + lam * h.extras["document_score"]
                        + h.extras.get("document_prior", 0.0), k)
    except KeyError:
        raise ConfigError("re-ranking by lambda needs hits with passage_score and document_score extras "
                          "(the output of PassageInDocuments)") from None


def rerank_with_prior(run: Run, beta: float, log_lengths: dict[str, float], k: int | None = None) -> Run:
    """Each ranking re-scored as its score + ``beta * log_lengths[doc_id]`` (the length prior of the default ``dhr``
    score, for hits scored without one), best first."""
    return rescored(run, lambda h: h.score + beta * log_lengths.get(h.doc_id or "", 0.0), k)


def rescored(run: Run, score: Callable[[Hit], float], k: int | None) -> Run:
    """Each ranking with every hit's score replaced by ``score(hit)``, best first (ties: by id), cut to ``k``."""
    reranked = Run()
    for qid, hits in run.items():
        ranking = sorted((h.with_score(score(h)) for h in hits), key=lambda h: (-h.score, h.id))
        reranked[qid] = ranking[:k] if k is not None else ranking
    return reranked


def grid(start: float, stop: float, step: float) -> list[float]:
    """``start, start+step, ..., stop`` (inclusive, rounded to avoid float drift)."""
    count = int(round((stop - start) / step))
    return [round(start + i * step, 6) for i in range(count + 1)]


@dataclass
class LambdaSearch:
    """The chosen lambda and every value tried with its metric."""

    best: float
    best_value: float
    coarse: dict[float, float]
    fine: dict[float, float]


def pick(values: dict[float, float], preferred: float = PREFERRED) -> float:
    """The value with the highest metric (ties: closest to ``preferred``, then the smaller)."""
    top = max(values.values())
    return min((lam for lam, v in values.items() if np.isclose(v, top)), key=lambda lam: (abs(lam - preferred), lam))


def search_lambda(metric: Callable[[float], float], coarse: tuple[float, float, float] = COARSE,
                  fine_step: float = FINE_STEP, fine_radius: float = FINE_RADIUS,
                  preferred: float = PREFERRED) -> LambdaSearch:
    """Two-level grid search maximising ``metric(lambda)``; the fine grid stays inside the coarse range; ties go to
    the value closest to ``preferred``."""
    start, stop, step = coarse
    if step <= 0 or stop < start or fine_step <= 0:
        raise ConfigError("lambda grid: need start <= stop and positive steps")
    coarse_values = {lam: metric(lam) for lam in grid(start, stop, step)}
    centre = pick(coarse_values, preferred)
    low, high = max(start, centre - fine_radius), min(stop, centre + fine_radius)
    fine_values = {lam: coarse_values[lam] if lam in coarse_values else metric(lam)
                   for lam in grid(low, high, fine_step)}
    best = pick(fine_values, preferred)
    return LambdaSearch(best, fine_values[best], coarse_values, fine_values)
