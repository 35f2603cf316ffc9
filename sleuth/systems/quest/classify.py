"""Relevance classification of candidates: a cross-encoder's probability per (query, candidate); with a threshold
the candidates above it are the predicted set (Malaviya et al., ACL 2023: retrieve top 100, classify, keep those above t).

With ``retriever_weight`` w the score is ``(1 - w) * probability + w * retriever score`` (the retriever's scores
min-max scaled over the query's candidates): the classifier and the retriever vote together (beyond the paper;
measured in docs/quest)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, InputError
from sleuth.models.cross_encoder import CrossEncoderClassifier, pair_text, sigmoid
from sleuth.stages.base import ReadsNoIndex, Stage
from sleuth.stages.hits import rescored
from sleuth.stages.run import Hit, Run
from sleuth.systems.quest.cut import CutsToSet, SetCut, as_cut


class Classify(ReadsNoIndex, Stage, CutsToSet):
    """Scores candidates with :class:`CrossEncoderClassifier`; ``hit.score`` becomes the relevance probability
    (the input score kept in ``extras["classify_input_score"]``). With ``threshold`` (a number, or a
    :class:`~sleuth.systems.quest.cut.SetCut` with a score-gap rule) only the set's members remain; with None every
    candidate remains, ranked by probability (for threshold tuning).

    Logits are cached per (query text, candidate id), so pipelines that share candidates or constraints
    (BM25 and dense pools, set-operation constraints) classify each pair once.
    """

    hits_bound, config_stage = "rescore", "classify"

    def __init__(self, classifier: CrossEncoderClassifier, threshold: float | SetCut | None = None,
                 name: str = "classify", show_progress: bool = False, retriever_weight: float = 0.0):
        if not 0.0 <= retriever_weight <= 1.0:
            raise ConfigError(f"classify: retriever_weight must be in [0, 1], got {retriever_weight}")
        self.retriever_weight = retriever_weight
        try:
            self.cut = None if threshold is None else as_cut(threshold)
        except ConfigError as exc:
            raise ConfigError(f"classify: {exc}") from None
        self.classifier, self.name, self.show_progress = classifier, name, show_progress
        self.cache: dict[tuple[str, str], float] = {}

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is None:
            raise ConfigError("classify: needs candidates from a retriever before it (e.g. bm25 >> classify)")
        self.fill_cache(queries, candidates)
        run = Run()
        for query in queries:
            hits = candidates.get(query.id, [])
            logits = np.array([self.cache[(query.text, h.id)] for h in hits], dtype=np.float64)
            inputs = np.array([h.score for h in hits], dtype=np.float64)
            scored = rescored(hits, fused(sigmoid(logits), inputs, self.retriever_weight), self.name)
            run[query.id] = scored if self.cut is None else self.cut.members(scored)
        return run

    def fill_cache(self, queries: Sequence[Query], candidates: Run) -> None:
        """Classify every (query, candidate) pair not yet cached, in one batched pass."""
        todo: dict[tuple[str, str], str] = {}
        for query in queries:
            for hit in candidates.get(query.id, []):
                key = (query.text, hit.id)
                if key not in self.cache and key not in todo:
                    todo[key] = pair_text(query.text, hit.title, candidate_text(hit))
        if todo:
            logits = self.classifier.logits(list(todo.values()), show_progress=self.show_progress)
            self.cache.update(zip(todo, logits.tolist()))


def fused(probabilities: np.ndarray, retriever_scores: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - weight) * probabilities + weight * retriever_scores`` min-max scaled to [0, 1] (all equal: 0)."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    if not weight or probabilities.size == 0:
        return probabilities
    scores = np.asarray(retriever_scores, dtype=np.float64)
    low, high = float(scores.min()), float(scores.max())
    scaled = (scores - low) / (high - low) if high > low else np.zeros_like(scores)
    return (1.0 - weight) * probabilities + weight * scaled


def candidate_text(hit: Hit) -> str:
    """A candidate's text; the classifier reads documents, so a hit without text is an input error."""
    if hit.text is None:
        raise InputError(f"candidate '{hit.id}' carries no text for the classifier")
    return hit.text
