"""Service load: `sleuth serve` over a BM25 index of SciFact on 127.0.0.1, hit by N POST /search requests at
concurrency C; throughput, latency percentiles and errors.

The server runs as a subprocess on a free loopback port and is stopped at the end. Requests (SciFact queries, k=10,
round robin) are spread over C threads, each with its own keep-alive httpx client; the run is bounded by the request
count and by --max-seconds (whichever comes first). One timed run after an untimed warm-up of 50 requests.

    python -m bench.service_bench [--requests 2000] [--concurrency 16] [--max-seconds 120] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from bench.common import Report, ResultTable, base_parser, bench_main, load_scifact, progress, time_call
from sleuth.index.bm25 import BM25Index

NAME = "service_bench"
HOST = "127.0.0.1"
STARTUP_SECONDS = 120
QUICK_REQUESTS = 300


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def start_server(index: Path, port: int) -> subprocess.Popen:
    """`sleuth serve --index` on the loopback port; returns once /ready answers 200 (fails after a bound)."""
    process = subprocess.Popen([sys.executable, "-m", "sleuth", "serve", "--index", str(index), "--host", HOST,
                                "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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


def load(url: str, queries: list[str], requests: int, concurrency: int, max_seconds: float) -> dict:
    """Send ``requests`` searches over ``concurrency`` threads (stopping at ``max_seconds``); latencies and errors."""
    counter, lock = itertools.count(), threading.Lock()
    latencies: list[float] = []
    errors: list[str] = []
    deadline = time.monotonic() + max_seconds

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter)
                if i >= requests:
                    return
                started = time.perf_counter()
                try:
                    response = client.post("/search", json={"query": queries[i % len(queries)], "k": 10})
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
    return {"latencies": latencies, "errors": errors, "wall_s": wall, "stopped_by_time": time.monotonic() >= deadline}


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))]


def run(args: argparse.Namespace) -> Report:
    """Build the index, start the server, warm up, run the bounded load, stop the server."""
    requests = args.requests or (QUICK_REQUESTS if args.quick else 2000)
    data = load_scifact()
    with tempfile.TemporaryDirectory(prefix="sleuth-service-bench-") as tmp:
        index = Path(tmp) / "scifact"
        progress(f"build BM25 index of {len(data.passages)} passages")
        BM25Index.build(data.passages, index, show_progress=False)
        port = free_port()
        progress(f"start sleuth serve on {HOST}:{port}")
        startup_s, process = time_call(lambda: start_server(index, port))
        try:
            url = f"http://{HOST}:{port}"
            load(url, data.queries, 50, min(4, args.concurrency), args.max_seconds)  # warm-up, untimed
            progress(f"{requests} requests at concurrency {args.concurrency} (at most {args.max_seconds:g} s)")
            result = load(url, data.queries, requests, args.concurrency, args.max_seconds)
        finally:
            process.kill()
            process.wait(timeout=30)
    lat = result["latencies"]
    done = len(lat)
    summary = {"requests_sent": done, "requests_planned": requests, "concurrency": args.concurrency,
               "errors": len(result["errors"]), "error_kinds": sorted(set(result["errors"])),
               "wall_s": result["wall_s"], "throughput_rps": done / result["wall_s"],
               "p50_ms": 1000 * percentile(lat, 50), "p90_ms": 1000 * percentile(lat, 90),
               "p99_ms": 1000 * percentile(lat, 99), "max_ms": 1000 * max(lat),
               "mean_ms": 1000 * statistics.fmean(lat), "stopped_by_time": result["stopped_by_time"],
               "server_startup_s": startup_s, "passages": len(data.passages), "k": 10,
               "cpu_count": os.cpu_count()}
    table = ResultTable(f"POST /search on 127.0.0.1: BM25 over {len(data.passages)} SciFact passages, k=10",
                        ["requests", "concurrency", "errors", "wall s", "req/s", "p50 ms", "p99 ms", "max ms"])
    table.add(done, args.concurrency, len(result["errors"]), result["wall_s"], summary["throughput_rps"],
              summary["p50_ms"], summary["p99_ms"], summary["max_ms"])
    notes = [f"server startup to /ready: {startup_s:.1f} s; client and server share this machine "
             f"({os.cpu_count()} CPUs); one timed run (--repeats is not used)"]
    if result["stopped_by_time"]:
        notes.append(f"stopped by the {args.max_seconds:g} s bound before all requests were sent")
    return Report(tables=[table], data=summary, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=0, help=f"requests to send (default 2000; --quick: "
                                                                 f"{QUICK_REQUESTS})")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--max-seconds", type=float, default=120.0, help="stop sending after this many seconds")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
