"""A word-embedding table: words, their vectors (possibly memory-mapped), vocabulary restriction and exact
nearest-word search through FAISS.

The DP mechanisms of Faggioli & Ferro (ECIR 2024) move a word's vector by random noise and publish the vocabulary word nearest
(Euclidean) to the noisy point; :meth:`WordEmbeddings.nearest` answers that for a whole batch at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from sleuth.errors import ConfigError, InputError


class WordEmbeddings:
    """Rows of ``vectors`` are the embeddings of ``words`` (same order). Vectors may be a read-only memmap.

    ``source`` says where the table came from (shown in reports and manifests).
    """

    def __init__(self, words: Sequence[str], vectors: np.ndarray, source: str = ""):
        if vectors.ndim != 2 or len(words) != vectors.shape[0]:
            raise InputError(f"{len(words)} words for a vector table of shape {vectors.shape}", path=source or None)
        if len(words) == 0:
            raise ConfigError(f"empty word-embedding table {source}".rstrip())
        self.words = list(words)
        self.vectors = vectors
        self.source = source
        self._row: dict[str, int] | None = None
        self._index = None
        #: values derived from the vectors and computed once per table (e.g. the Mahalanobis Sigma_loc)
        self.derived: dict = {}

    # --- lookup ------------------------------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Dimensions of the vectors (m in the paper)."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word in self.rows_by_word

    @property
    def rows_by_word(self) -> dict[str, int]:
        """word -> row (the first row when a table repeats a word)."""
        if self._row is None:
            row: dict[str, int] = {}
            for i, word in enumerate(self.words):
                row.setdefault(word, i)
            self._row = row
        return self._row

    def row(self, word: str) -> int | None:
        """The row of ``word``, or None when it is out of vocabulary."""
        return self.rows_by_word.get(word)

    def matrix(self) -> np.ndarray:
        """All vectors as one in-memory C-contiguous float32 array (reads a memmap once)."""
        if not (isinstance(self.vectors, np.ndarray) and not isinstance(self.vectors, np.memmap)
                and self.vectors.dtype == np.float32 and self.vectors.flags.c_contiguous):
            self.vectors = np.ascontiguousarray(self.vectors, dtype=np.float32)
        return self.vectors

    # --- vocabulary restriction ----------------------------------------------------------------------------------
    def restrict(self, alphabetic: bool = True, vocabulary: Iterable[str] | None = None,
                 lowercase_vocabulary: bool = True) -> WordEmbeddings:
        """A table holding only the words kept: alphabetic ones (``str.isalpha``, the paper's filter) and, when a
        ``vocabulary`` is given (e.g. the words of a collection), only those. Selected rows are copied into memory."""
        allowed = None
        if vocabulary is not None:
            allowed = {w.lower() if lowercase_vocabulary else w for w in vocabulary}
        seen: set[str] = set()
        keep = []
        for i, word in enumerate(self.words):
            if word in seen or (alphabetic and not word.isalpha()) or (allowed is not None and word not in allowed):
                continue
            seen.add(word)
            keep.append(i)
        if not keep:
            raise ConfigError(f"no word of {self.source or 'the table'} is left after restricting the vocabulary")
        rows = np.asarray(keep, dtype=np.int64)
        vectors = np.ascontiguousarray(self.vectors[rows], dtype=np.float32)
        what = "alphabetic" if alphabetic else "all"
        if vocabulary is not None:
            what += f", within a vocabulary of {len(allowed or ())}"
        return WordEmbeddings([self.words[i] for i in keep], vectors, f"{self.source} [{what}]")

    # --- nearest words -------------------------------------------------------------------------------------------
    def faiss_index(self):
        """The exact L2 FAISS index over the vectors (built once)."""
        if self._index is None:
            import faiss

            index = faiss.IndexFlatL2(self.dim)
            index.add(self.matrix())
            self._index = index
        return self._index

    def nearest(self, points: np.ndarray, k: int = 1, batch_size: int = 16384) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``k`` nearest words of every point: (Euclidean distances, rows), both of shape (n, k), nearest first."""
        points = np.ascontiguousarray(points, dtype=np.float32)
        if points.ndim != 2 or points.shape[1] != self.dim:
            raise ConfigError(f"points of shape {points.shape} for a {self.dim}-d word table")
        index = self.faiss_index()
        distances = np.empty((len(points), k), dtype=np.float32)
        rows = np.empty((len(points), k), dtype=np.int64)
        for start in range(0, len(points), batch_size):
            d2, found = index.search(points[start:start + batch_size], k)
            distances[start:start + batch_size] = np.sqrt(np.maximum(d2, 0.0))
            rows[start:start + batch_size] = found
        return distances, rows

    def __repr__(self) -> str:
        return f"WordEmbeddings({len(self)} words x {self.dim}, {self.source!r})"
