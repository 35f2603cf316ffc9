"""Relevance classification of candidates: a cross-encoder's probability per (query, candidate); with a threshold
the candidates above it are the predicted set (QUEST, paper 003: retrieve top 100, classify, keep those above t)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, InputError
from sleuth.models.cross_encoder import CrossEncoderClassifier, pair_text, sigmoid
from sleuth.stages.base import Stage
from sleuth.stages.hits import rescored
from sleuth.stages.run import Hit, Run
from sleuth.systems.quest.cut import SetCut


class Classify(Stage):
    """Scores candidates with :class:`CrossEncoderClassifier`; ``hit.score`` becomes the relevance probability
    (the input score kept in ``extras["classify_input_score"]``). With ``threshold`` (a number, or a
    :class:`~sleuth.systems.quest.cut.SetCut` with a score-gap rule) only the set's members remain; with None every
    candidate remains, ranked by probability (for threshold tuning).

    Logits are cached per (query text, candidate id), so pipelines that share candidates or constraints
    (BM25 and dense pools, set-operation constraints) classify each pair once.
    """

    def __init__(self, classifier: CrossEncoderClassifier, threshold: float | SetCut | None = None,
                 name: str = "classify", show_progress: bool = False):
        try:
            self.cut = threshold if threshold is None or isinstance(threshold, SetCut) else SetCut(float(threshold))
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
            scored = rescored(hits, sigmoid(logits), self.name)
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


def candidate_text(hit: Hit) -> str:
    """A candidate's text; the classifier reads documents, so a hit without text is an input error."""
    if hit.text is None:
        raise InputError(f"candidate '{hit.id}' carries no text for the classifier")
    return hit.text
