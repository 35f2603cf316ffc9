"""DP query obfuscation throughput: 1,000 real queries x 20 obfuscations with the 400k-word GloVe table.

Queries are the 1,000 NQ-open questions of the shared data (real search-engine questions). The table is GloVe 6B
50-d restricted to its alphabetic words (the paper's filter). Everything runs on ONE core (FAISS and BLAS limited to
one thread), so queries/s is per core. Side by side: the vectorised batch (all words of all queries, one exact FAISS
search) against the same batch with a generator a query (``obfuscate_each``: what a private search under an
integer seed runs, so a query's obfuscations do not hang on its batch) and against calling the obfuscator query by
query (what it ran before), and the time split between noise sampling and the search. Goal: at least 200 obfuscated queries per second per core.

    python -m bench.privacy_bench [--quick] [--queries 1000] [--n 20] [--epsilon 12.5] [--mechanisms ...]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before numpy/faiss load their thread pools: per-core figures
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from bench.common import (  # noqa: E402
    Report,
    ResultTable,
    add_size_option,
    base_parser,
    bench_main,
    measure_interleaved,
    progress,
    ratio,
    time_call,
)
from sleuth.corpus.questions import read_questions  # noqa: E402
from sleuth.paths import shared_data_dir  # noqa: E402
from sleuth.systems.private_search.obfuscator import text_rng, tokenize  # noqa: E402
from sleuth.systems.private_search.registry import MECHANISMS, load_vocabulary_table, make_obfuscator  # noqa: E402

NAME = "privacy_bench"
GOAL_PER_CORE = 200.0
FULL_QUERIES, QUICK_QUERIES = 1000, 100
PER_QUERY_SAMPLE = 50  # queries obfuscated one call each (the slow way), for the side-by-side ratio
SPLIT_SAMPLE = 200  # queries whose batch is timed in two parts: noise sampling, then the nearest-word search


def one_thread() -> None:
    """Pin FAISS to one OpenMP thread."""
    import faiss

    faiss.omp_set_num_threads(1)


def cpu_timed(fn: Callable[[], Any], seconds: list[float]) -> Callable[[], Any]:
    """``fn`` that also appends the CPU seconds of each call to ``seconds`` (robust to other processes' load)."""
    def timed() -> Any:
        start = time.process_time()
        value = fn()
        seconds.append(time.process_time() - start)
        return value

    return timed


def cpu_call(fn: Callable[[], Any]) -> tuple[float, Any]:
    """CPU seconds of one call of ``fn`` and its value."""
    seconds: list[float] = []
    value = cpu_timed(fn, seconds)()
    return seconds[0], value


def split_timings(obfuscator, queries: list[str], n: int, epsilon: float) -> dict[str, float]:
    """CPU seconds spent drawing noise and searching the nearest words for a batch (one run each)."""
    mechanism = obfuscator.mechanism
    parsed = obfuscator.word_rows(queries)
    rows = np.concatenate([np.tile([r for r in items if not isinstance(r, str)], n) for items in parsed])
    rng = np.random.default_rng(0)
    noise_s, noisy = cpu_call(lambda: mechanism.perturb(rows.astype(np.int64), epsilon, rng))
    search_s, _ = cpu_call(lambda: mechanism.choose(noisy, rng))
    return {"noise_s": noise_s, "search_s": search_s, "words": int(len(rows))}


def run(args: argparse.Namespace) -> Report:
    one_thread()
    count = args.queries or (QUICK_QUERIES if args.quick else FULL_QUERIES)
    path = shared_data_dir() / "nq" / "questions.jsonl"
    queries = [q.text for q in read_questions(path)][:count]
    words_per_query = float(np.mean([len(tokenize(q)) for q in queries]))
    progress("loading the GloVe table (alphabetic words of 400,000)")
    load_s, table = time_call(load_vocabulary_table)
    table.faiss_index()
    table_rows = ResultTable(f"Obfuscating {len(queries)} NQ questions x {args.n} (epsilon {args.epsilon:g}, "
                             f"{len(table):,} words x {table.dim}, 1 core)",
                             ["mechanism", "obfuscated queries / CPU s", "words / CPU s", "CPU s", "queries / wall s",
                              "goal 200/s", "noise share", "search share", "a generator a query q/CPU s",
                              "per-query calls q/CPU s", "batch / per-query", "a generator a query / per-query"])
    data = {"queries": len(queries), "n": args.n, "epsilon": args.epsilon, "vocabulary": len(table),
            "words_per_query": words_per_query, "table_load_s": load_s, "mechanisms": {}}
    sample = queries[:min(PER_QUERY_SAMPLE, len(queries))]
    for name in args.mechanisms:
        obfuscator = make_obfuscator(name, embeddings=table)
        progress(f"{name}: batch of {len(queries)} x {args.n}, and {len(sample)} queries one call each")
        cpu: dict[str, list[float]] = {"batch": [], "each": [], "per_query": []}
        timings = measure_interleaved({
            "batch": cpu_timed(lambda: obfuscator.obfuscate(queries, args.n, args.epsilon, seed=1), cpu["batch"]),
            "each": cpu_timed(lambda: obfuscator.obfuscate_each(queries, args.n, args.epsilon,
                                                                [text_rng(1, q) for q in queries]), cpu["each"]),
            "per_query": cpu_timed(lambda: [obfuscator.obfuscate([q], args.n, args.epsilon, seed=1) for q in sample],
                                   cpu["per_query"]),
        }, repeats=args.repeats, warmup=False)
        batch_cpu, single_cpu = float(np.median(cpu["batch"])), float(np.median(cpu["per_query"]))
        batch_qps = len(queries) * args.n / batch_cpu
        each_qps = len(queries) * args.n / float(np.median(cpu["each"]))
        single_qps = len(sample) * args.n / single_cpu
        split = split_timings(obfuscator, queries[:SPLIT_SAMPLE], args.n, args.epsilon)
        total = split["noise_s"] + split["search_s"]
        words = sum(len(r) for r in obfuscator.word_rows(queries)) * args.n
        words_s = words / batch_cpu
        table_rows.add(name, batch_qps, words_s, batch_cpu, len(queries) * args.n / timings["batch"].median,
                       "met" if batch_qps >= GOAL_PER_CORE else "missed", ratio(split["noise_s"], total),
                       ratio(split["search_s"], total), each_qps, single_qps, ratio(batch_qps, single_qps),
                       ratio(each_qps, single_qps))
        data["mechanisms"][name] = {"batch": timings["batch"].summary(), "per_query": timings["per_query"].summary(),
                                    "each": timings["each"].summary(), "each_cpu_s": cpu["each"],
                                    "generator_a_query_qps": each_qps,
                                    "batch_cpu_s": cpu["batch"], "per_query_cpu_s": cpu["per_query"],
                                    "obfuscated_queries_per_cpu_s": batch_qps, "per_query_calls_qps": single_qps,
                                    "wall_queries_per_s": len(queries) * args.n / timings["batch"].median,
                                    "words_per_cpu_s": words_s, "split_on_queries": SPLIT_SAMPLE, **split}
    notes = [f"{len(queries)} NQ-open questions, {words_per_query:.1f} words each on average (TREC DL'19 topics: "
             "5.4); throughput in words/s carries over to other query lengths",
             "exact nearest-word search: FAISS IndexFlatL2 over the whole vocabulary, one thread (OMP_NUM_THREADS=1)",
             "per core = per CPU second of this single-threaded process (time.process_time), so the load other "
             "processes put on the shared machine does not count; wall-clock throughput is shown beside it",
             f"table load (memory-mapped .npy, alphabetic filter, FAISS index): {load_s:.1f} s, once per process"]
    return Report(tables=[table_rows], data=data, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    add_size_option(parser, "--queries", FULL_QUERIES, QUICK_QUERIES, "how many queries")
    parser.add_argument("--n", type=int, default=20, help="obfuscated queries per query")
    parser.add_argument("--epsilon", type=float, default=12.5)
    parser.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    parser.set_defaults(repeats=1)
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
