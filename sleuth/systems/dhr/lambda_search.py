"""Tuning DHR's lambda (paper section 5.3): grid search over [0, 2] in steps of 0.1, then steps of 0.01 within
+-0.05 of the best coarse value, maximising a dev-set metric (the paper: Top-20 accuracy). The same two-level search
picks the length prior of the default ``dhr`` score (grid PRIOR_COARSE), once for each gate of a grid
(:func:`search_prior`: the prior for the queries whose best passage score is below the gate).

The stage-1 documents and stage-2 passage scores do not depend on lambda, so a run scored once with every candidate
passage (carrying ``passage_score`` and ``document_score`` extras) is re-ranked for each lambda without new searches;
the prior search re-ranks arrays of the candidates (:class:`PriorCandidates`) in the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from sleuth.errors import ConfigError
from sleuth.stages.run import Hit, Run, rank_hits
from sleuth.systems.dhr.index import prior_applies

COARSE = (0.0, 2.0, 0.1)  # range and step of the first grid
FINE_STEP, FINE_RADIUS = 0.01, 0.05  # second grid: this step within this distance of the best coarse value
PREFERRED = 1.0  # among equally good lambdas, the one closest to the recipe's value wins
PRIOR_COARSE = (0.0, 0.1, 0.005)  # length prior: range and step of the first grid (then 0.001 steps within 0.005)
GATE_QUANTILES = tuple(round(0.05 * i, 2) for i in range(1, 20))  # gates: these quantiles of the best passage scores


def rerank_with_lambda(run: Run, lam: float, k: int | None = None) -> Run:
    """Each ranking re-scored as ``passage_score + lam * document_score`` (+ ``document_prior`` where a hit has one:
    the length prior does not depend on lambda), from the hits' extras, best first."""
    try:
        return rescored(run, lambda h: h.extras["passage_score"] + lam * h.extras["document_score"]
                        + h.extras.get("document_prior", 0.0), k)
    except KeyError:
        raise ConfigError("re-ranking by lambda needs hits with passage_score and document_score extras "
                          "(the output of PassageInDocuments)") from None


def rescored(run: Run, score: Callable[[Hit], float], k: int | None) -> Run:
    """Each ranking with every hit's score replaced by ``score(hit)``, best first (ties: by id), cut to ``k``."""
    reranked = Run()
    for qid, hits in run.items():
        ranking = rank_hits(h.with_score(score(h)) for h in hits)
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


@dataclass
class PriorCandidates:
    """Each question's candidate passages for the length-prior search, as arrays (questions x candidates, by id within
    a question, padded with -inf scores): the score without a prior, ``log`` of the passage's document length, whether
    it holds an answer; and each question's best passage score, which the gate reads."""

    scores: np.ndarray
    log_lengths: np.ndarray
    answered: np.ndarray
    best: np.ndarray

    @classmethod
    def from_run(cls, run: Run, log_lengths: dict[str, float], answered: Callable[[str, Hit], bool],
                 questions: list[str]) -> PriorCandidates:
        """From a run scored without a prior whose hits carry ``passage_score``; ``log_lengths`` by document id,
        ``answered(qid, hit)`` whether a hit holds an answer to that question."""
        width = max((len(run.get(q, [])) for q in questions), default=0)
        scores = np.full((len(questions), width), -np.inf, dtype=np.float32)
        logs = np.zeros((len(questions), width), dtype=np.float32)
        answers = np.zeros((len(questions), width), dtype=bool)
        best = np.full(len(questions), -np.inf, dtype=np.float32)
        for i, qid in enumerate(questions):
            for j, hit in enumerate(sorted(run.get(qid, []), key=lambda h: h.id)):
                scores[i, j], logs[i, j] = hit.score, log_lengths.get(hit.doc_id or "", 0.0)
                answers[i, j] = answered(qid, hit)
                best[i] = max(best[i], hit.extras["passage_score"])
        return cls(scores, logs, answers, best)

    def accuracy(self, beta: float, below: float | None, k: int) -> float:
        """Top-``k`` answer accuracy with the prior ``beta * log n`` added for the questions whose best passage
        score is below ``below`` (every question when None); ties: by passage id."""
        final = self.scores + np.float32(beta) * prior_applies(self.best, below)[:, None] * self.log_lengths
        top = np.argsort(-final, axis=1, kind="stable")[:, :k]
        return float(np.take_along_axis(self.answered, top, axis=1).any(axis=1).mean()) if len(final) else 0.0

    def gate_grid(self) -> list[float | None]:
        """The gates tried: GATE_QUANTILES of the questions' best passage scores (on the encoder's own scale),
        then None (no gate: the prior for every question)."""
        finite = self.best[np.isfinite(self.best)]
        values = sorted({round(float(v), 3) for v in np.quantile(finite, GATE_QUANTILES)}) if finite.size else []
        return [*values, None]


@dataclass
class PriorSearch:
    """The chosen length prior and gate, and per gate the best prior found with its metric."""

    best: float
    below: float | None
    best_value: float
    search: LambdaSearch
    gates: dict[float | None, tuple[float, float]]


def search_prior(candidates: PriorCandidates, k: int) -> PriorSearch:
    """For every gate of :meth:`PriorCandidates.gate_grid`, the two-level search of the prior (ties: the smaller
    prior); the best gate wins (ties: the lower gate, so the prior reaches fewer questions; none when the chosen
    prior is 0)."""
    searches = {gate: search_lambda(partial(candidates.accuracy, below=gate, k=k), PRIOR_COARSE, fine_step=0.001,
                                    fine_radius=0.005, preferred=0.0)
                for gate in candidates.gate_grid()}
    top = max(search.best_value for search in searches.values())
    gate = next(gate for gate, search in searches.items() if np.isclose(search.best_value, top))
    chosen = searches[gate]
    return PriorSearch(chosen.best, gate if chosen.best else None, chosen.best_value, chosen,  # prior 0: no gate
                       {gate: (search.best, search.best_value) for gate, search in searches.items()})
