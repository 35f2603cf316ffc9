"""Shards served by Ray actors across nodes: each shard of a sharded BM25 or dense index is loaded once in its own
actor, the actors are placed by a placement group (strategy SPREAD, one bundle per shard), and a query is scattered
to every actor and gathered with the exact merge of :func:`sleuth.index.sharded.merge_topk`, so the ranking is the
in-process sharded index's (and, for exact indexes, the unsharded one's).

:class:`RayShardedBM25Index` and :class:`RayShardedDenseIndex` expose what the retrieval stages use (``search``,
``score`` / ``vectors``, ``docstore``, ``len``, ``encoder_spec``, ``dim``), so ``BM25Retrieve``, ``DenseRetrieve``,
pipelines and ``sleuth serve --index DIR --ray-address ...`` use them unchanged (:func:`serve_shards_on_ray`
switches :func:`sleuth.index.sharded.load_bm25` / ``load_dense`` over to them). The driver holds no document
store: hit texts are fetched from the actors that hold them (:class:`RemoteDocStore`).

Failures: an actor that dies is restarted in its bundle (``max_restarts``) and reloads its shard; calls in flight
are retried (``max_task_retries``). A shard that stays down is a :class:`~sleuth.errors.ShardUnavailableError`
naming it (HTTP 503 from the service), never a ranking silently missing a shard; searches inside
:func:`sleuth.index.partial.partial_results` (``partial=true`` over HTTP) merge the shards that answered instead and
report the rest.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.errors import IndexError_, ShardUnavailableError, SleuthError
from sleuth.index.manifest import Manifest, current_generation
from sleuth.index.partial import current_report
from sleuth.index.sharded import (
    SHARDED_BM25,
    SHARDED_DENSE,
    IdsByRow,
    answering,
    by_shard,
    merge_topk,
    merge_topk_by_id,
    read_root_manifest,
)
from sleuth.scale.session import require_ray

FIELDS = ("id", "doc_id", "title", "text")


@dataclass(frozen=True)
class ShardActorOptions:
    """How shard actors run: CPUs each, restarts and retries on failure, the longest wait for one shard."""

    actor_cpus: float = 0.5
    max_restarts: int = 3
    max_task_retries: int = 3
    timeout_s: float = 60.0
    strategy: str = "SPREAD"
    #: up to this k, each shard sends the passages of its local top-k with it (one round trip per query instead of
    #: two); above it, only the merged top-k's passages are fetched afterwards
    rows_with_search_k: int = 100


def load_shard(path: str) -> Any:
    """One shard folder: an ordinary ``bm25`` or ``dense`` index, or a kind a system's ``SHARD_LOADERS`` lists."""
    from sleuth.index.bm25 import BM25Index
    from sleuth.index.dense import DenseIndex
    from sleuth.index.manifest import read_manifest
    from sleuth.plugins import system_entry

    kind = read_manifest(path, verify=False).kind
    if kind in (BM25Index.kind, DenseIndex.kind):
        return BM25Index.load(path) if kind == BM25Index.kind else DenseIndex.load(path)
    loader = system_entry("shards", "SHARD_LOADERS", kind)
    if loader is None:
        raise IndexError_(f"{path}: no shard loader for '{kind}' indexes (no system registers one)")
    return loader(path)


class ShardActor:
    """A Ray actor holding one shard (an ordinary index folder: ``bm25``, ``dense`` or a system's kind), loaded
    once."""

    def __init__(self, path: str):
        self.index: Any = None
        self.unusable: str | None = None
        try:
            self.index = load_shard(path)
        except SleuthError as exc:  # a corrupt or foreign shard: restarts cannot mend it, so stay up and say so
            self.unusable = str(exc)  # (before: the actor died, was restarted three times, and Ray printed each
            # failure's traceback before the one-line error)

    def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(shard index, *args)``: a system's own per-shard work (e.g. DHR's passage scoring)."""
        return function(self.index, *args)

    def facts(self) -> dict[str, Any]:
        """Row count, node id, process id and the manifest's parameters (to check against the sharded manifest);
        ``{"unusable": why}`` for a shard that could not be loaded."""
        import os

        import ray

        if self.unusable is not None:
            return {"unusable": self.unusable}
        manifest = self.index.loaded_manifest
        return {"count": len(self.index), "node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid(),
                "params": manifest.params, "encoder": manifest.encoder, "dimensions": manifest.dimensions}

    def search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Local top-k (rows, scores): query texts for BM25, query vectors for dense."""
        return self.index.search(queries, k=min(k, len(self.index)))

    def search_with_rows(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray, list]:
        """:meth:`search` and the passages of the rows it returns (local row -> record)."""
        positions, scores = self.search(queries, k)
        rows = sorted({int(r) for r in np.asarray(positions).ravel().tolist() if r >= 0})
        return positions, scores, list(zip(rows, self.rows(rows)))

    def score(self, text: str, rows: np.ndarray) -> np.ndarray:
        return self.index.score(text, rows)

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        return self.index.vectors(rows)

    def rows(self, rows: Sequence[int]) -> list[tuple[str, str, str, str]]:
        """(id, doc id, title, text) of local rows."""
        store = self.index.docstore
        return [(store.ids[r], store.doc_ids[r], store.titles[r], store.texts[r]) for r in rows]

    def positions(self, ids: Sequence[str]) -> list[int | None]:
        """Local rows of passage ids (None where this shard does not hold one)."""
        return [self.index.docstore.position(item_id) for item_id in ids]

    def apply_search_params(self, ef_search: int | None, nprobe: int | None) -> None:
        from sleuth.index.dense import apply_search_params

        apply_search_params(self.index.index, ef_search=ef_search, nprobe=nprobe)


class ShardActors:
    """One actor per shard of a sharded index folder, placed by a placement group; calls name the shard that fails."""

    def __init__(self, path: str | Path, kind: str, options: ShardActorOptions = ShardActorOptions()):
        ray = require_ray()
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        self.path = Path(path)
        self.options = options
        generation = current_generation(self.path)
        self.manifest: Manifest = read_root_manifest(generation, kind)
        listed = self.manifest.params["shards"]
        self.paths = [generation / info["path"] for info in listed]
        self.counts = np.array([info["count"] for info in listed], dtype=np.int64)
        self.offsets = np.array([info["offset"] for info in listed], dtype=np.int64)
        self.group = placement_group([{"CPU": options.actor_cpus}] * len(listed), strategy=options.strategy)
        if not self.group.wait(timeout_seconds=options.timeout_s):
            ray.util.remove_placement_group(self.group)
            raise ShardUnavailableError(f"{self.path}: no room in the Ray cluster for {len(listed)} shard actors of "
                                        f"{options.actor_cpus} CPU each ({options.strategy})")
        remote = ray.remote(ShardActor)
        self.actors = [remote.options(num_cpus=options.actor_cpus, max_restarts=options.max_restarts,
                                      max_task_retries=options.max_task_retries,
                                      scheduling_strategy=PlacementGroupSchedulingStrategy(
                                          placement_group=self.group, placement_group_bundle_index=i)
                                      ).remote(str(where)) for i, where in enumerate(self.paths)]
        # the placement group outlives its handle: released with this object (or by close)
        self._release = weakref.finalize(self, release_group, self.group)
        self.facts = self.call_all(lambda actor: actor.facts.remote())
        for i, facts in enumerate(self.facts):
            if "unusable" in facts:  # as the single-process sharded index says it
                raise IndexError_(f"{self.describe(i)} unusable: {facts['unusable']}")
            if facts["count"] != self.counts[i]:
                raise IndexError_(f"{self.describe(i)} holds {facts['count']} rows, the sharded manifest says "
                                  f"{int(self.counts[i])}")

    def __len__(self) -> int:
        return int(self.counts.sum())

    def describe(self, shard: int) -> str:
        return f"shard {shard + 1} of {len(self.actors)} ({self.paths[shard]})"

    def node_ids(self) -> list[str]:
        """The node each shard actor runs on now."""
        return [facts["node_id"] for facts in self.call_all(lambda actor: actor.facts.remote())]

    def call_all(self, call: Callable[[Any], Any], partial: bool = False) -> list[Any]:
        """``call(actor)`` on every actor at once (scatter), then every result (gather; ``partial``: None for a shard
        down inside :func:`sleuth.index.partial.partial_results`)."""
        return self.gather([(i, call(actor)) for i, actor in enumerate(self.actors)], partial)

    def gather(self, pending: list[tuple[int, Any]], partial: bool = False) -> list[Any]:
        """Results of ``(shard, object ref)`` pairs in order; a shard that stays down (its restarts spent) or does not
        answer within the time limit is a ShardUnavailableError naming it -- or, with ``partial`` inside
        :func:`sleuth.index.partial.partial_results`, a None result, recorded in that block's report."""
        import time

        ray = require_ray()
        report = current_report() if partial else None
        deadline = time.monotonic() + self.options.timeout_s
        out = []
        for shard, ref in pending:
            try:
                out.append(ray.get(ref, timeout=max(deadline - time.monotonic(), 0.001)))
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
                error = ShardUnavailableError(f"{self.describe(shard)} is down "
                                              f"({type(exc).__name__}, restarts spent): no ranking")
            except ray.exceptions.GetTimeoutError:
                error = ShardUnavailableError(f"{self.describe(shard)} did not answer within "
                                              f"{self.options.timeout_s:g} s: no ranking")
            else:
                if report is not None:
                    report.ok(self.describe(shard))
                continue
            if report is None:
                raise error
            report.failed(self.describe(shard), str(error).removesuffix(": no ranking"))
            out.append(None)
        if report is not None and pending and all(result is None for result in out):
            raise ShardUnavailableError(f"{self.path}: no shard answered ({'; '.join(report.down.values())})")
        return out

    def answering(self, results: list[Any]) -> tuple[list[Any], list[int]]:
        """The results of the shards that answered (a partial gather's non-None ones) and those shards' offsets."""
        return answering(results, self.offsets.tolist())

    def search(self, queries: Any, k: int, ids: IdsByRow | None = None
               ) -> tuple[np.ndarray, np.ndarray, dict[int, tuple] | None]:
        """Scatter ``queries`` to every shard, merge the local top-k exactly (global rows; ties at the cut by id when
        ``ids`` reads a global row's id, as BM25 cuts, else by row); up to ``rows_with_search_k``, also the passages
        of the shards' top-k rows by global row (else None). Inside :func:`sleuth.index.partial.partial_results`,
        the shards that answered are merged and the rest reported."""
        ray = require_ray()
        shared = ray.put(queries)
        if k > self.options.rows_with_search_k:
            parts, offsets = self.answering(self.call_all(lambda actor: actor.search.remote(shared, k), partial=True))
            return (*self._merge(parts, offsets, k, ids), None)
        answers, offsets = self.answering(self.call_all(lambda actor: actor.search_with_rows.remote(shared, k),
                                                        partial=True))
        records = {offset + row: tuple(record) for offset, (_, _, rows) in zip(offsets, answers)
                   for row, record in rows}
        sent = None if ids is None else RowIds(records, ids)  # the candidates' ids came with the search
        positions, scores = self._merge([(p, s) for p, s, _ in answers], offsets, k, sent)
        return positions, scores, records

    def _merge(self, parts: list, offsets: list[int], k: int, ids: IdsByRow | None) -> tuple[np.ndarray, np.ndarray]:
        if ids is None:
            return merge_topk(parts, offsets, min(k, len(self)))
        return merge_topk_by_id(parts, offsets, min(k, len(self)), ids)

    def close(self) -> None:
        """Stop the actors and release their placement group."""
        ray = require_ray()
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        self.actors = []
        self._release()


def release_group(group: Any) -> None:
    """Remove a placement group (and so its actors) if Ray is still connected: a call after ``ray.shutdown``
    would start a new local Ray."""
    ray = require_ray()
    if ray.is_initialized():
        ray.util.remove_placement_group(group)


class RowIds:
    """Global rows' ids read from the records a search sent (``{row: (id, ...)}``), else from ``ids``."""

    def __init__(self, records: dict[int, tuple], ids: IdsByRow):
        self.records, self.ids = records, ids

    def __getitem__(self, row: int) -> str:
        record = self.records.get(int(row))
        return str(record[0]) if record is not None else self.ids[int(row)]



class _Column:
    """One field of a :class:`RemoteDocStore`, indexed by global row."""

    def __init__(self, store: RemoteDocStore, field: int):
        self.store, self.field = store, field

    def __getitem__(self, row: int) -> str:
        return self.store.row(int(row))[self.field]

    def prefetch(self, rows: Sequence[int]) -> None:
        """Fetch these rows in one call per shard (before they are read one by one)."""
        self.store.prefetch(rows)

    def __len__(self) -> int:
        return len(self.store)


class RemoteDocStore:
    """The document store of shards held by actors: rows are fetched from the actor that holds them (one call per
    shard for a search's hits, :meth:`prefetch`) and kept in a bounded cache. Read-only."""

    def __init__(self, actors: ShardActors, cache_rows: int = 100_000):
        self.actors, self.cache_rows = actors, cache_rows
        self._cache: OrderedDict[int, tuple[str, str, str, str]] = OrderedDict()
        self._lock = threading.Lock()
        self.ids, self.doc_ids, self.titles, self.texts = (_Column(self, i) for i in range(len(FIELDS)))

    def __len__(self) -> int:
        return len(self.actors)

    def keep(self, records: dict[int, tuple]) -> None:
        """Cache passages already fetched (with a search)."""
        with self._lock:
            self._cache.update(records)
            while len(self._cache) > self.cache_rows:
                self._cache.popitem(last=False)

    def prefetch(self, rows: Sequence[int] | np.ndarray) -> None:
        """Fetch the rows not cached yet, one call per shard that holds some."""
        wanted = sorted({int(r) for r in np.asarray(rows).ravel().tolist() if r >= 0} - set(self._cache))
        if not wanted:
            return
        groups = by_shard(wanted, self.actors.offsets, self.actors.counts)
        pending = [(shard, self.actors.actors[shard].rows.remote(local.tolist())) for shard, _, local in groups]
        fetched = self.actors.gather(pending)
        self.keep({wanted[i]: tuple(record) for (_, where, _), records in zip(groups, fetched)
                   for i, record in zip(where.tolist(), records)})

    def row(self, row: int) -> tuple[str, str, str, str]:
        with self._lock:
            record = self._cache.get(row)
        if record is None:
            self.prefetch([row])
            with self._lock:
                record = self._cache[row]
        return record

    def positions(self, ids: Sequence[str]) -> list[int | None]:
        """Global rows of passage ids (None for an id no shard holds): every shard is asked once."""
        answers = self.actors.call_all(lambda actor: actor.positions.remote(list(ids)))
        out: list[int | None] = [None] * len(ids)
        for offset, local in zip(self.actors.offsets.tolist(), answers):
            for i, row in enumerate(local):
                if row is not None and out[i] is None:
                    out[i] = offset + row
        return out

    def position(self, item_id: str) -> int | None:
        return self.positions([item_id])[0]


class _RaySharded:
    """What both Ray-served kinds share: the actors, a remote document store, the sharded manifest."""

    kind = "sharded"

    def __init__(self, path: str | Path, options: ShardActorOptions = ShardActorOptions()):
        self.actors = ShardActors(path, self.kind, options)
        self.manifest = self.actors.manifest
        self.docstore = RemoteDocStore(self.actors)

    def __len__(self) -> int:
        return len(self.actors)

    #: whether ties at the cut go by id (BM25, as :class:`~sleuth.index.sharded.ShardedBM25Index`), else by row
    ties_by_id = False

    def _search(self, queries: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        positions, scores, records = self.actors.search(queries, k, self.docstore.ids if self.ties_by_id else None)
        if records is not None:
            self.docstore.keep({row: records[row] for row in np.asarray(positions).ravel().tolist() if row >= 0})
        self.docstore.prefetch(positions)  # rows not sent with the search (k above rows_with_search_k)
        return positions, scores

    def close(self) -> None:
        self.actors.close()


class RayShardedBM25Index(_RaySharded):
    """A sharded BM25 index searched by shard actors (scores and rankings: those of :class:`ShardedBM25Index`)."""

    kind = SHARDED_BM25
    ties_by_id = True

    def __init__(self, path: str | Path, options: ShardActorOptions = ShardActorOptions()):
        super().__init__(path, options)
        expected = self.manifest.params.get("global_stats")
        for i, facts in enumerate(self.actors.facts):
            if facts["params"].get("global_stats") != expected:
                self.close()
                raise IndexError_(f"{self.actors.describe(i)} was built with other global statistics than its "
                                  "siblings")

    def search(self, texts: Sequence[str], k: int = 1000, n_threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Top-k global rows and BM25 scores per query text (each actor analyses the texts with the shared analyser)."""
        return self._search(list(texts), k)

    def score(self, text: str, positions: Sequence[int]) -> np.ndarray:
        """BM25 scores of one query against the given global rows."""
        out = np.zeros(len(positions), dtype=np.float32)
        groups = by_shard(positions, self.actors.offsets, self.actors.counts)
        pending = [(s, self.actors.actors[s].score.remote(text, rows)) for s, _, rows in groups]
        for (_, where, _), scores in zip(groups, self.actors.gather(pending)):
            out[where] = scores
        return out


class RayShardedDenseIndex(_RaySharded):
    """A sharded dense index searched by shard actors; query vectors are encoded by the caller, as in-process."""

    kind = SHARDED_DENSE

    def __init__(self, path: str | Path, options: ShardActorOptions = ShardActorOptions()):
        super().__init__(path, options)
        self.encoder_spec = self.manifest.encoder or {}

    @property
    def dim(self) -> int:
        return int(self.manifest.dimensions or 0)

    def search(self, vectors: np.ndarray, k: int = 1000) -> tuple[np.ndarray, np.ndarray]:
        """Top-k global rows and inner-product scores per query vector; rows of -1 mark missing results."""
        return self._search(np.ascontiguousarray(vectors, dtype=np.float32), k)

    def vectors(self, positions: Sequence[int]) -> np.ndarray:
        """Stored vectors of the given global rows."""
        out = np.zeros((len(positions), self.dim), dtype=np.float32)
        groups = by_shard(positions, self.actors.offsets, self.actors.counts)
        pending = [(s, self.actors.actors[s].vectors.remote(rows)) for s, _, rows in groups]
        for (_, where, _), vectors in zip(groups, self.actors.gather(pending)):
            out[where] = vectors
        return out

    def apply_search_params(self, ef_search: int | None = None, nprobe: int | None = None) -> None:
        """HNSW efSearch / IVF nprobe on every shard actor."""
        self.actors.call_all(lambda actor: actor.apply_search_params.remote(ef_search, nprobe))


def serve_shards_on_ray(options: ShardActorOptions = ShardActorOptions()) -> None:
    """From now on, sharded index folders loaded by :func:`sleuth.index.sharded.load_bm25` / ``load_dense`` (so by
    ``sleuth serve --index``, ``sleuth search --index`` and pipelines' ``index:`` keys) are served by shard actors in
    the connected Ray cluster; so are a system's sharded kinds (its ``REMOTE_INDEXES``, e.g. DHR's
    ``sharded-hierarchical``) loaded through :func:`sleuth.index.sharded.load_sharded`."""
    from sleuth.index import sharded
    from sleuth.plugins import system_entry

    def load(path: Path, kind: str) -> Any:
        if kind in (SHARDED_BM25, SHARDED_DENSE):
            return RayShardedBM25Index(path, options) if kind == SHARDED_BM25 else RayShardedDenseIndex(path, options)
        remote = system_entry("shards", "REMOTE_INDEXES", kind)
        if remote is None:
            raise IndexError_(f"{path}: no system serves '{kind}' indexes on shard actors")
        return remote(path, options)

    sharded.set_remote_loader(load)
