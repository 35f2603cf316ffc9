"""Config builders of the core stages: bm25, dense, fuse, cutoff."""

from __future__ import annotations

from typing import Any

from sleuth.index.bm25 import BM25Params
from sleuth.index.dense import VectorSearch
from sleuth.index.tokenize import Analyzer
from sleuth.pipelines.registry import register_stage
from sleuth.pipelines.workspace import Workspace
from sleuth.stages.base import Cutoff
from sleuth.stages.fusion import Fuse
from sleuth.stages.retrieve import BM25Retrieve, DenseRetrieve


@register_stage("bm25")
def bm25_stage(ws: Workspace, *, k: int = 1000, index: str | None = None, method: str = "lucene", k1: float = 0.9,
               b: float = 0.4, stopwords: Any = "en", stemmer: str | None = "english", name: str = "bm25") -> BM25Retrieve:
    """BM25 over ``index`` (a path, sharded or not) or over the workspace corpus, built with these parameters."""
    if index is not None:
        from sleuth.index.sharded import load_bm25

        return BM25Retrieve(load_bm25(index), k=k, name=name)
    built = ws.bm25(BM25Params(method=method, k1=k1, b=b), Analyzer(stopwords=stopwords, stemmer=stemmer))
    return BM25Retrieve(built, k=k, name=name)


@register_stage("dense")
def dense_stage(ws: Workspace, *, k: int = 1000, index: str | None = None, encoder: str = "minilm",
                search: VectorSearch = VectorSearch(), name: str = "dense") -> DenseRetrieve:
    """Dense retrieval over ``index`` (a path, sharded or not) or over the workspace corpus encoded with ``encoder``."""
    from sleuth.index.sharded import load_dense, set_search_params

    if index is not None:
        loaded = load_dense(index)
        stage = DenseRetrieve(loaded, k=k, name=name, device=ws.device)
    else:
        loaded = ws.dense(encoder, search.factory)
        stage = DenseRetrieve(loaded, encoder=ws.encoder(encoder), k=k, name=name)
    set_search_params(loaded, search)
    return stage


@register_stage("fuse")
def fuse_stage(ws: Workspace, *, branches: list, method: str = "rrf", weights: list[float] | None = None,
               normalise: str = "minmax", rrf_k: int = 60, depth: int = 1000, name: str | None = None) -> Fuse:
    """Fusion of branch pipelines (each a stage entry or a list of stage entries)."""
    from sleuth.pipelines.config import build_stages

    built = [build_stages(branch if isinstance(branch, list) else [branch], ws, where=f"fuse branch {i + 1}")
             for i, branch in enumerate(branches)]
    return Fuse(built, method=method, weights=weights, normalise=normalise, rrf_k=rrf_k, depth=depth, name=name)


@register_stage("cutoff")
def cutoff_stage(ws: Workspace, *, k: int) -> Cutoff:
    """Keep the top ``k`` candidates."""
    return Cutoff(k)
