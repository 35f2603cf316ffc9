"""Updates of sharded indexes: add and delete documents through the generation swap of :mod:`sleuth.index.updates`.

A document stays in the shard that holds it: a deletion removes it from that shard, new documents go to the smallest
shard (a shard left empty by deletions is dropped). The whole sharded folder (root manifest and every shard) is
written as one new generation and ``CURRENT`` is switched once, so a search sees the old index or the new one, with
the lock, kill -9 safety and garbage collection of :func:`sleuth.index.updates.commit_generation`.

* **sharded-bm25**: BM25's global statistics (vocabulary, document frequencies, N, average length) change with every
  update, so every shard is rebuilt from the stored passages with statistics over all shards
  (:meth:`ShardedBM25Index.build_parts`): scores equal a fresh sharded build of the same documents. O(corpus), like
  the unsharded update; no corpus file and no encoder.
* **sharded-dense**: only new passages are encoded; they are appended to a copy of the smallest shard's FAISS index
  (existing vectors and scores unchanged). A deletion rebuilds the shards it touches from their kept vectors (same
  factory string); the other shards are written unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Params
from sleuth.index.dense import DenseIndex, add_vectors, make_faiss_index
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import Manifest
from sleuth.index.sharded import (
    SHARDED_BM25,
    SHARDED_DENSE,
    ShardedBM25Index,
    ShardedDenseIndex,
    by_shard,
    part_bounds,
    shard_listing,
    write_shards,
)
from sleuth.index.tokenize import Analyzer
from sleuth.index.updates import (
    Updater,
    check_new_ids,
    commit_generation,
    new_passage_encoder,
    next_manifest,
    rows_to_delete,
    without,
)


def smallest(counts: Sequence[int] | np.ndarray) -> int:
    """The shard that takes new documents: the smallest (the first of equals)."""
    return int(np.argmin(counts))


# --- sharded BM25 -----------------------------------------------------------------------------------------------------

def add_bm25(index_dir: Path, passages: list[Passage], encoder: Any = None, device: str = "cpu") -> Manifest:
    current = ShardedBM25Index.load(index_dir)
    check_new_ids(current.docstore, passages, index_dir)
    parts = [shard.docstore for shard in current.shards]
    target = smallest(current.counts)
    parts[target] = DocStore.concat([parts[target], DocStore.from_passages(passages)])
    return _commit_bm25(index_dir, current, parts)


def delete_bm25(index_dir: Path, ids: list[str]) -> Manifest:
    current = ShardedBM25Index.load(index_dir)
    rows = rows_to_delete(current.docstore, ids, index_dir)
    parts = [shard.docstore for shard in current.shards]
    for shard, _, local in by_shard(rows, current.offsets, current.counts):
        parts[shard] = without(parts[shard], local)[0]
    return _commit_bm25(index_dir, current, [part for part in parts if len(part)])


def _commit_bm25(index_dir: Path, current: ShardedBM25Index, parts: list[DocStore]) -> Manifest:
    """Every shard rebuilt from its passages with statistics over all shards, committed as one generation."""
    old = current.loaded_manifest
    params = BM25Params(**old.params["bm25"])
    built = ShardedBM25Index.build_parts(parts, None, params, Analyzer(**old.params["analyzer"]), old.corpus)
    manifest = next_manifest(old, len(built), params=built.manifest.params if built.manifest else None)

    return commit_generation(index_dir, manifest, lambda tmp: write_shards(tmp, built.shards))


# --- sharded dense ----------------------------------------------------------------------------------------------------

def add_dense(index_dir: Path, passages: list[Passage], encoder: Any = None, device: str = "cpu") -> Manifest:
    current = ShardedDenseIndex.load(index_dir)
    check_new_ids(current.docstore, passages, index_dir)
    encoder = new_passage_encoder(encoder, current, index_dir, device)
    added = DocStore.from_passages(passages)
    vectors = np.ascontiguousarray(encoder.encode_passages(added.contents(), show_progress=False), dtype=np.float32)
    shards = list(current.shards)
    target = smallest(current.counts)
    index = shards[target].index  # a private copy read from disk by load: appending leaves the served one alone
    index.add(vectors)
    shards[target] = DenseIndex(index, DocStore.concat([shards[target].docstore, added]), current.encoder_spec)
    return _commit_dense(index_dir, current, shards)


def delete_dense(index_dir: Path, ids: list[str]) -> Manifest:
    current = ShardedDenseIndex.load(index_dir)
    rows = rows_to_delete(current.docstore, ids, index_dir)
    shards = list(current.shards)
    factory = current.loaded_manifest.params.get("factory", "Flat")
    for s, _, local in by_shard(rows, current.offsets, current.counts):
        docstore, keep = without(shards[s].docstore, local)
        index = make_faiss_index(factory, current.dim)
        if keep:
            add_vectors(index, shards[s].vectors(keep).astype(np.float32))
        shards[s] = DenseIndex(index, docstore, current.encoder_spec)
    return _commit_dense(index_dir, current, [shard for shard in shards if len(shard)])


def _commit_dense(index_dir: Path, current: ShardedDenseIndex, shards: list[DenseIndex]) -> Manifest:
    """The shards (new manifests: counts and positions) and the sharded manifest, committed as one generation."""
    old = current.loaded_manifest
    bounds = part_bounds(shards)
    for i, shard in enumerate(shards):
        shard.manifest = Manifest(kind=DenseIndex.kind, count=len(shard), corpus=old.corpus, encoder=old.encoder,
                                  dimensions=old.dimensions, params={"factory": old.params.get("factory", "Flat"),
                                                                     "shard": [i, len(shards)]})
    manifest = next_manifest(old, sum(len(s) for s in shards), params={**old.params, "shards": shard_listing(bounds)})

    return commit_generation(index_dir, manifest, lambda tmp: write_shards(tmp, shards))


UPDATERS = {SHARDED_BM25: Updater(add=add_bm25, delete=delete_bm25),
            SHARDED_DENSE: Updater(add=add_dense, delete=delete_dense)}
