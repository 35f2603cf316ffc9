"""Private-search latency against a local `sleuth serve` of the bundled SciFact (BM25), and the nDCG@10 check.

Latency: real SciFact claims, each searched privately (obfuscate n times, send to the engine over HTTP, pool the top
100 of each, rerank locally) by two client set-ups, alternating query by query so that the load of the shared
machine hits both alike: ``before`` (torch MiniLM over the whole pool at 256 tokens, one request at a time) and
``after`` (the client's defaults: int8 ONNX MiniLM over the top of the pool by local BM25, concurrent requests). The local vector cache is emptied before every search (a cold search: nothing seen before).
Models are loaded once (as in the service or a long-lived client); the time is the search itself.

Effectiveness (``--ndcg``): Vaswani, 93 queries, as docs/privacy/README.md measures it (engine BM25 in process,
20 x 100 pooled, seed 0, GloVe restricted to the collection's words): nDCG@10 of the local rerank, ``before``
(minilm-onnx over the whole pool, as the README's figures) against ``after``.

    python -m bench.private_search_bench [--queries 10] [--n 6 20] [--before-queries 3] [--ndcg]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.common import Report, ResultTable, base_parser, bench_main, load_average, progress, ratio
from sleuth.corpus.model import Query
from sleuth.systems.private_search.client import PrivateSearch
from sleuth.systems.private_search.rescore import DEFAULT_DEPTH, DEFAULT_ENCODER, TextRescore, local_reranker

NAME = "private_search_bench"
PORT = 8761
EPSILON = 12.5
MECHANISM = "vickrey-mahalanobis"


def start_engine(port: int) -> subprocess.Popen:
    """`sleuth serve --pipeline bm25` (the bundled SciFact) on 127.0.0.1:port, once it answers /ready."""
    import httpx

    process = subprocess.Popen([sys.executable, "-m", "sleuth", "serve", "--pipeline", "bm25", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/ready", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if process.poll() is not None:
            raise RuntimeError("sleuth serve exited")
        time.sleep(0.5)
    process.kill()
    raise RuntimeError("sleuth serve did not start")


def set_ups(alternatives: Sequence[str]) -> dict[str, tuple[TextRescore, int]]:
    """The clients' rerankers and engine concurrency: before, after (the defaults) and ENCODER@DEPTH alternatives."""
    clients = {"before": (local_reranker("minilm", depth=None), 1), "after": (local_reranker(), 8)}
    for spec in alternatives:
        encoder, _, depth = spec.partition("@")
        clients[spec] = (local_reranker(encoder, depth=int(depth) if depth else None), 8)
    return clients


def timed_search(client: PrivateSearch, query: Query) -> dict[str, float]:
    """Seconds per phase of one private search with an empty vector cache."""
    client.reranker._cache.clear()
    cpu = time.process_time()
    start = time.perf_counter()
    obfuscated = client.obfuscations([query])
    t1 = time.perf_counter()
    pools, sent = client.pools([query], obfuscated)
    t2 = time.perf_counter()
    client.rerank([query], pools, sent)
    t3 = time.perf_counter()
    return {"obfuscate_s": t1 - start, "engine_s": t2 - t1, "rerank_s": t3 - t2, "total_s": t3 - start,
            "cpu_s": time.process_time() - cpu, "pool": len(pools[query.id]), "sent": len(sent[query.id])}


def latency(args: argparse.Namespace) -> tuple[ResultTable, dict[str, Any]]:
    from sleuth.corpus.beir import load_beir
    from sleuth.corpus.bundled import bundled_dataset_dir
    from sleuth.systems.private_search.registry import make_obfuscator
    from sleuth.systems.private_search.remote import RemoteEngine

    queries = load_beir(bundled_dataset_dir(), "train").queries[:args.queries]
    engine_process = None if args.engine else start_engine(PORT)
    url = args.engine or f"http://127.0.0.1:{PORT}"
    try:
        obfuscator = make_obfuscator(MECHANISM)
        clients = {name: PrivateSearch(obfuscator, RemoteEngine.sleuth(url, workers=workers), reranker,
                                       n=max(args.n), epsilon=EPSILON, seed=0)
                   for name, (reranker, workers) in set_ups(args.alternatives).items()}
        for client in clients.values():  # warm-up: thread pools, FAISS, the engine's caches
            client.n = 1
            timed_search(client, queries[0])
        runs: dict[tuple[str, int], list[dict[str, float]]] = {}
        loads = [load_average()]
        for n in args.n:
            for i, query in enumerate(queries):
                names = [name for name in clients if name != "before" or i < args.before_queries]
                for name in names if i % 2 == 0 else names[::-1]:
                    clients[name].n = n
                    runs.setdefault((name, n), []).append(timed_search(clients[name], query))
                progress(f"n={n} query {i + 1}/{len(queries)}: " + ", ".join(
                    f"{name} {runs[(name, n)][-1]['total_s']:.2f} s" for name in names))
        loads.append(load_average())
    finally:
        if engine_process is not None:
            engine_process.terminate()
    table = ResultTable(f"Private search latency over SciFact BM25 (sleuth serve on loopback), cold cache, "
                        f"load average {loads[0]} -> {loads[1]}",
                        ["client", "n", "searches", "p50 s", "max s", "obfuscate s", "engine s", "rerank s",
                         "client CPU s", "pool", "p50 before / after (same queries)"])
    data: dict[str, Any] = {"load_average": loads, "queries": len(queries), "runs": {}}
    for (name, n), rows in sorted(runs.items(), key=lambda item: (item[0][1], item[0][0] != "before")):
        med = {key: float(np.median([r[key] for r in rows])) for key in rows[0]}
        same = runs[("after", n)][:len(runs.get(("before", n), []))]
        speedup = ratio(med["total_s"], float(np.median([r["total_s"] for r in same]))) if name == "before" else ""
        table.add(name, n, len(rows), med["total_s"], max(r["total_s"] for r in rows), med["obfuscate_s"],
                  med["engine_s"], med["rerank_s"], med["cpu_s"], med["pool"], speedup)
        data["runs"][f"{name}@{n}"] = {"median": med, "rows": rows}
    return table, data


def effectiveness(args: argparse.Namespace) -> tuple[ResultTable, dict[str, Any]]:
    from sleuth.cli.common import corpus_source, workspace
    from sleuth.corpus.qrels import read_qrels
    from sleuth.corpus.trec import read_trec_topics
    from sleuth.paths import shared_data_dir
    from sleuth.pipelines.index_stage import bm25_retrieve
    from sleuth.systems.private_search.evaluation import NoObfuscation, evaluate_system
    from sleuth.systems.private_search.registry import build_obfuscators, corpus_words
    from sleuth.systems.private_search.remote import StageEngine

    folder = shared_data_dir() / "vaswani"
    qrels = read_qrels(folder / "qrels")
    queries = [q for q in read_trec_topics(folder / "query-text.trec") if q.id in qrels]
    ws = workspace(corpus_source(folder / "doc-text.trec", None), "cpu", False)
    engine = StageEngine(bm25_retrieve(ws, 100), name="bm25")
    obfuscator = build_obfuscators([MECHANISM], "glove-6b-50d", corpus_words(folder / "doc-text.trec"),
                                   "drop")[MECHANISM]
    rerankers = {"before": local_reranker("minilm-onnx", depth=None)}
    for depth in args.depths:
        rerankers[f"top {depth}"] = local_reranker(depth=depth)
    table = ResultTable(f"Vaswani ({len(queries)} queries): nDCG@10 of the local rerank, 20 x 100 pooled, seed 0; "
                        "before = minilm-onnx over the whole pool; top D = the top D of the pool by local BM25, "
                        f"{DEFAULT_ENCODER}", ["system", *rerankers, *(f"{name} - before" for name in rerankers
                                                               if name != "before"), "pooled recall@100"])
    data: dict[str, Any] = {}
    for label, system, eps in (("original", NoObfuscation(), None), (f"{MECHANISM}@{EPSILON:g}", obfuscator,
                                                                       EPSILON)):
        results = {}
        for name, reranker in rerankers.items():
            progress(f"vaswani {label}: {name}")
            results[name] = evaluate_system(label, system, eps, queries, qrels, engine, reranker, reranker.encoder,
                                            n=20, depth=100, seed=0)
        before = results["before"].ndcg10
        table.add(label, *(r.ndcg10 for r in results.values()),
                  *(r.ndcg10 - before for name, r in results.items() if name != "before"),
                  results["before"].pooled_recall)
        data[label] = {name: r.to_dict() for name, r in results.items()}
    return table, data


def run(args: argparse.Namespace) -> Report:
    tables, data = [], {}
    if args.queries:
        table, data["latency"] = latency(args)
        tables.append(table)
    if args.ndcg:
        table, data["ndcg"] = effectiveness(args)
        tables.append(table)
    notes = [f"{MECHANISM} at epsilon {EPSILON:g}, GloVe 6B 50-d; `before` = torch all-MiniLM-L6-v2 (256 tokens) over "
             "the whole pool, one HTTP request at a time; `after` = the client's defaults (encoder "
             f"{DEFAULT_ENCODER}, the top {DEFAULT_DEPTH} of the pool by local BM25 with the original query, 8 "
             "requests in flight)",
             f"the `before` client runs on the first {args.before_queries} queries only (it takes minutes per "
             "search on this shared machine); the ratio column compares it with `after` on those same queries",
             f"OMP/ORT threads: default; os.cpu_count() = {os.cpu_count()}"]
    return Report(tables=tables, data=data, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10, help="SciFact claims searched (0: no latency run)")
    parser.add_argument("--before-queries", type=int, default=3, help="of which the `before` client searches")
    parser.add_argument("--n", type=int, nargs="+", default=[6, 20], help="obfuscated queries per search")
    parser.add_argument("--engine", help="URL of a running engine (default: start sleuth serve on port 8761)")
    parser.add_argument("--ndcg", action="store_true", help="also the Vaswani nDCG@10 check")
    parser.add_argument("--alternatives", nargs="*", default=[], help="more clients to time, ENCODER@DEPTH")
    parser.add_argument("--depths", type=int, nargs="+", default=[50], help="rerank depths of the nDCG check")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
