"""Run the benchmarks one after another and record their wall times.

BM25 (and its cut of tied documents), encoders, ANN, DHR, privacy, service, Chain-of-Skills, Ray (needs the ray
extra), the growth curve and fusion.

    python -m bench.run_all [--quick] [--repeats 3] [--only NAME ...]

bench.quest_bench needs a trained classifier and runs on its own (see README).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from bench import (
    ann_bench,
    bm25_bench,
    bm25_ties_bench,
    cos_bench,
    dense_bench,
    dhr_bench,
    fusion_bench,
    growth_bench,
    privacy_bench,
    ray_bench,
    service_bench,
)
from bench.common import Report, ResultTable, base_parser, bench_main, time_call

NAME = "run_all"
BENCHMARKS = {module.NAME: module for module in (bm25_bench, dense_bench, ann_bench, dhr_bench, service_bench,
                                                          privacy_bench, cos_bench, ray_bench, growth_bench,
                                                          fusion_bench, bm25_ties_bench)}


def forwarded(args: argparse.Namespace) -> list[str]:
    """The options every benchmark shares, as command-line words."""
    words = ["--repeats", str(args.repeats), "--results-dir", str(args.results_dir)]
    return words + (["--quick"] if args.quick else [])


def run(args: argparse.Namespace) -> Report:
    """Run the selected benchmarks (each prints and writes its own results); tabulate their wall times."""
    table = ResultTable("Benchmarks run", ["benchmark", "wall s", "results"])
    walls = {}
    for name in args.only:
        walls[name], _ = time_call(lambda: BENCHMARKS[name].main(forwarded(args)))
        table.add(name, walls[name], f"{name}.json, {name}.md")
    return Report(tables=[table], data={"wall_s": walls, "total_s": sum(walls.values())})


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS))
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
