"""A dense index of passages encoded by the Chain-of-Skills multi-expert encoder on the context side of one skill.

Retrieval and expanded retrieval share the context expert (passages: "title text"); entity linking searches an
index of entity descriptions (title + first paragraph, i.e. the passage as stored) encoded with the linking skill's
context expert. Held in memory (FAISS + DocStore from ``sleuth.index.dense`` / ``docstore``).
"""

from __future__ import annotations

from typing import Iterable

import faiss
import numpy as np

from sleuth.corpus.model import Passage
from sleuth.index.bm25 import check_unique
from sleuth.index.dense import add_vectors, make_faiss_index
from sleuth.index.docstore import DocStore


class SkillIndex:
    """FAISS inner-product vectors of a DocStore's passages, encoded for ``skill`` on the context side."""

    def __init__(self, index: faiss.Index, docstore: DocStore, skill: str):
        self.index, self.docstore, self.skill = index, docstore, skill

    @classmethod
    def build(cls, passages: Iterable[Passage], model, skill: str = "retrieval", factory: str = "Flat",
              batch_size: int = 32) -> "SkillIndex":
        """Encode ``passages`` with ``model.encode(..., skill, side="context")`` and index them."""
        docstore = DocStore.from_passages(passages)
        check_unique(docstore.ids)
        vectors = model.encode(docstore.contents(), skill, side="context", batch_size=batch_size)
        index = make_faiss_index(factory, model.dim)
        if len(docstore):
            add_vectors(index, np.ascontiguousarray(vectors, dtype=np.float32))
        return cls(index, docstore, skill)

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and inner-product scores per query vector (rows of -1 mark missing results)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if len(self) == 0 or k < 1:
            empty = np.zeros((len(vectors), 0))
            return empty.astype(np.int64), empty.astype(np.float32)
        scores, positions = self.index.search(vectors, min(k, len(self)))
        return positions, scores
