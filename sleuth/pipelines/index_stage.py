"""BM25 and dense retrieval stages, built in this one place: over a workspace's corpus (its cached indexes) or over
an index folder (``index``; ``sleuth search --index``, ``sleuth serve --index``). The ``bm25`` and ``dense``
config stages, the CLIs and the systems all build their retrievers here."""

from __future__ import annotations

from pathlib import Path

from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Params
from sleuth.index.dense import VectorSearch
from sleuth.index.tokenize import Analyzer
from sleuth.models.registry import DEFAULT_ENCODER
from sleuth.pipelines.workspace import Workspace
from sleuth.stages.retrieve import BM25Retrieve, DenseRetrieve


def bm25_retrieve(ws: Workspace, k: int, *, index: str | Path | None = None, params: BM25Params = BM25Params(),
                  analyzer: Analyzer = Analyzer(), name: str = "bm25") -> BM25Retrieve:
    """BM25 over ``index`` (a folder, sharded or not) or over the workspace corpus indexed with these settings."""
    if index is not None:
        from sleuth.index.sharded import load_bm25

        return BM25Retrieve(load_bm25(index), k=k, name=name, folder=index)
    loaded = ws.bm25(params, analyzer)
    return BM25Retrieve(loaded, k=k, name=name, folder=ws.index_dir(ws.bm25_key(params, analyzer)))


def dense_retrieve(ws: Workspace, k: int, *, index: str | Path | None = None, encoder: str | None = None,
                   search: VectorSearch = VectorSearch(), name: str = "dense") -> DenseRetrieve:
    """Dense retrieval over ``index`` (a folder, sharded or not; queries encoded by the encoder its manifest
    records: an ``encoder`` named beside it must be that one) or over the workspace corpus encoded with ``encoder``
    (default ``minilm``), searched with ``search``'s settings (a setting the index type lacks is a ConfigError)."""
    from sleuth.index.sharded import load_dense, set_search_params

    if index is not None:
        loaded = load_dense(index)
        own = str(loaded.encoder_spec.get("name"))
        if encoder is not None and encoder != own:  # before: ignored, the index's encoder used unsaid
            raise ConfigError(f"dense: index {index} holds vectors of encoder '{own}', which encodes its queries; "
                              f"encoder '{encoder}' cannot search it (leave encoder out with index:, or build an "
                              "index with that encoder)")
        stage = DenseRetrieve(loaded, k=k, name=name, device=ws.device, folder=index)
    else:
        encoder = encoder or DEFAULT_ENCODER
        loaded = ws.dense(encoder, search.factory)
        stage = DenseRetrieve(loaded, encoder=ws.encoder(encoder), k=k, name=name,
                              folder=ws.index_dir(ws.dense_key(encoder, search.factory)))
    set_search_params(loaded, search)
    return stage


def stage_for_index(path: Path, k: int, device: str) -> BM25Retrieve | DenseRetrieve:
    """A retrieval stage for an index folder, chosen by the kind its manifest records."""
    from sleuth.index.sharded import SHARDED_BM25, SHARDED_DENSE, index_kind

    ws = Workspace(device=device, show_progress=False)
    kind = index_kind(path)
    if kind in ("bm25", SHARDED_BM25):
        return bm25_retrieve(ws, k, index=path, name="bm25")
    if kind not in ("dense", SHARDED_DENSE):  # before: "is a 'hierarchical' index, not a 'dense' index"
        raise ConfigError(f"{path} is a '{kind}' index: --index reads bm25 and dense folders (sharded or not); search "
                          f"it with the pipeline of the system that built it and its index key (a hierarchical "
                          f"index: --pipeline dhr --set dhr.index={path})")
    return dense_retrieve(ws, k, index=path, name="dense")
