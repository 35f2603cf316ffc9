"""Passage vectors remembered in memory by content, so one loaded encoder encodes a passage once.

A workspace building several indexes over one corpus with one encoder (``dense`` and DHR's passages, which read the
same "title text"; a reranker seeing the same documents again) takes the vectors it already computed instead of
encoding them again. The memo holds at most ``max_bytes`` of vectors; past that, new vectors are encoded and not
kept. Keys are the SHA-1 of the text as the encoder reads it (prefix included).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence

import numpy as np

#: the default memory of a workspace encoder's memo: ~350,000 vectors of 384 float32
DEFAULT_MEMO_BYTES = 512 << 20


def content_key(text: str) -> bytes:
    """The 20-byte key of a text (SHA-1 of its UTF-8 bytes)."""
    return hashlib.sha1(text.encode("utf-8")).digest()


class PassageMemo:
    """Vectors by content key, bounded by ``max_bytes``; safe to share between threads."""

    def __init__(self, max_bytes: int = DEFAULT_MEMO_BYTES):
        self.max_bytes, self.used = max_bytes, 0
        self.vectors: dict[bytes, np.ndarray] = {}
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.vectors)

    def encode(self, texts: Sequence[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Vectors of ``texts``: remembered ones taken, the others (each distinct text once) from ``encode``."""
        keys = [content_key(text) for text in texts]
        with self.lock:
            known = {key: self.vectors[key] for key in set(keys) if key in self.vectors}
        missing = {key: text for key, text in zip(keys, texts) if key not in known}
        if missing:
            fresh = encode(list(missing.values()))
            self.remember(dict(zip(missing, fresh)))
            if len(missing) == len(keys):  # a first build: every text new and distinct, the encoded array as it is
                return fresh
            known.update(zip(missing, fresh))
        return np.stack([known[key] for key in keys]).astype(np.float32, copy=False)

    def remember(self, vectors: dict[bytes, np.ndarray]) -> None:
        """Keep ``vectors`` (copies) while the memo has room."""
        with self.lock:
            for key, vector in vectors.items():
                if self.used + vector.nbytes > self.max_bytes:
                    return
                if key not in self.vectors:
                    self.vectors[key] = vector.copy()
                    self.used += vector.nbytes
