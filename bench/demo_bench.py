"""`sleuth demo` timing: the encoders' passages/s side by side, then first and second demo runs in a fresh cache.

1. The same SciFact passages (title + text, as the demo indexes them), batch 32, alternating runs: torch MiniLM at
   256 tokens, int8 ONNX at 256 (``minilm-onnx``, the demo's encoder) and at 128 (``minilm-onnx-128``). Ratios hold under the load of a shared machine; absolute rates do not.
2. ``python -m sleuth demo --encoder E`` twice with a fresh ``SLEUTH_HOME`` (first run: builds the indexes; second
   run: reuses them): wall time of each, when the first results showed, when the dense index was ready, and the
   nDCG@10 table rows; once with the vectors shipped for the bundled SciFact (``sleuth.index.prebuilt``) and once
   encoding every abstract (``SLEUTH_PREBUILT=0``, as before they shipped).

    python -m bench.demo_bench [--passages 128] [--encoders minilm-onnx-128 minilm] [--vectors prebuilt encoded]
        [--no-demo]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from bench.common import (
    Report,
    ResultTable,
    base_parser,
    bench_main,
    load_average,
    load_scifact,
    measure_interleaved,
    progress,
    ratio,
)
from sleuth.cli.demo_cmd import DEMO_ENCODER
from sleuth.models.registry import load_encoder

NAME = "demo_bench"
ENCODERS = ("minilm", "minilm-onnx", "minilm-onnx-128")
ROW = re.compile(r"^\W*(bm25|dense|hybrid)\s*│\s*([0-9.]+)")
READY = re.compile(r"dense index ready after ([0-9.]+) s")
FIRST_RESULTS = re.compile(r"^bm25: ")  # the title of the first result table the demo prints


def encoder_rates(args: argparse.Namespace) -> tuple[ResultTable, dict[str, Any]]:
    """Passages/s of each encoder on the same passages, alternating."""
    texts = load_scifact().contents[:args.passages]
    encoders = {name: load_encoder(name) for name in ENCODERS}
    for encoder in encoders.values():
        encoder.encode_passages(texts[:32])  # warm-up
    loads = [load_average()]
    progress(f"encode {len(texts)} passages x{args.repeats} per encoder")
    timings = measure_interleaved({name: (lambda e=e: e.encode_passages(texts)) for name, e in encoders.items()},
                                  repeats=args.repeats, warmup=False)
    loads.append(load_average())
    base = timings["minilm"].median
    table = ResultTable(f"Encoders on {len(texts)} SciFact abstracts (batch 32, median of {args.repeats} "
                        f"alternating runs, load average {loads[0]} -> {loads[1]})",
                        ["encoder", "tokens", "passages/s", "speed / torch 256"])
    for name, timing in timings.items():
        table.add(name, encoders[name].max_length, len(texts) / timing.median, ratio(base, timing.median))
    return table, {"load_average": loads, "passages": len(texts),
                   "encode": {n: {**t.summary(), "passages_per_s": len(texts) / t.median} for n, t in timings.items()}}


def demo_run(home: str, encoder: str, prebuilt: bool = True) -> dict[str, Any]:
    """One `sleuth demo` in ``home``: wall seconds, when its first results (BM25's) showed, when the dense index was
    ready (the demo encodes in the background meanwhile) and its nDCG@10 per pipeline; ``prebuilt=False`` sets
    SLEUTH_PREBUILT=0 (every abstract encoded, the shipped vectors ignored)."""
    load = load_average()
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "sleuth", "demo", "--encoder", encoder], text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env={**os.environ, "SLEUTH_HOME": home, "COLUMNS": "200",
                                    "SLEUTH_PREBUILT": "1" if prebuilt else "0"})
    assert process.stdout is not None
    lines, first_results = [], None
    for line in process.stdout:
        lines.append(line)
        if first_results is None and FIRST_RESULTS.match(line):
            first_results = time.perf_counter() - start
    wall = time.perf_counter() - start
    output = "".join(lines)
    if process.wait() != 0:
        raise RuntimeError(f"sleuth demo failed: {output[-2000:]}")
    ready = READY.search(output)
    ndcg = {m.group(1): float(m.group(2)) for line in lines if (m := ROW.match(line))}
    return {"wall_s": wall, "first_results_s": first_results, "dense_ready_s": float(ready.group(1)) if ready else None,
            "ndcg10": ndcg, "load_average": [load, load_average()]}


def demo_runs(args: argparse.Namespace) -> tuple[ResultTable, dict[str, Any]]:
    table = ResultTable("`sleuth demo`, fresh SLEUTH_HOME: first run (builds the indexes) and second run",
                        ["encoder", "vectors", "run", "wall s", "first results s", "dense index s", "nDCG@10 bm25",
                         "nDCG@10 dense", "nDCG@10 hybrid", "load average (start)"])
    data: dict[str, Any] = {}
    for encoder in args.encoders:
        for vectors in args.vectors:
            with tempfile.TemporaryDirectory(prefix="sleuth-demo-") as home:
                for run in ("first", "second"):
                    progress(f"sleuth demo --encoder {encoder}, {vectors} vectors: {run} run")
                    row = demo_run(home, encoder, prebuilt=vectors == "prebuilt")
                    data[f"{encoder}/{vectors}/{run}"] = row
                    table.add(encoder, vectors, run, row["wall_s"], row["first_results_s"], row["dense_ready_s"],
                              *(row["ndcg10"].get(p, float("nan")) for p in ("bm25", "dense", "hybrid")),
                              str(row["load_average"][0]))
    return table, data


def run(args: argparse.Namespace) -> Report:
    tables, data = [], {}
    if args.passages:
        table, data["encoders"] = encoder_rates(args)
        tables.append(table)
    if args.demo:
        table, data["demo"] = demo_runs(args)
        tables.append(table)
    notes = ["minilm = torch all-MiniLM-L6-v2 (sentence-transformers, 256 tokens); minilm-onnx = its int8 ONNX "
             "export at 256 tokens, the demo's encoder; minilm-onnx-128 = the same reading 128 tokens",
             "first results = when the demo printed BM25's first result table (the dense index is built in the "
             "background meanwhile); dense index = when the dense index was ready, by the demo's own clock",
             "vectors: prebuilt = the SciFact vectors shipped in sleuth/data/vectors (looked up by passage content, "
             "float16); encoded = SLEUTH_PREBUILT=0, every abstract encoded on this machine",
             "absolute times depend on the load of the shared 2-core machine (load average in the tables); the "
             "encoder ratios were measured in one process on the same passages"]
    return Report(tables=tables, data=data, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=128, help="passages per encoder run (0: skip)")
    parser.add_argument("--encoders", nargs="+", default=[DEMO_ENCODER], help="demo encoders to run")
    parser.add_argument("--no-demo", dest="demo", action="store_false", help="only the encoder rates")
    parser.add_argument("--vectors", nargs="+", default=["prebuilt", "encoded"], choices=["prebuilt", "encoded"],
                        help="first runs with the shipped SciFact vectors and/or encoding every abstract")
    parser.set_defaults(repeats=2)
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
