"""Local reranking for private search: score candidates with the ORIGINAL query using a local bi-encoder on the
texts the remote engine returned (no copy of the remote corpus needed).

Encoding the pool is nearly all of a private search's time (a pool of 20 x 100 SciFact abstracts is ~1,500
passages), so :class:`TextRescore` can bound it: with ``depth``, a local BM25 over the pooled texts themselves, with
the original query (which still never leaves the machine), picks the ``depth`` candidates the encoder rescores; the
rest follow them in BM25 order. The encoder's ``max_length`` bounds the tokens read per passage.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from sleuth.corpus.model import Passage, Query
from sleuth.models.encoder import Encoder
from sleuth.stages.base import ReadsNoIndex, Stage
from sleuth.stages.hits import rescored
from sleuth.stages.run import Hit, Run

#: the client's defaults: the int8 ONNX MiniLM reading 128 tokens per passage (the length MiniLM was trained at),
#: over the 50 candidates that local BM25 ranks highest (measured in docs/privacy/README.md, "Latency")
DEFAULT_ENCODER = "minilm-onnx-128"
DEFAULT_DEPTH = 50


def hit_text(hit: Hit) -> str:
    """What the local encoder reads of a hit: its title and text (the id when the engine sent neither)."""
    return " ".join(p for p in (hit.title, hit.text) if p) or hit.id


def bm25_order(query: str, hits: Sequence[Hit]) -> list[int]:
    """Positions of ``hits``, best first, by BM25 of ``query`` over the hits' own texts (ties keep engine order)."""
    from sleuth.index.bm25 import BM25Index

    passages = [Passage(str(i), str(i), hit_text(h)) for i, h in enumerate(hits)]
    scores = BM25Index.build(passages, show_progress=False).score(query, range(len(passages)))
    return sorted(range(len(hits)), key=lambda i: -scores[i])


class TextRescore(ReadsNoIndex, Stage):
    """Dense rescoring of candidates from their title and text: score = <query vector, text vector>.

    With ``depth``, only the ``depth`` candidates that local BM25 with the query ranks highest are encoded and
    rescored; the others follow, in BM25 order, with scores below every rescored hit. Text vectors are cached by
    hit id (at most ``cache_size``), so candidates found again cost nothing.
    """

    hits_bound = "rescore"

    def __init__(self, encoder: Encoder, name: str = "rescore", cache_size: int = 100_000, depth: int | None = None):
        if depth is not None and depth < 1:
            from sleuth.errors import ConfigError

            raise ConfigError(f"rescore depth must be a positive integer, got {depth}")
        self.encoder, self.name, self.cache_size, self.depth = encoder, name, cache_size, depth
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def vectors(self, hits: Sequence[Hit]) -> np.ndarray:
        """The text vectors of ``hits``: cached ones reused, the others encoded in one batch. Concurrent searches
        share the cache: it is read and written whole under a lock, and scores come from a private copy."""
        with self._lock:
            known = {h.id: self._cache[h.id] for h in hits if h.id in self._cache}
        missing = list({h.id: h for h in hits if h.id not in known}.values())
        if missing:
            made = dict(zip((h.id for h in missing), self.encoder.encode_passages([hit_text(h) for h in missing])))
            known.update(made)
            with self._lock:
                if len(self._cache) + len(made) > self.cache_size:
                    self._cache.clear()
                self._cache.update(made)
        return np.stack([known[h.id] for h in hits]) if hits else np.zeros((0, self.encoder.dim), np.float32)

    def rescore(self, query: Query, vector: np.ndarray, hits: Sequence[Hit]) -> list[Hit]:
        """One query's candidates rescored (the top ``depth`` by local BM25 when a depth is set)."""
        hits = list(hits)
        tail: list[Hit] = []
        if self.depth is not None and len(hits) > self.depth:
            order = bm25_order(query.text, hits)
            hits, tail = [hits[i] for i in order[:self.depth]], [hits[i] for i in order[self.depth:]]
        head = rescored(hits, self.vectors(hits) @ vector if hits else [], self.name)
        if not tail:
            return head
        floor = min(h.score for h in head) - 1.0
        return head + rescored(tail, [floor - i / len(tail) for i in range(len(tail))], self.name)

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        candidates = candidates or Run()
        vectors = self.encoder.encode_queries([q.text for q in queries])
        return Run({query.id: self.rescore(query, vector, candidates.get(query.id, []))
                    for query, vector in zip(queries, vectors)})


def local_reranker(encoder: str = DEFAULT_ENCODER, depth: int | None = DEFAULT_DEPTH,
                   max_length: int | None = None, device: str = "cpu") -> TextRescore:
    """The private-search client's local reranker: ``encoder`` (reading at most ``max_length`` tokens per passage
    when given) over the top ``depth`` candidates by local BM25 (None: all of them)."""
    from sleuth.models.registry import load_encoder

    options = {"max_length": max_length} if max_length else {}
    return TextRescore(load_encoder(encoder, device=device, **options), depth=depth)
