"""The Encoder interface: texts in, L2-normalised float32 vectors out, with query and passage sides."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sleuth.models.passage_memo import DEFAULT_MEMO_BYTES, PassageMemo


class Encoder(ABC):
    """A bi-encoder. Backends implement :meth:`_encode`; prefixes let asymmetric models (e5, bge) mark sides.

    The last query batch is remembered per thread, so stages that share one encoder (DHR's document and passage
    stages with a shared model) encode a batch of queries once, and concurrent searches never see each other's.
    After :meth:`remember_passages` (a workspace's encoders), passage vectors are remembered by text too.
    """

    name: str = "encoder"
    backend: str = "?"
    dim: int = 0
    max_length: int | None = None  # tokens read per text (longer texts are truncated); None: the model's own limit

    def __init__(self, query_prefix: str = "", passage_prefix: str = "", batch_size: int = 32, normalize: bool = True):
        self.query_prefix, self.passage_prefix = query_prefix, passage_prefix
        self.batch_size, self.normalize = batch_size, normalize
        self._local = threading.local()  # .last: (key, vectors) of this thread's last query batch
        self.passage_memo: PassageMemo | None = None

    @abstractmethod
    def _encode(self, texts: list[str], show_progress: bool) -> np.ndarray:
        """Raw embeddings of ``texts`` (float32, shape (n, dim))."""

    def encode(self, texts: Sequence[str], side: str = "passage", show_progress: bool = False) -> np.ndarray:
        """Encode texts as queries (``side="query"``) or passages; vectors are unit length unless normalize=False."""
        prefix = self.query_prefix if side == "query" else self.passage_prefix
        texts = [prefix + t for t in texts] if prefix else list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if side != "query":
            if self.passage_memo is not None:
                return self.passage_memo.encode(texts, lambda fresh: self._vectors(fresh, show_progress))
            return self._vectors(texts, show_progress)
        key = (side, tuple(texts))
        last = getattr(self._local, "last", None)
        if last is not None and last[0] == key:
            return last[1].copy()  # the same batch again (e.g. two stages sharing one encoder)
        vectors = self._vectors(texts, show_progress)
        self._local.last = (key, vectors.copy())
        return vectors

    def _vectors(self, texts: list[str], show_progress: bool) -> np.ndarray:
        """Encoded ``texts`` (prefixes already added) as contiguous float32, unit length if the encoder normalises."""
        vectors = np.ascontiguousarray(self._encode(texts, show_progress), dtype=np.float32)
        if self.normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors /= np.maximum(norms, 1e-12)
        return vectors

    def remember_passages(self, max_bytes: int = DEFAULT_MEMO_BYTES) -> None:
        """Remember passage vectors by text from now on (up to ``max_bytes``; 0 forgets and stops): an encoder
        loaded once for several indexes over one corpus encodes each passage once. Only for an encoder whose
        weights no longer change."""
        self.passage_memo = PassageMemo(max_bytes) if max_bytes > 0 else None

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts, side="query")

    def encode_passages(self, texts: Sequence[str], show_progress: bool = False) -> np.ndarray:
        return self.encode(texts, side="passage", show_progress=show_progress)

    def spec(self) -> dict[str, Any]:
        """What an index manifest records so the same encoder can be loaded again."""
        spec = {"name": self.name, "backend": self.backend, "dim": self.dim, "normalize": self.normalize,
                "query_prefix": self.query_prefix, "passage_prefix": self.passage_prefix}
        if self.max_length is not None:
            spec["max_length"] = self.max_length
        return spec


def length_sorted_batches(texts: Sequence[Any], batch_size: int, length: Callable[[Any], int] = len) -> list[list[int]]:
    """Index batches of texts sorted by ``length``, longest first (less padding), to be scattered back in input
    order."""
    order = sorted(range(len(texts)), key=lambda i: -length(texts[i]))
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
