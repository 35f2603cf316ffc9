"""Retrieval stages over one index: BM25 and dense (each also rescores given candidates)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex
from sleuth.index.sharded import ShardedBM25Index, ShardedDenseIndex
from sleuth.models.encoder import Encoder
from sleuth.models.registry import encoder_from_spec
from sleuth.stages.base import Stage
from sleuth.stages.hits import candidate_rows, hits_from_rows, rescored
from sleuth.stages.run import Run


class OneIndexStage(Stage):
    """A stage over one index loaded from ``folder`` (None: not known), which it reads alone."""

    folder: Path | None = None

    def index_folders(self) -> set[Path] | None:
        return {self.folder} if self.folder is not None else None


class BM25Retrieve(OneIndexStage):
    """Top-k BM25 over a BM25Index; when given candidates, scores only those (documents with no match omitted).
    ``folder`` is the index folder it was loaded from (None: not known), which a service reloads it for."""

    hits_bound, config_stage = "retrieve", "bm25"

    def __init__(self, index: BM25Index | ShardedBM25Index, k: int = 1000, name: str = "bm25",
                 folder: str | Path | None = None):
        self.index, self.k, self.name = index, k, name
        self.folder = Path(folder) if folder is not None else None

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is not None:
            run = Run()
            for query in queries:
                hits, rows = candidate_rows(self.index.docstore, candidates.get(query.id, []))
                run[query.id] = rescored(hits, self.index.score(query.text, rows), self.name)
            return run
        positions, scores = self.index.search([q.text for q in queries], k=self.k)
        return Run({q.id: hits_from_rows(self.index.docstore, p, s, drop_zero=True)
                    for q, p, s in zip(queries, positions, scores)})


class DenseRetrieve(OneIndexStage):
    """Top-k inner-product search with the index's own encoder (or a given one of the same dimension); ``folder``
    as :class:`BM25Retrieve`'s."""

    hits_bound, config_stage = "retrieve", "dense"

    def __init__(self, index: DenseIndex | ShardedDenseIndex, encoder: Encoder | None = None, k: int = 1000,
                 name: str = "dense", device: str = "cpu", folder: str | Path | None = None):
        self.index, self.k, self.name = index, k, name
        self.folder = Path(folder) if folder is not None else None
        self.encoder = encoder or encoder_from_spec(index.encoder_spec, device=device)
        if self.encoder.dim != index.dim:
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
