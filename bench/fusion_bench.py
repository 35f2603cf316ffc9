"""Fusion and run files at TREC scale: sleuth's ``Fuse`` (RRF) and ``Run.read_trec`` side by side with plain Python
doing the same work, on the same input, in one process.

Two runs of 809 queries x 1,000 hits (SciFact's train claims; documents drawn at random from 5,183 ids, seeded), as
BM25 and dense give them. Competitors, alternated: ``Fuse`` over the two runs (a Hit with its components per fused
document, ranked) against a plain RRF that keeps only ``(id, score)`` pairs; ``Run.read_trec`` of one run's file
against a plain reader (split, float, a dict per query); each sleuth competitor also with its pauses of the garbage
collector undone, as before session 35, when the collector's rescans of the live hits made ``Fuse`` 8-10x the plain
RRF (``sleuth fuse`` of two SciFact runs of 1,000 hits: 18-20 s before, about 10 s after). The ratio is the price of
sleuth's hits (components, checks, ranking order). The inputs are frozen out of the collector's view (``gc.freeze``)
so that no competitor pays for rescanning them.

    python -m bench.fusion_bench [--quick] [--queries 809] [--depth 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import Report, ResultTable, add_size_option, base_parser, bench_main, measure_interleaved, ratio
from sleuth.corpus.model import Query
from sleuth.stages.fusion import Fuse
from sleuth.stages.run import Hit, Run
from sleuth.stages.run_file import RunFile

NAME = "fusion_bench"
DOCUMENTS = 5183  # SciFact's abstracts
FULL_QUERIES, QUICK_QUERIES = 809, 100


def random_run(queries: int, depth: int, rng: random.Random) -> Run:
    """``queries`` rankings of ``depth`` distinct document ids, scores descending."""
    ids = [f"d{i}" for i in range(DOCUMENTS)]
    return Run({str(q): [Hit(d, float(depth - r)) for r, d in enumerate(rng.sample(ids, depth))]
                for q in range(queries)})


def plain_rrf(runs: Sequence[Run], k: int = 60) -> dict[str, list[tuple[str, float]]]:
    """Reciprocal rank fusion with dicts and tuples only, ranked by descending score, ties by id."""
    fused = {}
    for qid in runs[0]:
        scores: dict[str, float] = {}
        for run in runs:
            for rank, hit in enumerate(run.get(qid, []), start=1):
                scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (k + rank)
        fused[qid] = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return fused


def plain_read(path: Path) -> dict[str, dict[str, float]]:
    """A TREC run file as ``{qid: {docid: score}}``, nothing checked."""
    scores: dict[str, dict[str, float]] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            qid, _, docid, _, score, _ = line.split()
            scores.setdefault(qid, {})[docid] = float(score)
    return scores


def collector_on(work: Callable[[], Any]) -> Any:
    """``work`` with sleuth's pauses of the garbage collector undone (``gc_paused`` made a no-op): as before
    session 35."""
    from unittest import mock

    with mock.patch("sleuth.stages.fusion.gc_paused", contextlib.nullcontext), \
            mock.patch("sleuth.stages.run.gc_paused", contextlib.nullcontext):
        return work()


def run(args: argparse.Namespace) -> Report:
    queries = args.queries or (QUICK_QUERIES if args.quick else FULL_QUERIES)
    rng = random.Random(0)
    first, second = random_run(queries, args.depth, rng), random_run(queries, args.depth, rng)
    query_list = [Query(qid, qid) for qid in first]
    fuse = Fuse([RunFile(first, name="a"), RunFile(second, name="b")])
    gc.collect()
    gc.freeze()  # the inputs, alive throughout, are no competitor's garbage to rescan
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.trec"
        first.write_trec(path)
        timings = measure_interleaved({"Fuse (rrf)": lambda: fuse.transform(query_list),
                                       "Fuse, collector on": lambda: collector_on(lambda: fuse.transform(query_list)),
                                       "plain RRF": lambda: plain_rrf([first, second]),
                                       "Run.read_trec": lambda: Run.read_trec(path),
                                       "read_trec, collector on": lambda: collector_on(lambda: Run.read_trec(path)),
                                       "plain read": lambda: plain_read(path)}, repeats=args.repeats)
    gc.unfreeze()
    fused, plain = timings["Fuse (rrf)"].result, timings["plain RRF"].result
    same = all(fused.ids(qid) == [d for d, _ in plain[qid]] for qid in plain)
    table = ResultTable(f"{queries:,} queries x 2 runs x {args.depth:,} hits (median of {args.repeats})",
                        ["work", "sleuth s", "collector on (before) s", "plain Python s", "ratio", "ratio before"])
    for work, ours, before, plain_name in (("fusion (RRF)", "Fuse (rrf)", "Fuse, collector on", "plain RRF"),
                                           ("reading one TREC run file", "Run.read_trec", "read_trec, collector on",
                                            "plain read")):
        table.add(work, timings[ours].median, timings[before].median, timings[plain_name].median,
                  ratio(timings[ours].median, timings[plain_name].median),
                  ratio(timings[before].median, timings[plain_name].median))
    notes = [f"same ranking as the plain RRF: {same}",
             f"fused hits per query: {sum(map(len, fused.values())) / len(fused):,.0f}"]
    return Report(tables=[table], data={name: timing.summary() for name, timing in timings.items()} |
                  {"same_ranking": same, "queries": queries, "depth": args.depth}, notes=notes)


def main(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.splitlines()[0])
    add_size_option(parser, "--queries", FULL_QUERIES, QUICK_QUERIES, "queries per run")
    parser.add_argument("--depth", type=int, default=1000, help="hits per query of each run")
    return bench_main(NAME, parser, run, argv)


if __name__ == "__main__":
    main()
