"""Document scores from passage scores, and ways of combining document and passage scores."""

from __future__ import annotations

import numpy as np

AGGREGATES = ("mean", "max")


def document_scores_from_passages(passage_scores: np.ndarray, offsets: np.ndarray, how: str = "mean") -> np.ndarray:
    """Per-document aggregate (mean or max) of passage scores, shape (queries, documents); documents must be
    non-empty. The mean of inner products is the inner product with the (unnormalised) mean passage vector."""
    starts = np.asarray(offsets[:-1], dtype=np.int64)
    if how == "mean":
        return np.add.reduceat(passage_scores, starts, axis=1) / np.diff(offsets).astype(np.float32)
    if how == "max":
        return np.maximum.reduceat(passage_scores, starts, axis=1)
    raise ValueError(f"unknown aggregate '{how}' (known: {', '.join(AGGREGATES)})")
