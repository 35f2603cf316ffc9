"""Service load and response size: `sleuth serve` on 127.0.0.1 over BM25 (all SciFact) and dense (int8 ONNX
MiniLM over the first --dense-passages) indexes, hit by N POST /search requests at concurrency C per pipeline;
p50/p99 latency, throughput and errors; then the response sizes of a large batch and of a very long document, and
what 16 timed-out batches leave behind (time until a light search answers, queries run after the 504s).

With --baseline-tree (another checkout, e.g. main before a change) a second server runs that tree's code on the same
indexes, and both are measured side by side, round after round (interleaved), in one run. Servers run as
subprocesses on free loopback ports and are stopped at the end. Requests (SciFact queries, k=10, round robin) are
spread over C threads, each with its own keep-alive httpx client; every load is bounded by the request count and by
--max-seconds. An untimed warm-up of 50 requests per server and pipeline comes first.

    python -m bench.service_bench [--requests 2000] [--concurrency 32] [--repeats 2] [--baseline-tree OTHER_CHECKOUT]
                                  [--dense-passages 1000] [--long-doc-mb 50] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from bench.common import (
    Report,
    ResultTable,
    add_size_option,
    base_parser,
    bench_main,
    load_average,
    load_scifact,
    progress,
    time_call,
)
from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex
from sleuth.models.registry import load_encoder

NAME = "service_bench"
HOST = "127.0.0.1"
STARTUP_SECONDS = 180
FULL_REQUESTS = 2000
QUICK = {"requests": 300, "dense_passages": 200, "long_doc_mb": 5}
PIPELINES = ("bm25", "dense")
HERE = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def start_server(tree: Path, indexes: list[Path], port: int, *options: str) -> subprocess.Popen:
    """`sleuth serve --index ...` with ``tree``'s code on the loopback port; returns once /ready answers 200."""
    command = [sys.executable, "-m", "sleuth", "serve", *[a for i in indexes for a in ("--index", str(i))],
               "--host", HOST, "--port", str(port), *options]
    process = subprocess.Popen(command, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(tree)})
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"sleuth serve exited: {process.stderr.read()}")
        try:
            if httpx.get(f"http://{HOST}:{port}/ready", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"sleuth serve did not become ready within {STARTUP_SECONDS} s")


def load(url: str, pipeline: str, queries: list[str], requests: int, concurrency: int, max_seconds: float) -> dict:
    """Send ``requests`` searches over ``concurrency`` threads (stopping at ``max_seconds``); latencies and errors."""
    counter, lock = itertools.count(), threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + max_seconds

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter)
                if i >= requests:
                    return
                started = time.perf_counter()
                try:
                    response = client.post("/search", json={"query": queries[i % len(queries)], "k": 10,
                                                            "pipeline": pipeline})
                    ok = response.status_code == 200 and bool(response.json()["hits"])
                    problem = "" if ok else f"HTTP {response.status_code}"
                except (httpx.HTTPError, ValueError, KeyError) as exc:
                    problem = type(exc).__name__
                elapsed = time.perf_counter() - started
                with lock:
                    latencies.append(elapsed)
                    if problem:
                        errors.append(problem)

    def run_all() -> None:
        threads = [threading.Thread(target=worker) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    wall, _ = time_call(run_all)
    lat = latencies or [float("nan")]
    return {"requests": len(latencies), "errors": len(errors), "error_kinds": sorted(set(errors)), "wall_s": wall,
            "throughput_rps": len(latencies) / wall, "p50_ms": 1000 * percentile(lat, 50),
            "p99_ms": 1000 * percentile(lat, 99), "max_ms": 1000 * max(lat),
            "stopped_by_time": time.monotonic() >= deadline}


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))]


def response_size(url: str, path: str, body: dict) -> dict:
    """Request and response bytes, status and seconds of one request."""
    content = json.dumps(body).encode()
    started = time.perf_counter()
    response = httpx.post(url + path, content=content, headers={"content-type": "application/json"}, timeout=600)
    return {"request_bytes": len(content), "status": response.status_code, "response_bytes": len(response.content),
            "seconds": time.perf_counter() - started}


def timed_out_batches(tree: Path, index: Path, queries: list[str], folder: Path, batches: int = 16) -> dict:
    """A server with a 0.5 s time limit gets ``batches`` concurrent batches of 64 queries at k=1000 (all 504):
    how long until a light search answers 200, and how many queries the server ran after the 504s (query log)."""
    port, log = free_port(), folder / f"queries-{tree.name}-{time.monotonic_ns()}.jsonl"
    process = start_server(tree, [index], port, "--timeout", "0.5", "--query-log", str(log))
    url = f"http://{HOST}:{port}"

    def count() -> int:
        return len(log.read_text(encoding="utf-8").splitlines()) if log.is_file() else 0

    try:
        body = {"queries": queries[:64], "k": 1000}
        with httpx.Client(base_url=url, timeout=120) as client, ThreadPoolExecutor(batches) as pool:
            statuses = sorted(set(pool.map(lambda _: client.post("/search/batch", json=body).status_code,
                                           range(batches))))
        given_up, ran_before = time.monotonic(), count()
        waited, tries = None, 0
        while waited is None and time.monotonic() - given_up < 60:
            tries += 1
            if httpx.post(url + "/search", json={"query": "vitamin d", "k": 5}, timeout=60).status_code == 200:
                waited = time.monotonic() - given_up
        time.sleep(8)  # let leftover work finish
        return {"batch_statuses": statuses, "light_search_ok_after_s": waited, "light_search_tries": tries,
                "queries_run_by_the_504s": ran_before, "queries_run_after_the_504s": count() - ran_before}
    finally:
        process.kill()
        process.wait(timeout=30)


def build_indexes(folder: Path, data, dense_passages: int, long_doc_mb: float) -> list[Path]:
    """BM25 over all passages, dense over the first ``dense_passages``, and BM25 over 20 passages plus one document
    of ``long_doc_mb`` MB (SciFact texts repeated)."""
    bm25, dense, long = folder / "bm25", folder / "dense", folder / "long"
    progress(f"build BM25 index of {len(data.passages)} passages")
    BM25Index.build(data.passages, bm25, show_progress=False)
    progress(f"build dense index (minilm-onnx) of {dense_passages} passages")
    DenseIndex.build(data.passages[:dense_passages], load_encoder("minilm-onnx"), dense, show_progress=False)
    text = " ".join(p.text for p in data.passages[:400])
    long_text = (text * (int(long_doc_mb * 1e6) // len(text) + 1))[:int(long_doc_mb * 1e6)]
    progress(f"build BM25 index with one {len(long_text) / 1e6:.0f} MB document")
    BM25Index.build([*data.passages[:20], Passage("long", "long", long_text, ("A very long document",))], long,
                    show_progress=False)
    return [bm25, dense, long]


def git_head(tree: Path) -> str:
    done = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or "?"


def run(args: argparse.Namespace) -> Report:
    """Build the indexes, start the servers, run the interleaved bounded loads and the size checks, stop them."""
    requests = args.requests or (QUICK["requests"] if args.quick else FULL_REQUESTS)
    dense_passages = QUICK["dense_passages"] if args.quick else args.dense_passages
    long_doc_mb = QUICK["long_doc_mb"] if args.quick else args.long_doc_mb
    trees = {"after": HERE} | ({"before": args.baseline_tree.resolve()} if args.baseline_tree else {})
    data = load_scifact()
    summary: dict = {"trees": {name: {"path": str(tree), "commit": git_head(tree)} for name, tree in trees.items()},
                     "requests": requests, "concurrency": args.concurrency, "load": {}, "sizes": {}}
    with tempfile.TemporaryDirectory(prefix="sleuth-service-bench-") as tmp:
        indexes = build_indexes(Path(tmp), data, dense_passages, long_doc_mb)
        servers, urls = {}, {}
        try:
            for name, tree in trees.items():
                port = free_port()
                progress(f"start sleuth serve ({name}: {tree}) on {HOST}:{port}")
                startup, servers[name] = time_call(lambda tree=tree, port=port: start_server(tree, indexes, port))
                urls[name] = f"http://{HOST}:{port}"
                summary["trees"][name]["startup_s"] = startup
            for url in urls.values():
                for pipeline in PIPELINES:
                    load(url, pipeline, data.queries, 50, min(4, args.concurrency), args.max_seconds)  # warm-up
            for round_ in range(args.repeats):
                for pipeline in PIPELINES:
                    for name in sorted(urls, reverse=True):  # before, then after
                        progress(f"round {round_ + 1}: {name}, {pipeline}: {requests} requests at concurrency "
                                 f"{args.concurrency}")
                        result = load(urls[name], pipeline, data.queries, requests, args.concurrency, args.max_seconds)
                        result["loadavg_1m"] = load_average()[0]
                        summary["load"].setdefault(f"{name}/{pipeline}", []).append(result)
            batch = {"queries": data.queries[:64], "k": 1000, "pipeline": "bm25"}
            long_batch = {"queries": [" ".join(data.passages[5].text.split()[:8])] * 4, "k": 10, "pipeline": "long"}
            for name in sorted(urls, reverse=True):
                progress(f"{name}: response sizes")
                summary["sizes"][name] = {"batch 64 x k=1000": response_size(urls[name], "/search/batch", batch),
                                          "batch 64 x k=1000, fields id,score": response_size(
                                              urls[name], "/search/batch", {**batch, "fields": ["id", "score"]}),
                                          f"4 queries, one {long_doc_mb:g} MB document":
                                              response_size(urls[name], "/search/batch", long_batch)}
        finally:
            for process in servers.values():
                process.kill()
                process.wait(timeout=30)
        summary["timeouts"] = {}
        for name in sorted(trees, reverse=True):
            progress(f"{name}: 16 timed-out batches, then a light search")
            summary["timeouts"][name] = timed_out_batches(trees[name], indexes[0], data.queries, Path(tmp))
    return report(summary, args)


def report(summary: dict, args: argparse.Namespace) -> Report:
    table = ResultTable(f"POST /search at concurrency {args.concurrency}, k=10, {summary['requests']} requests per "
                        f"run; median of {args.repeats} interleaved runs (errors summed)",
                        ["code", "pipeline", "requests", "errors", "req/s", "p50 ms", "p99 ms", "max ms", "load 1m"])
    for key, runs in sorted(summary["load"].items(), key=lambda item: (item[0].split("/")[1], item[0] != "before")):
        name, pipeline = key.split("/")
        med = {field: statistics.median(r[field] for r in runs)
               for field in ("throughput_rps", "p50_ms", "p99_ms", "max_ms", "loadavg_1m")}
        table.add(f"{name} ({summary['trees'][name]['commit']})", pipeline, sum(r["requests"] for r in runs),
                  sum(r["errors"] for r in runs), med["throughput_rps"], med["p50_ms"], med["p99_ms"], med["max_ms"],
                  med["loadavg_1m"])
    sizes = ResultTable("Response sizes (POST /search/batch)", ["code", "request", "request bytes", "status",
                                                                "response bytes", "seconds"])
    for name, checks in summary["sizes"].items():
        for what, size in checks.items():
            sizes.add(name, what, size["request_bytes"], size["status"], size["response_bytes"], size["seconds"])
    timeouts = ResultTable("16 concurrent batches (64 queries, k=1000) against --timeout 0.5, then a light search",
                           ["code", "batch statuses", "light search 200 after s", "tries", "queries run by then",
                            "queries run after the 504s"])
    for name, check in summary["timeouts"].items():
        timeouts.add(name, ",".join(map(str, check["batch_statuses"])), check["light_search_ok_after_s"],
                     check["light_search_tries"], check["queries_run_by_the_504s"], check["queries_run_after_the_504s"])
    notes = [f"{name}: {tree['path']} at {tree['commit']}, startup to /ready {tree['startup_s']:.1f} s"
             for name, tree in summary["trees"].items()]
    notes.append(f"client and server share this machine ({os.cpu_count()} CPUs, shared with other work: see load 1m)")
    if any(r["stopped_by_time"] for runs in summary["load"].values() for r in runs):
        notes.append(f"some runs were stopped by the {args.max_seconds:g} s bound before all requests were sent")
    return Report(tables=[table, sizes, timeouts], data=summary, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.set_defaults(repeats=2)
    add_size_option(parser, "--requests", FULL_REQUESTS, QUICK["requests"], "requests per run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--max-seconds", type=float, default=120.0, help="stop a run after this many seconds")
    parser.add_argument("--baseline-tree", type=Path, default=None,
                        help="a checkout whose code is measured side by side as 'before'")
    parser.add_argument("--dense-passages", type=int, default=1000, help="passages in the dense index")
    parser.add_argument("--long-doc-mb", type=float, default=50.0, help="size of the one long document")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
