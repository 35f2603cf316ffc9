"""Sharded hierarchical (DHR) indexes: contiguous runs of documents, each shard an ordinary hierarchical index folder
(a document's passages stay in its shard), searched by scatter-gather with an exact merge, in this process or on Ray
shard actors (:mod:`sleuth.scale.shard_actors`, through this system's ``shards`` hook).

Layout::

    DIR/manifest.json    kind sharded-hierarchical; params.shards = [{path, offset, count, document_offset,
                         documents}, ...] (passage rows offset .. offset + count - 1 are the shard's)
    DIR/shard-000/ ...   an ordinary 'hierarchical' index of those documents and their passages

Served: the parallel mode of DHR (every passage and every document scored; summary, centroid and max document
scores, add and gate, the length prior with or without its gate) and DHR-P. Both are exact: a passage's final score
depends only on its own document, so each shard ranks its own passages and the merge of the shards' top k (by score,
ties by global passage row, :func:`sleuth.index.sharded.merge_order`) is the unsharded ranking. The prior's gate reads
each query's best passage score over the whole index: every shard returns its best score and its ranking with and
without the prior, and the merge takes, per query, the one the best over all shards selects (one round trip). The
serial mode (top documents first, then their passages) needs the unsharded index.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.errors import ConfigError, IndexError_
from sleuth.index.dense import add_vectors, make_faiss_index
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import Manifest, build_directory, load_generation, write_manifest
from sleuth.index.sharded import (
    answering,
    index_kind,
    load_sharded,
    load_shards,
    merge_order,
    merge_topk,
    read_root_manifest,
    scatter,
    shard_name,
    take_merged,
)
from sleuth.systems.dhr.index import HierarchicalIndex, prior_applies
from sleuth.systems.dhr.stages import ParallelParams, ParallelRanking, parallel_document_scores, rank_parallel

SHARDED_HIERARCHICAL = "sharded-hierarchical"
RANKING_FIELDS = ("passage_scores", "document_scores", "priors")


def document_cuts(offsets: np.ndarray, shards: int) -> list[int]:
    """Document rows where shards start (and the document count at the end): contiguous runs of documents with
    near-equal passage counts, at least one document each."""
    documents = len(offsets) - 1
    if not 1 <= shards <= documents:
        raise ConfigError(f"--shards must be between 1 and the index's {documents} documents, got {shards}")
    cuts = [0]
    for i in range(1, shards):
        cut = int(np.searchsorted(offsets, offsets[-1] * i / shards, side="left"))
        cuts.append(min(max(cut, cuts[-1] + 1), documents - (shards - i)))
    return cuts + [documents]


def shard_hierarchical(index: HierarchicalIndex, path: str | Path, shards: int) -> Path:
    """Write ``index`` as ``shards`` shards of contiguous documents (near-equal passage counts), atomically at
    ``path``: the same vectors and stores, cut between documents; each shard's document FAISS index is rebuilt from
    its document vectors with the index's factory string."""
    manifest = index.loaded_manifest
    cuts = document_cuts(index.offsets, shards)
    listing = []
    with build_directory(path) as tmp:
        assert tmp is not None
        for i, (first, end) in enumerate(zip(cuts[:-1], cuts[1:])):
            start, stop = int(index.offsets[first]), int(index.offsets[end])
            documents = np.asarray(index.document_vectors[first:end], dtype=np.float32)
            document_index = make_faiss_index(manifest.params.get("factory", "Flat"), documents.shape[1])
            add_vectors(document_index, documents)
            own = Manifest(kind=HierarchicalIndex.kind, count=stop - start, dimensions=manifest.dimensions,
                           encoder=manifest.encoder, corpus=manifest.corpus,
                           params={**manifest.params, "documents": end - first, "shard": [i, shards]})
            shard = HierarchicalIndex(document_index, documents,
                                      np.asarray(index.passage_vectors[start:stop], dtype=np.float32),
                                      index.offsets[first:end + 1] - start, index.documents.slice(first, end - first),
                                      index.passages.slice(start, stop - start), index.document_encoder_spec,
                                      index.passage_encoder_spec, own)
            where = tmp / shard_name(i)
            where.mkdir()
            shard.write_files(where)
            write_manifest(where, own)
            listing.append({"path": shard_name(i), "offset": start, "count": stop - start, "document_offset": first,
                            "documents": end - first})
        write_manifest(tmp, Manifest(kind=SHARDED_HIERARCHICAL, count=len(index), dimensions=manifest.dimensions,
                                     encoder=manifest.encoder, corpus=manifest.corpus,
                                     params={**manifest.params, "shards": listing}))
    return Path(path)


def scan_shard(index: HierarchicalIndex, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """One shard's DHR-P top k (local passage rows, scores)."""
    return index.scan_passages(vectors, k)


def parallel_shard(index: HierarchicalIndex, document_query_vectors: np.ndarray, passage_query_vectors: np.ndarray,
                   params: ParallelParams) -> dict[str, Any]:
    """One shard's parallel DHR ranking (local rows); with a gated prior, its best passage score per query and its
    rankings with and without the prior (the merge picks per query)."""
    document_scores, best = parallel_document_scores(index, document_query_vectors, passage_query_vectors, params)
    if best is None:
        return {"ranking": rank_parallel(index, document_scores, passage_query_vectors, params, None)}
    queries = len(best)
    return {"best": best,
            "with": rank_parallel(index, document_scores, passage_query_vectors, params, np.ones(queries, bool)),
            "without": rank_parallel(index, document_scores, passage_query_vectors, params, np.zeros(queries, bool))}


def chosen_ranking(part: dict[str, Any], applies: np.ndarray | None) -> ParallelRanking:
    """A shard's ranking for each query: with the prior where ``applies`` says so, without it elsewhere."""
    if applies is None:
        return part["ranking"]
    with_prior, without = part["with"], part["without"]
    pick = applies[:, None]
    return ParallelRanking(*(np.where(pick, getattr(with_prior, name), getattr(without, name))
                             for name in ("rows", "scores") + RANKING_FIELDS))


class ShardedHierarchicalIndex:
    """A sharded hierarchical index: ``call_all(function, *args)`` runs ``function(shard, *args)`` on every shard
    (threads in this process, actors on Ray) and the shards' rankings are merged exactly; ``passages`` is the passage
    store by global row (concatenated here, fetched from the actors on Ray)."""

    kind = SHARDED_HIERARCHICAL

    def __init__(self, manifest: Manifest, call_all: Callable[..., list[Any]], passages: Any):
        self.manifest, self.call_all, self.passages = manifest, call_all, passages
        self.offsets = [int(info["offset"]) for info in manifest.params["shards"]]
        encoders = manifest.encoder or {}
        self.document_encoder_spec, self.passage_encoder_spec = encoders["document"], encoders["passage"]

    @classmethod
    def load(cls, path: str | Path, threads: int = 2) -> ShardedHierarchicalIndex:
        """Load every shard into this process (a missing or corrupt shard is an IndexError_ naming it)."""
        return load_generation(path, lambda generation: cls._load(generation, threads))

    @classmethod
    def _load(cls, path: Path, threads: int) -> ShardedHierarchicalIndex:
        manifest = read_root_manifest(path, SHARDED_HIERARCHICAL)
        shards = load_shards(path, manifest, HierarchicalIndex.load)
        for i, shard in enumerate(shards):
            if shard.loaded_manifest.encoder != manifest.encoder:
                raise IndexError_(f"shard {i + 1} of {len(shards)} ({path / manifest.params['shards'][i]['path']}) "
                                  "holds vectors of other encoders than the sharded manifest")
        return cls(manifest, lambda function, *args: scatter(shards, lambda shard: function(shard, *args), threads),
                   DocStore.concat([shard.passages for shard in shards]))

    def __len__(self) -> int:
        return int(self.manifest.count)

    @property
    def num_documents(self) -> int:
        return int(self.manifest.params["documents"])

    @property
    def document_dim(self) -> int:
        return int(self.manifest.params["document_dimensions"])

    @property
    def passage_dim(self) -> int:
        return int(self.manifest.dimensions or 0)

    def scan_passages(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """DHR-P: the top-k passage rows (global) and scores over every shard."""
        parts, offsets = self.answering(self.call_all(scan_shard, np.asarray(vectors, dtype=np.float32), k))
        rows, scores = merge_topk(parts, offsets, min(k, len(self)))
        self.fetch(rows)
        return rows, scores

    def parallel_search(self, document_query_vectors: np.ndarray, passage_query_vectors: np.ndarray,
                        params: ParallelParams) -> ParallelRanking:
        """The parallel DHR ranking (global rows): every shard's, merged exactly (:func:`parallel_shard`)."""
        parts, offsets = self.answering(self.call_all(parallel_shard, np.asarray(document_query_vectors, np.float32),
                                                      np.asarray(passage_query_vectors, np.float32), params))
        applies = None
        if params.gated:
            applies = prior_applies(np.max([part["best"] for part in parts], axis=0), params.length_prior_below)
        chosen = [chosen_ranking(part, applies) for part in parts]
        rows, scores, order = merge_order([(c.rows, c.scores) for c in chosen], offsets, min(params.k, len(self)))
        self.fetch(rows)
        return ParallelRanking(rows, scores, *(take_merged([getattr(c, name) for c in chosen], order)
                                               for name in RANKING_FIELDS))

    def answering(self, parts: list[Any]) -> tuple[list[Any], list[int]]:
        """The shards' results and passage offsets, less the shards down in a partial search (None results:
        :func:`sleuth.index.partial.partial_results`; the prior's gate then reads the best of the shards that
        answered)."""
        return answering(parts, self.offsets)

    def fetch(self, rows: np.ndarray) -> None:
        """Fetch the hits' passages at once where they are held elsewhere (shard actors)."""
        prefetch = getattr(self.passages, "prefetch", None)
        if prefetch is not None:
            prefetch(rows)


class RayShardedHierarchicalIndex(ShardedHierarchicalIndex):
    """A sharded hierarchical index whose shards are loaded once each in a Ray shard actor (placement group, SPREAD,
    restarts and retries: :class:`sleuth.scale.shard_actors.ShardActors`); the driver holds no passage store."""

    def __init__(self, path: str | Path, options: Any = None):
        from sleuth.scale.session import require_ray
        from sleuth.scale.shard_actors import RemoteDocStore, ShardActorOptions, ShardActors

        ray = require_ray()
        self.actors = ShardActors(path, SHARDED_HIERARCHICAL, options or ShardActorOptions())

        def call_all(function: Callable[..., Any], *args: Any) -> list[Any]:
            shared = [ray.put(arg) if isinstance(arg, np.ndarray) else arg for arg in args]
            return self.actors.call_all(lambda actor: actor.run.remote(function, *shared), partial=True)

        super().__init__(self.actors.manifest, call_all, RemoteDocStore(self.actors))

    def close(self) -> None:
        """Stop the shard actors."""
        self.actors.close()


def load_hierarchical(path: str | Path) -> HierarchicalIndex | ShardedHierarchicalIndex:
    """A hierarchical index folder, sharded or not (sharded ones on shard actors once
    :func:`sleuth.scale.shard_actors.serve_shards_on_ray` is on)."""
    if index_kind(path) != SHARDED_HIERARCHICAL:
        return HierarchicalIndex.load(path)
    return load_sharded(path, SHARDED_HIERARCHICAL, ShardedHierarchicalIndex.load)


#: what a shard actor loads for one shard folder of this system's kind
SHARD_LOADERS = {HierarchicalIndex.kind: HierarchicalIndex.load}
#: the sharded kinds this system serves on shard actors
REMOTE_INDEXES = {SHARDED_HIERARCHICAL: RayShardedHierarchicalIndex}
