"""Dense encoding: passages/s of the torch (minilm) and ONNX int8 (minilm-onnx) encoders on the same passages.

Both encode the first N SciFact passages (title + text, as sleuth indexes them) with batch size 32; runs alternate
between the backends after an untimed one-batch warm-up of each. The two backends' vectors are compared by mean cosine.

    python -m bench.dense_bench [--passages 512] [--batch-size 32] [--repeats 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np

from bench.common import (
    Report,
    ResultTable,
    base_parser,
    bench_main,
    load_scifact,
    measure_interleaved,
    progress,
    ratio,
    time_call,
)
from sleuth.models.encoder import Encoder
from sleuth.models.registry import load_encoder

NAME = "dense_bench"
BACKENDS = ("minilm", "minilm-onnx")
QUICK_PASSAGES = 128


def load_encoders(batch_size: int) -> tuple[dict[str, Encoder], dict[str, float]]:
    """The encoders by name, and the seconds each took to load."""
    encoders, load_s = {}, {}
    for name in BACKENDS:
        load_s[name], encoders[name] = time_call(lambda: load_encoder(name, batch_size=batch_size))
    return encoders, load_s


def mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Mean row-wise cosine similarity of two equally shaped matrices."""
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float(np.mean(np.sum(a * b, axis=1) / np.maximum(norms, 1e-12)))


def thread_settings() -> dict[str, Any]:
    """Intra-op thread counts the backends use (torch's setting; onnxruntime defaults to the physical cores)."""
    import torch

    return {"torch_threads": torch.get_num_threads(), "onnx_intra_op_threads": "default (0)"}


def run(args: argparse.Namespace) -> Report:
    """Time both backends on the same passages, alternating, and compare their vectors."""
    n_passages = args.passages or (QUICK_PASSAGES if args.quick else 512)
    texts = load_scifact().contents[:n_passages]
    encoders, load_s = load_encoders(args.batch_size)
    for encoder in encoders.values():  # warm-up on one batch: lazy initialisation, allocator, thread pools
        encoder.encode_passages(texts[:args.batch_size])
    progress(f"encode {len(texts)} passages x{args.repeats} per backend")
    timings = measure_interleaved({name: (lambda e=e: e.encode_passages(texts)) for name, e in encoders.items()},
                                  repeats=args.repeats, warmup=False)
    cosine = mean_cosine(timings["minilm"].result, timings["minilm-onnx"].result)
    base = timings["minilm"].median
    table = ResultTable(f"Encoders on {len(texts)} SciFact passages (batch {args.batch_size}, median of "
                        f"{args.repeats} alternating runs)",
                        ["encoder", "backend", "passages/s", "median s", "speed / torch", "load s"])
    for name, timing in timings.items():
        table.add(name, encoders[name].backend, len(texts) / timing.median, timing.median,
                  ratio(base, timing.median), load_s[name])
    data = {"passages": len(texts), "batch_size": args.batch_size, "mean_cosine_torch_vs_onnx": cosine,
            "threads": thread_settings(), "load_s": load_s,
            "encode": {n: {**t.summary(), "passages_per_s": len(texts) / t.median} for n, t in timings.items()}}
    notes = [f"mean cosine between the torch and ONNX int8 vectors of the same passages: {cosine:.4f}",
             f"threads: {data['threads']}"]
    return Report(tables=[table], data=data, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=0,
                        help=f"how many SciFact passages (default 512; --quick: {QUICK_PASSAGES})")
    parser.add_argument("--batch-size", type=int, default=32)
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
