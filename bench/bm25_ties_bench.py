"""BM25's cut of a top k with ties taken by id (``sleuth.index.bm25.topk_rows``) side by side with bm25s's own
``retrieve``, on the same index and queries, in one process: what the deterministic cut costs, and how many queries
had documents tied across the cut (where bm25s chose among them as its selection fell, so a top 100 was not the
first 100 of a top 1,000 and a sharded index could disagree with an unsharded one).

    python -m bench.bm25_ties_bench [--quick] [--repeats 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from bench.common import (
    Report,
    ResultTable,
    base_parser,
    bench_main,
    load_scifact,
    load_vaswani,
    measure_interleaved,
    ratio,
)
from sleuth.index.bm25 import BM25Index, topk_rows

NAME = "bm25_ties_bench"
DEPTHS = (10, 100, 1000)


def run(args: argparse.Namespace) -> Report:
    datasets = [load_scifact()] if args.quick else [load_scifact(), load_vaswani()]
    table = ResultTable(f"BM25 top k, median of {args.repeats} (2 shared cores)",
                        ["collection", "k", "queries", "tied across the cut", "bm25s retrieve s", "topk_rows s",
                         "ratio"])
    data = {}
    for dataset in datasets:
        index = BM25Index.build(dataset.passages, show_progress=False)
        tokens = index.analyzer.tokenize(dataset.queries)
        for k in DEPTHS:
            timings = measure_interleaved({
                "bm25s": lambda k=k: index.model.retrieve(tokens, k=k, show_progress=False),
                "topk_rows": lambda k=k: topk_rows(index.model, tokens, k, index.docstore.ids)}, repeats=args.repeats)
            _, deeper = index.model.retrieve(tokens, k=k + 1, show_progress=False)
            tied = int((deeper[:, k] == deeper[:, k - 1]).sum())
            table.add(dataset.name, k, len(dataset.queries), tied, timings["bm25s"].median,
                      timings["topk_rows"].median, ratio(timings["topk_rows"].median, timings["bm25s"].median))
            data[f"{dataset.name}@{k}"] = {"tied": tied, **{n: t.summary() for n, t in timings.items()}}
    return Report(tables=[table], data=data, notes=[])


def main(argv: Sequence[str] | None = None) -> Report:
    parser = base_parser(__doc__.splitlines()[0])
    return bench_main(NAME, parser, run, argv)


if __name__ == "__main__":
    main()
