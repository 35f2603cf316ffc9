"""ANN: exact FAISS flat (IndexFlatIP) against HNSW32 at several efSearch on clustered synthetic unit vectors.

The base and the queries are drawn from one Gaussian mixture (random unit centroids plus isotropic noise,
renormalised) with a fixed seed; queries are fresh draws, not base vectors. i.i.d. random vectors are avoided on
purpose: HNSW recall collapses on them and real embeddings are clustered. Indexes are made with sleuth's
``make_faiss_index`` / ``add_vectors`` / ``apply_search_params``.

    python -m bench.ann_bench [--n 1000000] [--queries 1000] [--single 200] [--ef 16 64 128 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import faiss
import numpy as np

from bench.common import (
    Report,
    ResultTable,
    Timing,
    add_size_option,
    base_parser,
    bench_main,
    measure_interleaved,
    progress,
    ratio,
    time_call,
)
from sleuth.index.dense import add_vectors, apply_search_params, make_faiss_index

NAME = "ann_bench"
DIM, K = 384, 10
HNSW_FACTORY, EF_CONSTRUCTION = "HNSW32", 40
BASE_STREAM, QUERY_STREAM = 1, 2
FULL_N, QUICK_N = 1_000_000, 100_000


# ---------------------------------------------------------------- data

def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, in place."""
    x /= np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    return x


def make_centroids(n_centroids: int, dim: int, seed: int) -> np.ndarray:
    """Random unit centroids of the mixture."""
    return unit_rows(np.random.default_rng(seed).standard_normal((n_centroids, dim), dtype=np.float32))


def clustered_chunks(n: int, centroids: np.ndarray, noise: float, seed: int, stream: int,
                     chunk: int = 100_000) -> Iterator[np.ndarray]:
    """The vectors of :func:`clustered_vectors` one chunk at a time (for corpora too large to hold twice)."""
    dim = centroids.shape[1]
    for number, start in enumerate(range(0, n, chunk)):
        rng = np.random.default_rng([seed, stream, number])
        rows = min(chunk, n - start)
        block = rng.standard_normal((rows, dim), dtype=np.float32)
        block *= noise / np.sqrt(dim)
        block += centroids[rng.integers(len(centroids), size=rows)]
        yield unit_rows(block)


def clustered_vectors(n: int, centroids: np.ndarray, noise: float, seed: int, stream: int,
                      chunk: int = 100_000) -> np.ndarray:
    """``n`` unit vectors: a random centroid plus Gaussian noise of expected norm ``noise``, renormalised.

    Generated in chunks, each from its own generator seeded (seed, stream, chunk number): reproducible, and a
    different ``stream`` gives independent draws from the same distribution.
    """
    out = np.empty((n, centroids.shape[1]), dtype=np.float32)
    start = 0
    for block in clustered_chunks(n, centroids, noise, seed, stream, chunk):
        out[start:start + len(block)] = block
        start += len(block)
    return out


# ---------------------------------------------------------------- indexes

def build_index(factory: str, vectors: np.ndarray) -> faiss.Index:
    """A FAISS inner-product index of ``vectors`` (HNSW with efConstruction EF_CONSTRUCTION)."""
    index = make_faiss_index(factory, vectors.shape[1])
    if hasattr(faiss.downcast_index(index), "hnsw"):
        faiss.downcast_index(index).hnsw.efConstruction = EF_CONSTRUCTION
    add_vectors(index, vectors)
    return index


def batch_search(index: faiss.Index, queries: np.ndarray, ef: int | None = None) -> np.ndarray:
    """Top-K row ids of all queries in one call."""
    apply_search_params(index, ef_search=ef)
    return index.search(queries, K)[1]


def single_search(index: faiss.Index, queries: np.ndarray, ef: int | None = None) -> None:
    """One search call per query (the latency an interactive caller sees)."""
    apply_search_params(index, ef_search=ef)
    for i in range(len(queries)):
        index.search(queries[i:i + 1], K)


def recall_at_k(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean fraction of the exact top-K that ``found`` retrieves."""
    return float(np.mean([len(set(f) & set(e)) / K for f, e in zip(found, exact)]))


# ---------------------------------------------------------------- run

def search_competitors(indexes: dict[str, faiss.Index], queries: np.ndarray, ef_values: Sequence[int],
                       search: Callable[..., Any]) -> dict[str, Callable[[], Any]]:
    """Flat and one HNSW competitor per efSearch, all calling ``search`` on the same queries."""
    competitors = {"flat": lambda: search(indexes["flat"], queries)}
    for ef in ef_values:
        competitors[f"hnsw ef={ef}"] = lambda ef=ef: search(indexes["hnsw"], queries, ef)
    return competitors


def run(args: argparse.Namespace) -> Report:
    """Generate the data, build both indexes (interleaved), time batch and single-query search, measure recall."""
    faiss.omp_set_num_threads(args.threads)
    n = args.n or (QUICK_N if args.quick else FULL_N)
    progress(f"generate {n:,} + {args.queries:,} clustered {DIM}-d vectors ({args.centroids} centroids)")
    gen_s, (base, queries) = time_call(lambda: make_data(n, args))
    progress(f"build flat and {HNSW_FACTORY} x{args.repeats}, interleaved")
    builds = measure_interleaved({"flat": lambda: build_index("Flat", base),
                                  "hnsw": lambda: build_index(HNSW_FACTORY, base)}, repeats=args.repeats, warmup=False)
    indexes = {name: t.result for name, t in builds.items()}
    progress(f"batch search of {len(queries):,} queries x{args.repeats}")
    batch = measure_interleaved(search_competitors(indexes, queries, args.ef, batch_search), repeats=args.repeats,
                                warmup=False)
    progress(f"single-query loop over {args.single} queries x{args.repeats}")
    single = measure_interleaved(search_competitors(indexes, queries[:args.single], args.ef, single_search),
                                 repeats=args.repeats, warmup=False)
    rows = result_rows(builds, batch, single, len(queries), args.single)
    data = {"n": n, "dim": DIM, "queries": len(queries), "single_queries": args.single, "k": K,
            "centroids": args.centroids, "noise": args.noise, "seed": args.seed, "threads": args.threads,
            "generate_s": gen_s, "hnsw": {"factory": HNSW_FACTORY, "efConstruction": EF_CONSTRUCTION},
            "build": {name: t.summary() for name, t in builds.items()}, "rows": rows,
            "batch_search": {name: t.summary() for name, t in batch.items()},
            "single_search": {name: t.summary() for name, t in single.items()}}
    notes = [f"data: {n:,} base + {len(queries):,} query vectors, {DIM}-d, {args.centroids} centroids, noise norm "
             f"{args.noise}, seed {args.seed}; generated in {gen_s:.1f} s; faiss threads {args.threads}",
             "recall@10 is against the exact flat result of the same queries; ratios are flat time / HNSW time"]
    return Report(tables=[ann_table(rows, n)], data=data, notes=notes)


def make_data(n: int, args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray]:
    """Base and query vectors from the same mixture (independent streams)."""
    centroids = make_centroids(args.centroids, DIM, args.seed)
    return (clustered_vectors(n, centroids, args.noise, args.seed, BASE_STREAM),
            clustered_vectors(args.queries, centroids, args.noise, args.seed, QUERY_STREAM))


def result_rows(builds: dict[str, Timing], batch: dict[str, Timing], single: dict[str, Timing],
                n_queries: int, n_single: int) -> list[dict[str, Any]]:
    """One row per competitor: build seconds, ms per query (batch and single), recall@10, speed-ups over flat."""
    exact = batch["flat"].result
    rows = []
    for name in batch:
        build = builds["flat" if name == "flat" else "hnsw"]
        rows.append({"index": name, "build_s": build.median,
                     "batch_ms_per_query": 1000 * batch[name].median / n_queries,
                     "single_ms_per_query": 1000 * single[name].median / n_single,
                     "recall_at_10": recall_at_k(batch[name].result, exact),
                     "batch_speedup_vs_flat": ratio(batch["flat"].median, batch[name].median),
                     "single_speedup_vs_flat": ratio(single["flat"].median, single[name].median)})
    return rows


def ann_table(rows: list[dict[str, Any]], n: int) -> ResultTable:
    """The comparison table of :func:`result_rows`."""
    table = ResultTable(f"Flat vs {HNSW_FACTORY} (efConstruction {EF_CONSTRUCTION}) on {n:,} clustered vectors, "
                        f"median of interleaved runs",
                        ["index", "build s", "ms/query (batch)", "ms/query (single)", "recall@10",
                         "speed-up batch", "speed-up single"])
    for r in rows:
        table.add(r["index"], r["build_s"], r["batch_ms_per_query"], r["single_ms_per_query"], r["recall_at_10"],
                  r["batch_speedup_vs_flat"], r["single_speedup_vs_flat"])
    return table


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    add_size_option(parser, "--n", FULL_N, QUICK_N, "base vectors")
    parser.add_argument("--queries", type=int, default=1000, help="queries for the batch search and recall")
    parser.add_argument("--single", type=int, default=200, help="queries in the single-query loop")
    parser.add_argument("--ef", type=int, nargs="+", default=[16, 64, 128, 256], help="HNSW efSearch values")
    parser.add_argument("--centroids", type=int, default=2000, help="mixture components")
    parser.add_argument("--noise", type=float, default=0.5, help="expected norm of the noise added to a centroid")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--threads", type=int, default=2, help="faiss.omp_set_num_threads")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
