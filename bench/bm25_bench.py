"""BM25: sleuth's BM25Index against raw bm25s and rank_bm25 on SciFact and Vaswani (build time, queries/s).

Every competitor is timed end to end on the same strings (title + text, as sleuth's document store builds them):
sleuth includes its analyser and document store; raw bm25s runs ``bm25s.tokenize`` with the same settings
(stopwords "en", PyStemmer english, same token pattern) and ``BM25(method="lucene", k1=0.9, b=0.4)``; rank_bm25
gets the same tokens (tokenised inside its timed region too) and ``BM25Okapi(k1=0.9, b=0.4)``.

    python -m bench.bm25_bench [--datasets scifact vaswani] [--k 100] [--rank-bm25-queries N] [--repeats 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

import bm25s
import numpy as np
import Stemmer
from rank_bm25 import BM25Okapi

from bench.common import (
    DATASETS,
    Dataset,
    Report,
    ResultTable,
    base_parser,
    bench_main,
    measure_interleaved,
    profile_diff,
    progress,
    ratio,
)
from sleuth.index.bm25 import BM25Index, BM25Params
from sleuth.index.tokenize import Analyzer

NAME = "bm25_bench"
PARAMS = BM25Params(method="lucene", k1=0.9, b=0.4)
STOPWORDS, STEMMER = "en", "english"
MAX_OVERHEAD = 1.10
QUICK_RANK_BM25_QUERIES = 100


# ---------------------------------------------------------------- competitors

def raw_tokenize(texts: list[str], stemmer: Stemmer.Stemmer, return_ids: bool = True) -> Any:
    """bm25s.tokenize with the settings of sleuth's default Analyzer."""
    return bm25s.tokenize(texts, lower=True, stopwords=STOPWORDS, stemmer=stemmer, return_ids=return_ids,
                          show_progress=False)


def raw_build(contents: list[str], stemmer: Stemmer.Stemmer, token_strings: bool = False) -> bm25s.BM25:
    """Raw bm25s as its README uses it: tokenize to ids, then index.

    ``token_strings`` takes sleuth's route instead (tokens as strings, so ``index`` rebuilds the vocabulary): a
    diagnostic that isolates the cost of that route.
    """
    model = bm25s.BM25(method=PARAMS.method, k1=PARAMS.k1, b=PARAMS.b, delta=PARAMS.delta)
    model.index(raw_tokenize(contents, stemmer, return_ids=not token_strings), show_progress=False)
    return model


def raw_search(model: bm25s.BM25, queries: list[str], stemmer: Stemmer.Stemmer, k: int) -> np.ndarray:
    """Top-k document rows per query with raw bm25s (batched retrieve)."""
    return model.retrieve(raw_tokenize(queries, stemmer), k=k, show_progress=False).documents


def sleuth_build(dataset: Dataset) -> BM25Index:
    """sleuth's in-memory BM25 index of the passages (analyser, document store and bm25s model)."""
    return BM25Index.build(dataset.passages, params=PARAMS, analyzer=Analyzer(), show_progress=False)


def rank_bm25_build(contents: list[str], stemmer: Stemmer.Stemmer) -> BM25Okapi:
    """rank_bm25 Okapi over the same tokens as bm25s (tokenisation included)."""
    return BM25Okapi(raw_tokenize(contents, stemmer, return_ids=False), k1=PARAMS.k1, b=PARAMS.b)


def rank_bm25_search(model: BM25Okapi, queries: list[str], stemmer: Stemmer.Stemmer, k: int) -> np.ndarray:
    """Top-k rows per query with rank_bm25 (it scores every document for every query, one query at a time)."""
    tops = []
    for tokens in raw_tokenize(queries, stemmer, return_ids=False):
        scores = model.get_scores(tokens)
        top = np.argpartition(-scores, k - 1)[:k]
        tops.append(top[np.argsort(-scores[top], kind="stable")])
    return np.array(tops)


# ---------------------------------------------------------------- agreement

def top_agreement(a: np.ndarray, b: np.ndarray, depth: int = 10) -> dict[str, float]:
    """Fraction of queries whose top-``depth`` rows are identical in order, and identical as sets; mean overlap."""
    a, b = np.asarray(a)[:, :depth], np.asarray(b)[:, :depth]
    same_sets = [set(x) == set(y) for x, y in zip(a, b)]
    overlap = [len(set(x) & set(y)) / depth for x, y in zip(a, b)]
    return {"ordered": float(np.mean(np.all(a == b, axis=1))), "as_set": float(np.mean(same_sets)),
            "mean_overlap": float(np.mean(overlap))}


# ---------------------------------------------------------------- one dataset

def bench_dataset(dataset: Dataset, args: argparse.Namespace) -> dict[str, Any]:
    """Build and query timings of the three engines on one dataset, interleaved, plus top-10 agreement."""
    stemmer, contents, queries = Stemmer.Stemmer(STEMMER), dataset.contents, dataset.queries
    k = min(args.k, len(contents))
    limit = args.rank_bm25_queries or (QUICK_RANK_BM25_QUERIES if args.quick else 0)
    subset = queries[:limit] if limit else queries
    progress(f"{dataset.name}: build x{args.repeats} (+1 warm-up), {len(contents):,} docs")
    builds = measure_interleaved({
        "sleuth": lambda: sleuth_build(dataset),
        "bm25s": lambda: raw_build(contents, stemmer),
        "rank_bm25": lambda: rank_bm25_build(contents, stemmer),
        "bm25s_strings": lambda: raw_build(contents, stemmer, token_strings=True),
    }, repeats=args.repeats)
    index, raw, okapi = (builds[n].result for n in ("sleuth", "bm25s", "rank_bm25"))
    progress(f"{dataset.name}: search x{args.repeats} (+1 warm-up), {len(queries)} queries, k={k}")
    searches = measure_interleaved({
        "sleuth": lambda: index.search(queries, k=k)[0],
        "bm25s": lambda: raw_search(raw, queries, stemmer, k),
        "rank_bm25": lambda: rank_bm25_search(okapi, subset, stemmer, k),
    }, repeats=args.repeats)
    result = {"docs": len(contents), "queries": len(queries), "rank_bm25_queries": len(subset), "k": k,
              "build": {n: t.summary() for n, t in builds.items()},
              "search": {n: t.summary() for n, t in searches.items()},
              "overhead": {"build": ratio(builds["sleuth"].median, builds["bm25s"].median),
                           "build_bm25s_strings": ratio(builds["bm25s_strings"].median, builds["bm25s"].median),
                           "search": ratio(searches["sleuth"].median, searches["bm25s"].median)},
              "top10_sleuth_vs_bm25s": top_agreement(searches["sleuth"].result, searches["bm25s"].result),
              "top10_rank_bm25_vs_bm25s": top_agreement(searches["rank_bm25"].result,
                                                       searches["bm25s"].result[:len(subset)])}
    result["profile"] = profile_overheads(result["overhead"], dataset, index, raw, stemmer, k, args.profile)
    return result


def profile_overheads(overhead: dict[str, float], dataset: Dataset, index: BM25Index, raw: bm25s.BM25,
                      stemmer: Stemmer.Stemmer, k: int, force: bool) -> dict[str, Any]:
    """cProfile sleuth against raw bm25s for each phase whose overhead ratio exceeds MAX_OVERHEAD (or all)."""
    pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
        "build": (lambda: sleuth_build(dataset), lambda: raw_build(dataset.contents, stemmer)),
        "search": (lambda: index.search(dataset.queries, k=k), lambda: raw_search(raw, dataset.queries, stemmer, k)),
    }
    return {phase: profile_diff(*pair) for phase, pair in pairs.items() if force or overhead[phase] > MAX_OVERHEAD}


# ---------------------------------------------------------------- report

def run(args: argparse.Namespace) -> Report:
    """Benchmark every requested dataset and tabulate build time, queries/s and sleuth's overhead."""
    results = {name: bench_dataset(DATASETS[name](), args) for name in args.datasets}
    tables = [engines_table(results), overhead_table(results)]
    notes = [f"rank_bm25 queries/s on the first {r['rank_bm25_queries']} of {r['queries']} {name} queries"
             for name, r in results.items() if r["rank_bm25_queries"] < r["queries"]]
    notes += [f"{name}: {r['docs']:,} docs, {r['queries']} queries" for name, r in results.items()]
    notes += [profile_note(name, phase, p) for name, r in results.items() for phase, p in r["profile"].items()]
    return Report(tables=tables, data={"params": vars(PARAMS), "datasets": results}, notes=notes)


def engines_table(results: dict[str, dict[str, Any]]) -> ResultTable:
    """Median build seconds and queries/s of each engine, with ratios to raw bm25s."""
    table = ResultTable(f"BM25 engines (median of interleaved runs, k={next(iter(results.values()))['k']})",
                        ["dataset", "engine", "build s", "build / bm25s", "queries/s", "query time / bm25s"])
    for name, r in results.items():
        for engine in ("sleuth", "bm25s", "rank_bm25"):
            build, search = r["build"][engine]["median_s"], r["search"][engine]["median_s"]
            n_queries = r["rank_bm25_queries"] if engine == "rank_bm25" else r["queries"]
            per_query_ratio = ratio(search / n_queries, r["search"]["bm25s"]["median_s"] / r["queries"])
            table.add(name, engine, build, ratio(build, r["build"]["bm25s"]["median_s"]),
                      n_queries / search, per_query_ratio)
    return table


def overhead_table(results: dict[str, dict[str, Any]]) -> ResultTable:
    """sleuth / raw bm25s ratios against the 1.10 goal, and top-10 agreement."""
    table = ResultTable(f"sleuth overhead over raw bm25s (goal <= {MAX_OVERHEAD:.2f}) and top-10 agreement",
                        ["dataset", "build ratio", "search ratio", "bm25s via token strings: build ratio",
                         "top-10 identical (ordered)", "top-10 same set", "rank_bm25 mean overlap@10"])
    for name, r in results.items():
        agree, okapi = r["top10_sleuth_vs_bm25s"], r["top10_rank_bm25_vs_bm25s"]
        table.add(name, r["overhead"]["build"], r["overhead"]["search"], r["overhead"]["build_bm25s_strings"],
                  agree["ordered"], agree["as_set"], okapi["mean_overlap"])
    return table


def profile_note(dataset: str, phase: str, profile: dict[str, Any], top: int = 5) -> str:
    """One line naming the functions that make up most of sleuth's extra time in a phase."""
    parts = [f"{row['function']} +{row['extra_s'] * 1000:.0f} ms ({row['share_of_excess']:.0%})"
             for row in profile["top"][:top]]
    return (f"profile {dataset} {phase}: sleuth {profile['subject_s']:.3f} s vs bm25s {profile['baseline_s']:.3f} s "
            f"under cProfile; extra own time: " + "; ".join(parts))


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=sorted(DATASETS), default=["scifact", "vaswani"])
    parser.add_argument("--k", type=int, default=100, help="results per query")
    parser.add_argument("--rank-bm25-queries", type=int, default=0,
                        help=f"time rank_bm25 on the first N queries only (0: all; --quick: {QUICK_RANK_BM25_QUERIES})")
    parser.add_argument("--profile", action="store_true",
                        help=f"cProfile both phases even when the overhead is within {MAX_OVERHEAD:.2f}")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
