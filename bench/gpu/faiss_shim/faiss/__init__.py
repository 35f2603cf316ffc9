"""A stand-in for FAISS's exact flat inner-product index, for the lent GPU machine only (bench/gpu/train_all.sh).

faiss-cpu (30 MB) does not fit the 64 MiB a device call carries beside the model and the data, and the jobs there
need only exact search over small corpora (a question's own paragraphs, DHR's mining index): ``index_factory(d,
"Flat", METRIC_INNER_PRODUCT)`` gives a numpy index with FAISS's methods; any other index type raises RuntimeError,
as FAISS does for a factory string it cannot build. Never on sys.path of sleuth itself or of the tests.
"""

from __future__ import annotations

import numpy as np

METRIC_INNER_PRODUCT = 0
IO_FLAG_MMAP = 1
IO_FLAG_READ_ONLY = 2
Index = object


class IndexFlatIP:
    """Exact inner-product search over the added vectors (float32)."""

    is_trained = True

    def __init__(self, d: int):
        self.d = d
        self.vectors = np.zeros((0, d), dtype=np.float32)

    @property
    def ntotal(self) -> int:
        return len(self.vectors)

    def train(self, x) -> None:
        pass

    def add(self, x) -> None:
        self.vectors = np.concatenate([self.vectors, np.asarray(x, dtype=np.float32).reshape(-1, self.d)])

    def reset(self) -> None:
        self.vectors = self.vectors[:0]

    def search(self, x, k: int):
        scores = np.asarray(x, dtype=np.float32) @ self.vectors.T
        n = len(self.vectors)
        if k < n:  # the k best (argpartition), then in order: score descending, ties by row
            part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            order = np.lexsort((part, -np.take_along_axis(scores, part, axis=1)), axis=1)
            top = np.take_along_axis(part, order, axis=1)
        else:
            top = np.argsort(-scores, axis=1, kind="stable")
        out_scores = np.full((len(scores), k), -np.inf, dtype=np.float32)
        out_rows = np.full((len(scores), k), -1, dtype=np.int64)
        out_rows[:, :min(k, n)] = top
        out_scores[:, :min(k, n)] = np.take_along_axis(scores, top, axis=1)
        return out_scores, out_rows

    def reconstruct_batch(self, rows):
        return self.vectors[np.asarray(rows, dtype=np.int64)]

    def reconstruct_n(self, start: int, count: int):
        return self.vectors[start:start + count]


def index_factory(d: int, factory: str, metric: int = METRIC_INNER_PRODUCT):
    if factory.strip() != "Flat" or metric != METRIC_INNER_PRODUCT:
        raise RuntimeError(f"the device's FAISS stand-in builds only 'Flat' inner-product indexes, not '{factory}'")
    return IndexFlatIP(d)


def downcast_index(index):
    return index


def extract_index_ivf(index):
    raise RuntimeError("not an IVF index")


def write_index(index, path: str) -> None:
    with open(path, "wb") as handle:
        np.save(handle, index.vectors)


def read_index(path: str, flags: int = 0):
    with open(path, "rb") as handle:
        vectors = np.load(handle)
    index = IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index
