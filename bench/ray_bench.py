"""Scale-out on one machine: encoding with 1 and 2 Ray encoder actors vs the plain in-process loop, sharded
search latency (BM25 and flat dense, 1/2/4 shards, 1 or 2 threads) vs the unsharded index, Ray Serve replicas.

Encoding: the first N SciFact passages with MiniLM. "plain" is the encoder in this process (model loaded once,
before timing; torch's default threads, and once limited to 1 thread like each actor); "ray xW" is :func:`sleuth.scale.ray_build.encode_on_ray` on a local Ray (2 CPUs, started once, its
start-up reported apart) with W actors of 0.5 CPU, timed end to end (actor start, one model load per actor,
encoding, gathering). The runs alternate; the vectors are compared with the plain ones (they should be equal).

Search: BM25 over all 5,183 SciFact abstracts, and flat inner product over the encoded passages' vectors tiled to
``--dense-rows`` rows (each copy perturbed by Gaussian noise and re-normalised, so the rows stay embedding-like);
each layout answers the same SciFact claims as one batch and one at a time (p50 of single-query latencies).

Serving: :mod:`sleuth.scale.ray_serve` with 1 then 2 replicas (0.5 CPU each) over a 2-shard BM25 index of SciFact,
the same GET /search requests from ``--clients`` concurrent clients.

    python -m bench.ray_bench [--quick] [--passages 1500] [--dense-rows 200000] [--clients 4] [--no-serve]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import tempfile
import time
from collections.abc import Sequence
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
    measure_interleaved,
    progress,
    ratio,
    time_call,
)
from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex, add_vectors, make_faiss_index
from sleuth.index.docstore import DocStore
from sleuth.index.sharded import ShardedBM25Index, ShardedDenseIndex
from sleuth.models.registry import load_encoder

NAME = "ray_bench"
QUICK = {"passages": 200, "dense_rows": 20_000, "queries": 100, "single": 30, "requests": 100}
FULL = {"passages": 1500, "dense_rows": 200_000, "queries": 300, "single": 100, "requests": 400}
SHARDS = (1, 2, 4)


# ---------------------------------------------------------------- encoding

def bench_encoding(texts: list[str], args: argparse.Namespace) -> tuple[dict[str, Any], np.ndarray]:
    """Plain vs Ray with 1 and 2 actors on the same texts; returns the timings and the plain vectors."""
    import ray

    from sleuth.scale.ray_build import RayOptions, encode_on_ray, encoder_facts
    from sleuth.scale.session import quiet_ray_logs

    encoder = load_encoder("minilm")
    encoder.encode_passages(texts[:32])  # warm-up
    encoder_facts("minilm", "cpu", "{}")  # the driver's one-off probe, outside the timed region
    quiet_ray_logs()
    start = time.perf_counter()
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=512 * 1024 * 1024,
             log_to_driver=False, logging_level=logging.WARNING)
    init_s = time.perf_counter() - start
    try:
        progress(f"encode {len(texts)} passages: plain, ray x1, ray x2 (x{args.encode_repeats}, alternating)")
        timings = measure_interleaved({
            "plain": lambda: encoder.encode_passages(texts),
            "plain, 1 torch thread": lambda: one_thread(lambda: encoder.encode_passages(texts)),
            "ray x1": lambda: encode_on_ray(texts, options=RayOptions(workers=1, actor_cpus=0.5))[0],
            "ray x2": lambda: encode_on_ray(texts, options=RayOptions(workers=2, actor_cpus=0.5))[0],
        }, repeats=args.encode_repeats, warmup=False)
    finally:
        ray.shutdown()
    plain = timings["plain"].result
    result = {"passages": len(texts), "ray_init_s": init_s,
              "runs": {name: {**t.summary(), "docs_per_s": len(texts) / t.median,
                              "vs_plain": ratio(t.median, timings["plain"].median),
                              "vectors_equal_plain": bool(np.array_equal(t.result, plain)),
                              "max_abs_diff": float(np.abs(t.result - plain).max())}
                       for name, t in timings.items()}}
    return result, plain


def one_thread(call):
    """``call()`` with torch limited to one intra-op thread (what each Ray actor of 0.5 CPU gets)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return call()
    finally:
        torch.set_num_threads(before)


# ---------------------------------------------------------------- serving

def bench_serving(index_dir: Path, queries: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Ray Serve with 1 and 2 replicas (0.5 CPU each) over the same sharded index: requests/s and p50 latency of
    the same GET /search requests sent by ``args.clients`` concurrent clients."""
    import json
    import socket
    import urllib.parse
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    import ray
    from ray import serve

    from sleuth.scale.ray_serve import ServeSettings, start
    from sleuth.scale.session import quiet_ray_logs

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def get(query: str) -> float:
        url = f"http://127.0.0.1:{port}/search?" + urllib.parse.urlencode({"query": query, "k": 10})
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as response:
            json.loads(response.read())
        return time.perf_counter() - started

    results = {}
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=512 * 1024 * 1024,
             log_to_driver=False, logging_level=logging.WARNING)
    quiet_ray_logs()
    try:
        for replicas in (1, 2):
            progress(f"serve: {replicas} replica(s), {len(queries)} requests from {args.clients} clients")
            deploy_s, _ = time_call(lambda: start(ServeSettings(index=[str(index_dir)]), replicas, 0.5, port=port))
            for query in queries[:10]:  # warm-up: every replica loaded, connections open
                get(query)
            with ThreadPoolExecutor(args.clients) as pool:
                wall, latencies = time_call(lambda: list(pool.map(get, queries)))
            results[f"{replicas} replica{'s' if replicas > 1 else ''}"] = {
                "deploy_s": deploy_s, "requests": len(queries), "requests_per_s": len(queries) / wall,
                "p50_ms": 1000 * statistics.median(latencies),
                "p95_ms": 1000 * float(np.percentile(latencies, 95))}
            serve.delete("sleuth")
    finally:
        serve.shutdown()
        ray.shutdown()
    return results


# ---------------------------------------------------------------- search

def latency(search, queries: list, single: int) -> float:
    """p50 seconds of one-query searches over the first ``single`` queries."""
    times = []
    for query in queries[:single]:
        seconds, _ = time_call(lambda: search([query] if isinstance(query, str) else query[None, :]))
        times.append(seconds)
    return statistics.median(times)


def search_rows(name: str, layouts: dict[str, Any], batch: Any, singles: list, repeats: int,
                k: int) -> dict[str, Any]:
    """Batch and single-query timings of every layout (interleaved), with ratios to the unsharded index."""
    progress(f"{name}: batch of {len(batch)} queries x{repeats} per layout, then {len(singles)} single queries")
    timings = measure_interleaved({label: (lambda i=index: i.search(batch, k=k)) for label, index in layouts.items()},
                                  repeats=repeats)
    reference = timings["unsharded"].result
    rows = {}
    for label, index in layouts.items():
        p50 = latency(lambda q, i=index: i.search(q, k=k), singles, len(singles))
        same = bool(np.array_equal(np.sort(timings[label].result[1], axis=1), np.sort(reference[1], axis=1)))
        rows[label] = {**timings[label].summary(), "single_p50_s": p50, "same_scores_as_unsharded": same}
    for label in rows:
        rows[label]["batch_vs_unsharded"] = ratio(rows[label]["median_s"], rows["unsharded"]["median_s"])
        rows[label]["single_vs_unsharded"] = ratio(rows[label]["single_p50_s"], rows["unsharded"]["single_p50_s"])
    return rows


def bm25_layouts(passages: list[Passage]) -> dict[str, Any]:
    layouts: dict[str, Any] = {"unsharded": BM25Index.build(passages, show_progress=False)}
    for shards in SHARDS:
        built = ShardedBM25Index.build(passages, shards=shards, show_progress=False)
        for threads in (1, 2) if shards > 1 else (1,):
            layouts[f"{shards} shards, {threads} thread{'s' if threads > 1 else ''}"] = ShardedBM25Index(
                built.shards, built.manifest, threads=threads)
    return layouts


def tiled_vectors(vectors: np.ndarray, rows: int, seed: int = 0) -> np.ndarray:
    """``rows`` unit vectors: copies of the real ones plus Gaussian noise (sigma 0.02 per dimension)."""
    rng = np.random.default_rng(seed)
    base = vectors[np.arange(rows) % len(vectors)]
    noisy = base + rng.normal(0, 0.02, base.shape).astype(np.float32)
    noisy[:len(vectors)] = vectors[:rows]
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def dense_layouts(vectors: np.ndarray, spec: dict) -> dict[str, Any]:
    docstore = DocStore([f"p{i}" for i in range(len(vectors))], [f"d{i}" for i in range(len(vectors))],
                        [""] * len(vectors), [""] * len(vectors))
    flat = make_faiss_index("Flat", vectors.shape[1])
    add_vectors(flat, vectors)
    layouts: dict[str, Any] = {"unsharded": DenseIndex(flat, docstore, spec)}
    passages = [Passage(i, i, "") for i in docstore.ids]
    for shards in SHARDS:
        built = ShardedDenseIndex.build(passages, shards=shards, show_progress=False, vectors=vectors,
                                        encoder_spec=spec)
        for threads in (1, 2) if shards > 1 else (1,):
            layouts[f"{shards} shards, {threads} thread{'s' if threads > 1 else ''}"] = ShardedDenseIndex(
                built.shards, built.manifest, threads=threads)
    return layouts


# ---------------------------------------------------------------- report

def run(args: argparse.Namespace) -> Report:
    sizes = QUICK if args.quick else FULL
    n_passages = args.passages or sizes["passages"]
    dense_rows = args.dense_rows or sizes["dense_rows"]
    data = load_scifact()
    texts = data.contents[:n_passages]
    load_before = load_average()
    encoding, vectors = bench_encoding(texts, args)
    encoder = load_encoder("minilm")
    claims = data.queries[:sizes["queries"]]
    query_vectors = encoder.encode_queries(claims)
    # BM25 batches take tens of milliseconds: many more repeats than the dense ones to tame the machine's noise
    bm25 = search_rows("bm25", bm25_layouts(data.passages), claims, claims[:sizes["single"]], 5 * args.repeats,
                       k=args.k)
    dense = search_rows("dense", dense_layouts(tiled_vectors(vectors, dense_rows), encoder.spec()), query_vectors,
                        list(query_vectors[:sizes["single"]]), args.repeats, k=args.k)
    serving = {}
    if not args.no_serve:
        with tempfile.TemporaryDirectory(prefix="ray-bench-") as tmp:
            ShardedBM25Index.build(data.passages, Path(tmp) / "bm25", shards=2, show_progress=False)
            serving = bench_serving(Path(tmp) / "bm25", data.queries[:sizes["requests"]], args)
    tables = [encoding_table(encoding), search_table("BM25", len(data.passages), len(claims), bm25, args.k),
              search_table("Flat dense", dense_rows, len(claims), dense, args.k)]
    if serving:
        tables.append(serving_table(serving, args.clients))
    notes = [f"load average before / after: {load_before} / {load_average()} (2 CPUs shared with other work: "
             "ratios measured side by side matter, absolute figures are rough)",
             f"local Ray start-up (ray.init, 2 CPUs): {encoding['ray_init_s']:.1f} s, paid once per session",
             "Ray runs include actor start-up and one model load per actor; plain has its model loaded already",
             "dense rows: real SciFact passage vectors tiled with noise (sigma 0.02) and re-normalised"]
    return Report(tables=tables, data={"encoding": encoding, "bm25_search": bm25, "dense_search": dense,
                                       "serving": serving,
                                       "sizes": {"passages": n_passages, "dense_rows": dense_rows,
                                                 "queries": len(claims), "k": args.k}}, notes=notes)


def encoding_table(encoding: dict[str, Any]) -> ResultTable:
    table = ResultTable(f"Encoding {encoding['passages']} SciFact passages with MiniLM (median of alternating runs)",
                        ["path", "seconds", "passages/s", "time / plain", "vectors equal plain"])
    for name, r in encoding["runs"].items():
        table.add(name, r["median_s"], r["docs_per_s"], r["vs_plain"], r["vectors_equal_plain"])
    return table


def serving_table(serving: dict[str, Any], clients: int) -> ResultTable:
    table = ResultTable(f"Ray Serve over a 2-shard BM25 index of SciFact: GET /search k=10, {clients} concurrent "
                        "clients", ["replicas", "deploy s", "requests", "requests/s", "p50 ms", "p95 ms"])
    for label, r in serving.items():
        table.add(label, r["deploy_s"], r["requests"], r["requests_per_s"], r["p50_ms"], r["p95_ms"])
    return table


def search_table(kind: str, rows: int, queries: int, results: dict[str, Any], k: int) -> ResultTable:
    table = ResultTable(f"{kind} search over {rows:,} rows, k={k}: batch of {queries} queries and single-query p50",
                        ["layout", "batch ms", "batch / unsharded", "single p50 ms", "single / unsharded",
                         "same scores"])
    for label, r in results.items():
        table.add(label, r["median_s"] * 1000, r["batch_vs_unsharded"], r["single_p50_s"] * 1000,
                  r["single_vs_unsharded"], r["same_scores_as_unsharded"])
    return table


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    add_size_option(parser, "--passages", FULL["passages"], QUICK["passages"], "passages to encode")
    add_size_option(parser, "--dense-rows", FULL["dense_rows"], QUICK["dense_rows"], "rows of the flat dense layouts")
    parser.add_argument("--encode-repeats", type=int, default=1, help="timed encoding runs per path")
    parser.add_argument("--k", type=int, default=100, help="results per query")
    parser.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients of the serving test")
    parser.add_argument("--no-serve", action="store_true", help="skip the Ray Serve measurement")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
