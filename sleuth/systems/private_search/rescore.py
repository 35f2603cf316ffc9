"""Local reranking for private search: score candidates with the ORIGINAL query using a local bi-encoder on the
texts the remote engine returned (no copy of the remote corpus needed)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from sleuth.corpus.model import Query
from sleuth.models.encoder import Encoder
from sleuth.stages.base import Stage
from sleuth.stages.hits import rescored
from sleuth.stages.run import Run


class TextRescore(Stage):
    """Dense rescoring of candidates from their title and text: score = <query vector, text vector>.

    Text vectors are cached by hit id (at most ``cache_size``), so candidates found again cost nothing.
    """

    def __init__(self, encoder: Encoder, name: str = "rescore", cache_size: int = 100_000):
        self.encoder, self.name, self.cache_size = encoder, name, cache_size
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        candidates = candidates or Run()
        vectors = self.encoder.encode_queries([q.text for q in queries])
        run = Run()
        for query, vector in zip(queries, vectors):
            hits = candidates.get(query.id, [])
            with self._lock:  # concurrent searches share the cache: read and write it whole, score from a copy
                known = {h.id: self._cache[h.id] for h in hits if h.id in self._cache}
            missing = list({h.id: h for h in hits if h.id not in known}.values())
            if missing:
                texts = [" ".join(p for p in (h.title, h.text) if p) or h.id for h in missing]
                made = dict(zip((h.id for h in missing), self.encoder.encode_passages(texts)))
                known.update(made)
                with self._lock:
                    if len(self._cache) + len(made) > self.cache_size:
                        self._cache.clear()
                    self._cache.update(made)
            scores = [float(known[h.id] @ vector) for h in hits]
            run[query.id] = rescored(hits, scores, self.name)
        return run
