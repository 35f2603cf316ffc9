"""Growth curve of dense search: exact flat vs IVF-PQ (and IVF-PQ + exact re-ranking) at growing corpus sizes.

For every size N, in one run and side by side: an exact ``Flat`` inner-product index and an IVF-PQ index
(``IVF{nlist}_HNSW32,PQ48np``: nlist the power of two nearest 4*sqrt(N), trained on a sample of the base; ``np``
skips FAISS's polysemous training, minutes of CPU whatever N, useless unless polysemous search is switched on),
both built with sleuth's ``make_faiss_index`` / ``add_vectors`` / ``apply_search_params``. Reported per index: build
time (train + add), index bytes (and the RSS growth while adding), p50 / p99 latency of single queries and of batches
of 100, and recall@10 against the flat result of the same queries, also for "IVF-PQ + refine": the IVF-PQ top 100
(and top 1,000) re-scored exactly from the flat index's stored vectors (``faiss.IndexRefine`` over the same flat index, so the
vectors are held once).

Vectors are ann_bench's clustered synthetic 384-d unit vectors (same generator and seeds), generated in chunks so
only the flat index holds the base; the queries are 1,000 fresh draws from the same mixture. ``--real-index DIR``
adds a row on real MiniLM vectors read back from existing sleuth dense indexes (nothing is encoded). ``--bm25``
measures the bytes per passage of sleuth's BM25 index on shared corpora (for the capacity plan, docs/scale).

    python -m bench.growth_bench [--sizes 100000,1000000,5000000] [--quick] [--threads 2] [--real-index DIR ...]

``--repeats`` is accepted (run_all passes it) but unused: each index is built once and every query is timed alone.
A size is skipped, with a note, when its flat vectors do not fit in MemAvailable or ``--max-gb``.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from bench.ann_bench import clustered_chunks, make_centroids, recall_at_k
from bench.common import (
    Report,
    ResultTable,
    base_parser,
    bench_main,
    load_average,
    mem_available_bytes,
    progress,
    ratio,
    rss_bytes,
)
from sleuth.corpus.beir import read_beir_corpus
from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex, add_vectors, apply_search_params, make_faiss_index
from sleuth.io import atomic_write_bytes, atomic_write_text
from sleuth.paths import shared_data_dir

NAME = "growth_bench"
DIM, K = 384, 10
BASE_STREAM, QUERY_STREAM = 1, 2  # the streams of ann_bench: same base and query vectors for the same seed
FULL_SIZES, QUICK_SIZES = (100_000, 1_000_000, 5_000_000), (10_000, 100_000)
CHUNK = 100_000
BATCH = 100
PQ_FACTORY = "IVF{nlist}_HNSW32,PQ48np"  # np: no polysemous training (~3 min, size-independent, unused)
NPROBES = (8, 32, 64)
REFINE_K_FACTORS = (10, 100)  # IVF-PQ + refine re-scores the IVF-PQ top K*10 = 100 (and 1,000) exactly
MEMORY_HEADROOM = 1.1  # a size runs only if MemAvailable >= this x its flat vectors + MEMORY_EXTRA
MEMORY_EXTRA = 1.5 * 2 ** 30  # training sample, queries, IVF-PQ codes, interpreter


# ---------------------------------------------------------------- data


def nlist_for(n: int) -> int:
    """IVF lists: the power of two nearest 4 * sqrt(n) (at least 16)."""
    return max(16, 2 ** round(math.log2(4 * math.sqrt(n))))


def real_vectors(paths: Sequence[Path], n_queries: int, seed: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Stored vectors of existing sleuth dense indexes, shuffled; the first ``n_queries`` are held out as queries."""
    parts, names = [], []
    for path in paths:
        index = DenseIndex.load(path)
        parts.append(index.vectors(range(len(index))))
        names.append(f"{(index.manifest.corpus or {}).get('path', path)} ({len(index):,} x {index.dim})")
    vectors = np.concatenate(parts).astype(np.float32)
    np.random.default_rng(seed).shuffle(vectors)
    return np.ascontiguousarray(vectors[n_queries:]), np.ascontiguousarray(vectors[:n_queries]), names


# ---------------------------------------------------------------- build

@dataclass
class Built:
    """The indexes of one size and what building them cost."""

    flat: faiss.Index
    pq: faiss.Index
    refine: dict[int, faiss.Index]
    factory: str
    nlist: int
    train_rows: int
    seconds: dict[str, float] = field(default_factory=dict)
    rss_growth: dict[str, int] = field(default_factory=dict)


def build_indexes(chunks: Iterator[np.ndarray], n: int, train_per_list: int,
                  refine_k_factors: Sequence[int] = REFINE_K_FACTORS) -> Built:
    """Flat and IVF-PQ indexes of the streamed base vectors, each chunk added to both (timed and RSS-tracked apart).

    The IVF-PQ index is trained on the first ``min(n, train_per_list * nlist)`` base vectors (the base is i.i.d., so
    its head is a random sample); the training chunks are then added like the others.
    """
    nlist = nlist_for(n)
    factory = PQ_FACTORY.format(nlist=nlist)
    flat, pq = make_faiss_index("Flat", DIM), make_faiss_index(factory, DIM)
    built = Built(flat, pq, {}, factory, nlist, min(n, train_per_list * nlist),
                  seconds={"flat_add": 0.0, "pq_train": 0.0, "pq_add": 0.0}, rss_growth={"flat": 0, "pq": 0})
    before, start = rss_bytes(), time.perf_counter()
    reserve_flat(flat, n)
    built.seconds["flat_add"] += time.perf_counter() - start
    built.rss_growth["flat"] += rss_bytes() - before
    pending: list[np.ndarray] = []
    held = 0
    for block in chunks:
        if not pq.is_trained:
            pending.append(block)
            held += len(block)
            if held < built.train_rows:
                continue
            sample = np.concatenate(pending)[:built.train_rows]
            progress(f"  train {factory} on {len(sample):,} vectors")
            start = time.perf_counter()
            pq.train(sample)
            built.seconds["pq_train"] = time.perf_counter() - start
            del sample
            blocks, pending = pending, []
        else:
            blocks = [block]
        for b in blocks:
            timed_add(built, "flat", flat, b)
            timed_add(built, "pq", pq, b)
    if flat.ntotal != n or pq.ntotal != n:
        raise RuntimeError(f"built {flat.ntotal:,} / {pq.ntotal:,} vectors, expected {n:,}")
    for k_factor in refine_k_factors:
        refine = faiss.IndexRefine(pq, flat)  # re-scores from the flat index's vectors: nothing copied
        refine.k_factor = k_factor
        built.refine[k_factor] = refine
    return built


def reserve_flat(index: faiss.Index, n: int) -> None:
    """Allocate a flat index's vector storage for ``n`` vectors up front (the size stays 0).

    Adding chunk by chunk otherwise grows the storage by doubling, and each growth copies every vector: the peak
    would be about twice the final size. ``resize(0)`` keeps the std::vector's capacity.
    """
    flat = faiss.downcast_index(index)
    flat.codes.resize(n * flat.code_size)
    flat.codes.resize(0)


def timed_add(built: Built, name: str, index: faiss.Index, block: np.ndarray) -> None:
    """``add_vectors`` of one chunk, its seconds and RSS growth added to ``built``'s totals for ``name``."""
    before = rss_bytes()
    start = time.perf_counter()
    add_vectors(index, block)
    built.seconds[f"{name}_add"] += time.perf_counter() - start
    built.rss_growth[name] += rss_bytes() - before


def index_bytes(index: faiss.Index) -> int:
    """Bytes of a FAISS index: its serialised size (flat: vectors x code size, not serialised to save a copy)."""
    flat = faiss.downcast_index(index)
    if isinstance(flat, faiss.IndexFlat):
        return int(flat.ntotal * flat.code_size)
    return int(faiss.serialize_index(index).nbytes)


# ---------------------------------------------------------------- search

def competitors(built: Built, nprobes: Sequence[int]) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """Search functions (queries -> top-K ids): flat, then IVF-PQ and IVF-PQ + refine at every nprobe."""
    def searcher(index: faiss.Index, nprobe: int | None) -> Callable[[np.ndarray], np.ndarray]:
        def search(queries: np.ndarray) -> np.ndarray:
            apply_search_params(index, nprobe=nprobe)
            return index.search(queries, K)[1]
        return search

    found = {"flat": searcher(built.flat, None)}
    for nprobe in nprobes:
        found[f"ivfpq nprobe={nprobe}"] = searcher(built.pq, nprobe)
    for k_factor, refine in built.refine.items():
        for nprobe in nprobes:
            found[f"ivfpq+refine{K * k_factor} nprobe={nprobe}"] = searcher(refine, nprobe)
    return found


def time_searches(searches: dict[str, Callable[[np.ndarray], np.ndarray]], groups: Sequence[np.ndarray],
                  only: dict[str, int] | None = None) -> tuple[dict[str, list[float]], dict[str, np.ndarray]]:
    """Seconds of every search on every query group, competitors interleaved per group in a rotating order.

    ``only`` limits a competitor to its first groups (the flat single-query loop on large N). Returns the seconds
    and the concatenated top-K ids per competitor.
    """
    names = list(searches)
    for name in names:  # warm-up (thread pools, lazy allocations)
        searches[name](groups[0])
    seconds: dict[str, list[float]] = {name: [] for name in names}
    ids: dict[str, list[np.ndarray]] = {name: [] for name in names}
    for number, group in enumerate(groups):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            if only and number >= only.get(name, len(groups)):
                continue
            start = time.perf_counter()
            found = searches[name](group)
            seconds[name].append(time.perf_counter() - start)
            ids[name].append(found)
    return seconds, {name: np.concatenate(parts) for name, parts in ids.items()}


def latency(seconds: Sequence[float]) -> dict[str, float]:
    """p50 / p99 / mean milliseconds of timed calls, and their count."""
    ms = 1000 * np.asarray(seconds)
    return {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
            "mean_ms": float(ms.mean()), "calls": len(ms)}


# ---------------------------------------------------------------- one size

def measure_size(label: str, n: int, chunks: Iterator[np.ndarray], queries: np.ndarray,
                 args: argparse.Namespace) -> dict[str, Any]:
    """Build both indexes of ``n`` vectors, time batch and single-query search, and return one result per index."""
    rss_start = rss_bytes()
    progress(f"{label}: build Flat and IVF-PQ of {n:,} vectors (chunks of {CHUNK:,})")
    built = build_indexes(chunks, n, args.train_per_list, args.refine_k_factor)
    progress(f"{label}: batches of {BATCH} over {len(queries):,} queries")
    searches = competitors(built, args.nprobe)
    batch_s, batch_ids = time_searches(searches, [queries[i:i + BATCH] for i in range(0, len(queries), BATCH)])
    n_single = min(args.single, len(queries))
    n_flat_single = min(n_single, max(args.min_flat_single, round(n_single * args.flat_single_n / n)))
    progress(f"{label}: {n_single} single queries ({n_flat_single} for flat)")
    single_s, _ = time_searches(searches, [queries[i:i + 1] for i in range(n_single)], only={"flat": n_flat_single})
    exact = batch_ids["flat"]
    sizes = {"flat": index_bytes(built.flat), "pq": index_bytes(built.pq)}
    sizes["refine"] = sizes["pq"] + sizes["flat"]
    build_s = {"flat": built.seconds["flat_add"], "pq": built.seconds["pq_train"] + built.seconds["pq_add"]}
    build_s["refine"] = build_s["pq"] + build_s["flat"]
    rss = {"flat": built.rss_growth["flat"], "pq": built.rss_growth["pq"]}
    rss["refine"] = rss["flat"] + rss["pq"]
    rows = []
    for name in searches:
        kind = "flat" if name == "flat" else "refine" if "refine" in name else "pq"
        single, batch = latency(single_s[name]), latency(batch_s[name])
        rows.append({"size": label, "n": n, "index": name, "build_s": build_s[kind], "index_bytes": sizes[kind],
                     "bytes_per_vector": sizes[kind] / n, "rss_growth_bytes": rss[kind],
                     "single": single, "batch100": batch, "batch_ms_per_query": batch["p50_ms"] / BATCH,
                     "recall_at_10": recall_at_k(batch_ids[name], exact)})
    flat_row = rows[0]
    for row in rows:
        row["vs_flat"] = {"memory": ratio(row["index_bytes"], flat_row["index_bytes"]),
                          "build": ratio(row["build_s"], flat_row["build_s"]),
                          "single_p50_speedup": ratio(flat_row["single"]["p50_ms"], row["single"]["p50_ms"]),
                          "batch_p50_speedup": ratio(flat_row["batch100"]["p50_ms"], row["batch100"]["p50_ms"])}
    result = {"label": label, "n": n, "factory": built.factory, "nlist": built.nlist, "train_rows": built.train_rows,
              "refine_candidates": [K * f for f in args.refine_k_factor], "build_parts_s": built.seconds,
              "single_queries": n_single, "flat_single_queries": n_flat_single, "rows": rows,
              "rss_growth_total_bytes": rss_bytes() - rss_start, "loadavg_after": list(os.getloadavg())}
    del searches, built
    gc.collect()
    return result


def fits(n: int, args: argparse.Namespace) -> tuple[bool, str]:
    """Whether a size fits: MemAvailable and the --max-gb budget against its flat vectors plus the rest."""
    need = MEMORY_HEADROOM * n * DIM * 4 + MEMORY_EXTRA
    available = mem_available_bytes()
    if need > args.max_gb * 2 ** 30:
        return False, f"needs ~{need / 2 ** 30:.1f} GiB, over --max-gb {args.max_gb}"
    if need > available:
        return False, f"needs ~{need / 2 ** 30:.1f} GiB, only {available / 2 ** 30:.1f} GiB available"
    return True, ""


# ---------------------------------------------------------------- BM25 size

BM25_CORPORA = {"nq": "nq/corpus.jsonl", "scifact": "scifact/corpus.jsonl"}


def bm25_size(name: str, fractions: Sequence[float] = (0.5, 1.0)) -> dict[str, Any]:
    """Bytes per passage of sleuth's BM25 index (bm25s files, document store) of a shared corpus, at fractions of it.

    Two fractions give the vocabulary growth exponent (Heaps' law, vocabulary ~ passages^beta) for extrapolation.
    """
    passages = [Passage.from_document(doc) for doc in read_beir_corpus(shared_data_dir() / BM25_CORPORA[name])]
    rows = []
    for fraction in fractions:
        subset = passages[:round(len(passages) * fraction)]
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            index = BM25Index.build(subset, Path(tmp) / "bm25", show_progress=False)
            seconds = time.perf_counter() - start
            files = {f.name: f.stat().st_size for f in (Path(tmp) / "bm25").rglob("*") if f.is_file()}
        nnz = int(index.model.scores["data"].shape[0])
        vocab = len(index.model.vocab_dict)
        postings = files["data.csc.index.npy"] + files["indices.csc.index.npy"]
        bm25s_bytes = sum(v for k, v in files.items() if k.endswith((".npy", ".json")) and k != "manifest.json")
        rows.append({"passages": len(subset), "build_s": seconds, "vocabulary": vocab, "postings": nnz,
                     "postings_per_passage": nnz / len(subset), "postings_bytes": postings,
                     "bm25s_bytes": bm25s_bytes, "docstore_bytes": files.get("docstore.parquet", 0),
                     "bm25s_bytes_per_passage": bm25s_bytes / len(subset),
                     "docstore_bytes_per_passage": files.get("docstore.parquet", 0) / len(subset), "files": files})
    first, last = rows[0], rows[-1]
    beta = math.log(last["vocabulary"] / first["vocabulary"]) / math.log(last["passages"] / first["passages"])
    return {"corpus": name, "rows": rows, "heaps_beta": beta}


def bm25_table(sizes: list[dict[str, Any]]) -> ResultTable:
    """Bytes per passage of the BM25 indexes of :func:`bm25_size`."""
    table = ResultTable("BM25 index size (sleuth BM25Index, bm25s CSC + vocabulary; document store apart)",
                        ["corpus", "passages", "vocabulary", "postings / passage", "bm25s B / passage",
                         "docstore B / passage", "build s", "Heaps beta"])
    for size in sizes:
        for r in size["rows"]:
            table.add(size["corpus"], r["passages"], r["vocabulary"], r["postings_per_passage"],
                      r["bm25s_bytes_per_passage"], r["docstore_bytes_per_passage"], r["build_s"], size["heaps_beta"])
    return table


# ---------------------------------------------------------------- run

def run(args: argparse.Namespace) -> Report:
    """Every size of the growth curve (ascending), then the optional real-vector row; tables, plot and notes."""
    faiss.omp_set_num_threads(args.threads)
    load_start = load_average()
    sizes = parse_sizes(args.sizes) if args.sizes else (QUICK_SIZES if args.quick else FULL_SIZES)
    centroids = make_centroids(args.centroids, DIM, args.seed)
    queries = np.concatenate(list(clustered_chunks(args.queries, centroids, args.noise, args.seed, QUERY_STREAM)))
    results, skipped = [], []
    for n in sorted(sizes):
        ok, why = fits(n, args)
        if not ok:
            progress(f"skip {n:,}: {why}")
            skipped.append({"n": n, "reason": why})
            continue
        chunks = clustered_chunks(n, centroids, args.noise, args.seed, BASE_STREAM)
        results.append(measure_size(f"{n:,}", n, chunks, queries, args))
        atomic_write_text(args.results_dir / f"{NAME}.partial.json", json.dumps(results, indent=1) + "\n")
    if args.real_index:
        base, real_queries, sources = real_vectors(args.real_index, args.queries, args.seed)
        result = measure_size(f"real MiniLM {len(base):,}", len(base), iter([base]), real_queries, args)
        result["sources"] = sources
        results.append(result)
        del base
    bm25 = [bm25_size(name) for name in args.bm25]
    load_end = load_average()
    data = {"dim": DIM, "k": K, "queries": args.queries, "batch": BATCH, "centroids": args.centroids,
            "noise": args.noise, "seed": args.seed, "threads": args.threads, "nprobe": list(args.nprobe),
            "train_per_list": args.train_per_list, "pq_factory": PQ_FACTORY, "refine_k_factor": args.refine_k_factor,
            "sizes": results, "skipped": skipped, "bm25": bm25, "loadavg_start": load_start, "loadavg_end": load_end}
    plot_path = args.results_dir / f"{NAME}.png"
    synthetic = [r for r in results if not r["label"].startswith("real")]
    if len(synthetic) >= 2 and not args.no_plot:
        plot(synthetic, plot_path)
        data["plot"] = str(plot_path)
    tables = [growth_table(results)] + ([bm25_table(bm25)] if bm25 else [])
    return Report(tables=tables, data=data, notes=notes(args, results, skipped, load_start, load_end))


def parse_sizes(text: str) -> tuple[int, ...]:
    """``100000,1000000`` -> (100000, 1000000)."""
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--sizes: not a comma-separated list of integers: {text!r}") from None
    if not sizes or min(sizes) <= 0:
        raise argparse.ArgumentTypeError(f"--sizes: sizes must be positive: {text!r}")
    return sizes


def growth_table(results: list[dict[str, Any]]) -> ResultTable:
    """One row per size and index: build, memory, latency, recall and the ratios against flat."""
    table = ResultTable("Flat vs IVF-PQ (+ exact refine of its top candidates) by corpus size; latency p50 / p99 in ms",
                        ["size", "index", "build s", "MB", "B/vector", "single p50", "single p99", "batch100 p50",
                         "batch100 p99", "recall@10", "memory / flat", "single speed-up", "batch speed-up"])
    for result in results:
        for r in result["rows"]:
            table.add(result["label"], r["index"], r["build_s"], r["index_bytes"] / 1e6, r["bytes_per_vector"],
                      r["single"]["p50_ms"], r["single"]["p99_ms"], r["batch100"]["p50_ms"],
                      r["batch100"]["p99_ms"], r["recall_at_10"], r["vs_flat"]["memory"],
                      r["vs_flat"]["single_p50_speedup"], r["vs_flat"]["batch_p50_speedup"])
    return table


def notes(args: argparse.Namespace, results: list[dict[str, Any]], skipped: list[dict[str, Any]],
          load_start: list[float], load_end: list[float]) -> list[str]:
    """Data, parameters, load and caveats of the run."""
    lines = [f"data: clustered synthetic {DIM}-d unit vectors ({args.centroids} centroids, noise norm {args.noise}, "
             f"seed {args.seed}, ann_bench's generator); {args.queries:,} held-out queries from the same mixture; "
             f"faiss threads {args.threads}",
             f"load average (1/5/15 min) at start {load_start}, at end {load_end}: the machine is shared, "
             "absolute times are rough, ratios within a size are measured side by side",
             f"IVF-PQ: {PQ_FACTORY} with nlist = power of two nearest 4*sqrt(N), trained on min(N, "
             f"{args.train_per_list}*nlist) base vectors; refine = faiss.IndexRefine over the flat index, "
             f"re-scoring the IVF-PQ top {' / '.join(str(K * f) for f in args.refine_k_factor)} exactly (refineC = top C); "
             "its memory is PQ + flat",
             "latency: each batch of 100 and each single query timed alone, competitors interleaved; recall@10 is "
             "against the flat result of the same queries; build s is train + add (adds interleaved per chunk)",
             "MB = FAISS index bytes (flat: vectors x 4 x dim; IVF-PQ: serialised size incl. HNSW coarse quantizer "
             "and PQ codebooks); the RSS growth while adding is in the JSON (rss_growth_bytes)"]
    for result in results:
        lines.append(f"{result['label']}: {result['factory']}, trained on {result['train_rows']:,} vectors "
                     f"(train {result['build_parts_s']['pq_train']:.1f} s, add {result['build_parts_s']['pq_add']:.1f} "
                     f"s); {result['single_queries']} single queries, {result['flat_single_queries']} for flat; "
                     f"load after {result['loadavg_after']}" + (f"; from {', '.join(result['sources'])}"
                                                                 if "sources" in result else ""))
    lines += [f"skipped {s['n']:,}: {s['reason']}" for s in skipped]
    return lines


def plot(results: list[dict[str, Any]], path: Path) -> None:
    """Latency (single-query p50) and memory against N, log-log, written atomically as a PNG."""
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = [r["n"] for r in results]
    names = [row["index"] for row in results[0]["rows"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    for name in names:
        rows = [next(row for row in r["rows"] if row["index"] == name) for r in results]
        style = "-" if name == "flat" else "--" if "refine" in name else ":"
        left.plot(ns, [row["single"]["p50_ms"] for row in rows], style, marker="o", label=name)
    for kind, label in (("flat", "flat"), ("ivfpq nprobe", "ivfpq"), ("ivfpq+refine", "ivfpq + refine")):
        rows = [next(row for row in r["rows"] if row["index"].startswith(kind)) for r in results]
        right.plot(ns, [row["index_bytes"] / 2 ** 20 for row in rows], marker="o", label=label)
    for axis, title, ylabel in ((left, "single-query latency (p50)", "ms"), (right, "index memory", "MiB")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("vectors (N)")
        axis.set_ylabel(ylabel)
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    fig.suptitle(f"growth_bench: {DIM}-d clustered vectors, 2 CPU threads")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(path, buffer.getvalue())


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="", help="comma-separated base sizes (default 100000,1000000,5000000; "
                                                    "--quick 10000,100000)")
    parser.add_argument("--queries", type=int, default=1000, help="held-out queries (batches of 100 and recall)")
    parser.add_argument("--single", type=int, default=200, help="queries in the single-query loop")
    parser.add_argument("--flat-single-n", type=int, default=200_000,
                        help="flat single queries scale as single * this / N (flat is slow at large N)")
    parser.add_argument("--min-flat-single", type=int, default=30, help="at least this many flat single queries")
    parser.add_argument("--nprobe", type=int, nargs="+", default=list(NPROBES), help="IVF nprobe values")
    parser.add_argument("--train-per-list", type=int, default=16, help="IVF training vectors per list (<= 256)")
    parser.add_argument("--refine-k-factor", type=int, nargs="+", default=list(REFINE_K_FACTORS),
                        help="refine re-scores the IVF-PQ top k x each of these (default 10 100: top 100 and 1,000)")
    parser.add_argument("--centroids", type=int, default=2000, help="mixture components")
    parser.add_argument("--noise", type=float, default=0.5, help="expected norm of the noise added to a centroid")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--threads", type=int, default=2, help="faiss.omp_set_num_threads")
    parser.add_argument("--max-gb", type=float, default=14.0, help="skip sizes whose flat vectors need more")
    parser.add_argument("--real-index", type=Path, action="append", default=[],
                        help="sleuth dense index directory whose vectors make an extra real-vector row (repeatable)")
    parser.add_argument("--bm25", nargs="*", choices=sorted(BM25_CORPORA), default=["nq", "scifact"],
                        help="shared corpora whose BM25 index size is measured (none: --bm25 with no value)")
    parser.add_argument("--no-plot", action="store_true", help="do not write growth_bench.png")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
