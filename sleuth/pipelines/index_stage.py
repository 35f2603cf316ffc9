"""A retrieval stage straight over an index folder (``sleuth search --index``, ``sleuth serve --index``)."""

from __future__ import annotations

from pathlib import Path

from sleuth.stages.base import Stage


def stage_for_index(path: Path, k: int, device: str) -> Stage:
    """A retrieval stage for an index folder, chosen by the kind its manifest records."""
    from sleuth.index.sharded import SHARDED_BM25, index_kind, load_bm25, load_dense

    if index_kind(path) in ("bm25", SHARDED_BM25):
        from sleuth.stages.retrieve import BM25Retrieve

        return BM25Retrieve(load_bm25(path), k=k)
    from sleuth.stages.retrieve import DenseRetrieve

    return DenseRetrieve(load_dense(path), k=k, device=device)
