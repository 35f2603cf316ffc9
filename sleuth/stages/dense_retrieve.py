"""Dense retrieval stage (or dense rescoring of given candidates)."""

from __future__ import annotations

from typing import Sequence

from sleuth.corpus.model import Query
from sleuth.index.dense import DenseIndex
from sleuth.models.encoder import Encoder
from sleuth.models.registry import encoder_from_spec
from sleuth.stages.base import Stage
from sleuth.stages.hits import candidate_rows, hits_from_rows, rescored
from sleuth.stages.run import Run


class DenseRetrieve(Stage):
    """Top-k inner-product search with the index's own encoder (or a given one of the same dimension)."""

    def __init__(self, index: DenseIndex, encoder: Encoder | None = None, k: int = 1000, name: str = "dense",
                 device: str = "cpu"):
        self.index, self.k, self.name = index, k, name
        self.encoder = encoder or encoder_from_spec(index.encoder_spec, device=device)
        if self.encoder.dim != index.dim:
            from sleuth.errors import ConfigError

            raise ConfigError(f"dense: encoder '{self.encoder.name}' gives {self.encoder.dim}-d vectors, "
                              f"the index holds {index.dim}-d vectors")

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        vectors = self.encoder.encode_queries([q.text for q in queries])
        if candidates is not None:
            run = Run()
            for query, vector in zip(queries, vectors):
                hits, rows = candidate_rows(self.index.docstore, candidates.get(query.id, []))
                scores = self.index.vectors(rows) @ vector if rows else []
                run[query.id] = rescored(hits, scores, self.name)
            return run
        positions, scores = self.index.search(vectors, k=self.k)
        return Run({q.id: hits_from_rows(self.index.docstore, p, s) for q, p, s in zip(queries, positions, scores)})
