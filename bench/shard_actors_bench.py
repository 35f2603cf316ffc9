"""Scatter-gather over Ray shard actors on a two-node Ray cluster vs the in-process sharded index, side by side.

A ``ray.cluster_utils.Cluster`` of two nodes (2 logical CPUs, 150 MB object store each) runs on this machine; for
1, 2 and 4 shards, :class:`sleuth.scale.shard_actors.RayShardedBM25Index` / ``RayShardedDenseIndex`` (one actor of
0.5 CPU per shard, placement group SPREAD) and the in-process ``ShardedBM25Index`` / ``ShardedDenseIndex`` (2
threads) answer the same queries, alternating rounds: single queries one after another (p50 / p99 latency),
single queries from ``--clients`` threads (throughput), and one batch (throughput). Every layout's scores are
checked equal to the 1-shard in-process answer. Memory: resident set of each shard actor, summed per node, and the
driver's growth for the in-process index.

BM25: all 5,183 SciFact abstracts, SciFact claims as queries. Dense: flat inner product over SciFact's shipped
MiniLM vectors tiled to ``--dense-rows`` rows (each copy perturbed by Gaussian noise, re-normalised); queries are
held-out perturbed vectors (no encoder in the loop: the index is what is measured).

    python -m bench.shard_actors_bench [--quick] [--dense-rows 100000] [--single 150] [--clients 4]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import (
    Report,
    ResultTable,
    add_size_option,
    base_parser,
    bench_main,
    load_average,
    load_scifact,
    progress,
)
from sleuth.corpus.model import Passage
from sleuth.index.prebuilt import PREBUILT_DIR, PrebuiltVectors
from sleuth.index.sharded import ShardedBM25Index, ShardedDenseIndex

NAME = "shard_actors_bench"
SHARDS = (1, 2, 4)
QUICK = {"dense_rows": 20_000, "single": 40, "batch": 50}
FULL = {"dense_rows": 100_000, "single": 150, "batch": 100}
NODE = {"num_cpus": 2, "object_store_memory": 150 * 1024 * 1024}


def start_cluster() -> Any:
    """Two Ray nodes on this machine, the driver connected."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    cluster.add_node(**NODE)
    ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
    cluster.wait_for_nodes()
    return cluster


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def measure(search: Callable[[Any], Any], singles: Sequence[Any], batch: Any, clients: int) -> dict[str, float]:
    """Single-query latencies (ms), concurrent single-query throughput and batch throughput (queries/s)."""
    latencies = []
    for query in singles:
        start = time.perf_counter()
        search(query)
        latencies.append((time.perf_counter() - start) * 1000)
    shares = [singles[i::clients] for i in range(clients)]
    start = time.perf_counter()
    threads = [threading.Thread(target=lambda part=part: [search(q) for q in part]) for part in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    concurrent = len(singles) / (time.perf_counter() - start)
    start = time.perf_counter()
    search(batch)
    batch_qps = len(batch) / (time.perf_counter() - start)
    return {"p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99), "concurrent_qps": concurrent,
            "batch_qps": batch_qps}


def median_runs(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def actor_memory(index: Any) -> dict[str, int]:
    """Resident bytes of the shard actors, summed per node (the nodes run on this machine: psutil sees them)."""
    import psutil

    per_node: dict[str, int] = {}
    for facts in index.actors.facts:
        per_node[facts["node_id"][:8]] = per_node.get(facts["node_id"][:8], 0) + \
            psutil.Process(facts["pid"]).memory_info().rss
    return per_node


def bench_kind(kind: str, build: Callable[[Path, int], None], load_here: Callable[[Path], Any],
               load_ray: Callable[[Path], Any], singles: Sequence[Any], batch: Any, k: int, args: argparse.Namespace,
               folder: Path) -> dict[str, Any]:
    """Both layouts for 1, 2 and 4 shards; answers checked against the 1-shard in-process scores."""
    out: dict[str, Any] = {}
    reference = None
    for shards in SHARDS:
        build(folder / f"{kind}-{shards}", shards)
        here = load_here(folder / f"{kind}-{shards}")
        index_bytes = sum(f.stat().st_size for f in (folder / f"{kind}-{shards}").rglob("*") if f.is_file())
        remote = load_ray(folder / f"{kind}-{shards}")
        try:
            scores = remote.search(batch, k=k)[1]
            reference = here.search(batch, k=k)[1] if reference is None else reference
            np.testing.assert_allclose(scores, reference, rtol=0, atol=1e-5)
            np.testing.assert_array_equal(scores, here.search(batch, k=k)[1])
            nodes = remote.actors.node_ids()
            runs: dict[str, list] = {"in-process": [], "ray": []}
            ones = [wrap(q) for q in singles]
            for _ in range(args.repeats):  # alternating rounds
                runs["in-process"].append(measure(lambda q: here.search(q, k=k), ones, batch, args.clients))
                runs["ray"].append(measure(lambda q: remote.search(q, k=k), ones, batch, args.clients))
            out[str(shards)] = {"in-process": median_runs(runs["in-process"]), "ray": median_runs(runs["ray"]),
                                "nodes_used": len(set(nodes)), "actor_rss_per_node": actor_memory(remote),
                                "index_bytes": index_bytes}
        finally:
            remote.close()
        progress(f"{kind}: {shards} shard(s) done")
    return out


def wrap(query: Any) -> Any:
    """One query as a batch of one: a text in a list, a vector as a 1-row matrix."""
    return [query] if isinstance(query, str) else np.asarray(query, dtype=np.float32)[None, :]


def tiled_vectors(rows: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, dict]:
    """SciFact's shipped MiniLM vectors tiled to ``rows`` (noise sigma 0.02, re-normalised), held-out queries, spec."""
    shipped = PrebuiltVectors.load(PREBUILT_DIR / "minilm-onnx.npz")
    base = shipped.vectors.astype(np.float32)
    rng = np.random.default_rng(seed)
    out = np.empty((rows, base.shape[1]), dtype=np.float32)
    for start in range(0, rows, len(base)):
        part = base[:min(len(base), rows - start)]
        out[start:start + len(part)] = part + rng.normal(0, 0.02, part.shape).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    queries = base[rng.choice(len(base), 400, replace=False)] + rng.normal(0, 0.05, (400, base.shape[1]))
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype(np.float32)
    return out, queries, shipped.spec


def run(args: argparse.Namespace) -> Report:
    import ray

    from sleuth.scale.shard_actors import RayShardedBM25Index, RayShardedDenseIndex, ShardActorOptions

    sizes = QUICK if args.quick else FULL
    dense_rows = args.dense_rows or sizes["dense_rows"]
    single, batch_size = args.single or sizes["single"], sizes["batch"]
    load_start = load_average()
    progress("starting a two-node Ray cluster")
    started = time.perf_counter()
    cluster = start_cluster()
    cluster_s = time.perf_counter() - started
    options = ShardActorOptions(actor_cpus=0.5)
    data: dict[str, Any] = {"cluster_start_s": cluster_s, "load_average_start": load_start, "k": args.k,
                            "clients": args.clients, "single_queries": single, "batch": batch_size,
                            "node": NODE, "actor_cpus": options.actor_cpus, "dense_rows": dense_rows}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            scifact = load_scifact()
            claims = scifact.queries
            data["bm25"] = bench_kind(
                "bm25", lambda p, s: ShardedBM25Index.build(scifact.passages, p, shards=s, show_progress=False),
                lambda p: ShardedBM25Index.load(p, threads=2), lambda p: RayShardedBM25Index(p, options),
                claims[:single], claims[single:single + batch_size], args.k, args, folder)
            vectors, queries, spec = tiled_vectors(dense_rows)
            passages = [Passage(f"v{i}", f"v{i}", "") for i in range(dense_rows)]
            data["dense"] = bench_kind(
                "dense", lambda p, s: ShardedDenseIndex.build(passages, path=p, shards=s, vectors=vectors,
                                                              encoder_spec=spec),
                lambda p: ShardedDenseIndex.load(p, threads=2), lambda p: RayShardedDenseIndex(p, options),
                list(queries[:single]), queries[single:single + batch_size], args.k, args, folder)
    finally:
        ray.shutdown()
        cluster.shutdown()
    data["load_average_end"] = load_average()
    tables = [table(kind, data[kind], rows) for kind, rows in (("bm25", 5183), ("dense", dense_rows))]
    notes = [f"2 Ray nodes of {NODE['num_cpus']} logical CPUs on one 2-core machine shared with other work (load "
             f"average {load_start} at the start, {data['load_average_end']} at the end); cluster up in "
             f"{cluster_s:.1f} s. Ratios within a run matter, absolute figures are rough.",
             "Every layout's scores equal the 1-shard in-process scores (checked in the run).",
             "Actor memory is the resident set of the actor processes: a Ray worker with sleuth imported is about "
             "200-230 MB before its shard; the in-process rows give the index files' size instead."]
    return Report(tables=tables, data=data, notes=notes)


def table(kind: str, results: dict[str, Any], rows: int) -> ResultTable:
    t = ResultTable(f"{kind}, {rows:,} rows: in-process shards (2 threads) vs shard actors on 2 nodes",
                    ["shards", "layout", "p50 ms", "p99 ms", "concurrent q/s", "batch q/s", "memory"])
    for shards, result in results.items():
        for layout in ("in-process", "ray"):
            r = result[layout]
            if layout == "ray":
                memory = ", ".join(f"node {n}: {b / 2**20:.0f} MB" for n, b in result["actor_rss_per_node"].items())
            else:
                memory = f"index files {result['index_bytes'] / 2**20:.0f} MB (all in the driver)"
            t.add(shards, layout, f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", f"{r['concurrent_qps']:.0f}",
                  f"{r['batch_qps']:.0f}", memory)
    return t


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.set_defaults(repeats=2)
    add_size_option(parser, "--dense-rows", FULL["dense_rows"], QUICK["dense_rows"], "rows of the flat dense index")
    add_size_option(parser, "--single", FULL["single"], QUICK["single"], "single queries timed per layout")
    parser.add_argument("--k", type=int, default=10, help="results per query")
    parser.add_argument("--clients", type=int, default=4, help="threads sending single queries at once")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
