"""BM25 retrieval stage (or BM25 rescoring of given candidates)."""

from __future__ import annotations

from typing import Sequence

from sleuth.corpus.model import Query
from sleuth.index.bm25 import BM25Index
from sleuth.stages.base import Stage
from sleuth.stages.hits import candidate_rows, hits_from_rows, rescored
from sleuth.stages.run import Run


class BM25Retrieve(Stage):
    """Top-k BM25 over a BM25Index; when given candidates, scores only those (documents with no match omitted)."""

    def __init__(self, index: BM25Index, k: int = 1000, name: str = "bm25"):
        self.index, self.k, self.name = index, k, name

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
