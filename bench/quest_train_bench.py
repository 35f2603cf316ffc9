"""Training speed of QUEST's relevance classifier on the CPU: examples/s of full fine-tuning against LoRA adapters
(all layers, top layers only) and of max length 384 against 256, on the same recipe pairs, interleaved.

    .venv/bin/python -m bench.quest_train_bench --steps 6 --repeats 2

Every variant trains ``--steps`` steps of batch ``--batch-size`` from the packaged MiniLM on the same batches
(length-bucketed); the first round is an untimed warm-up. The machine is shared, so compare the ratios.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.common import Report, ResultTable, base_parser, bench_main, progress
from bench.quest_bench import proxy_corpus
from sleuth.paths import shared_data_dir

NAME = "quest_train_bench"
VARIANTS = {  # name: (max_length, lora_rank, lora_layers)
    "full fine-tuning, 384 tokens": (384, None, None),
    "full fine-tuning, 256 tokens": (256, None, None),
    "LoRA r16 all 6 layers, 256 tokens": (256, 16, None),
    "LoRA r16 top 3 layers, 256 tokens": (256, 16, (3, 4, 5)),
}


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="training steps per variant and round")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--queries", type=int, default=8, help="training queries the pairs come from")
    return parser


def run(args: argparse.Namespace) -> Report:
    import torch

    from sleuth.systems.quest.classifier_training import ExampleBudget, TrainingConfig, train_classifier, training_pairs
    from sleuth.systems.quest.methods import corpus_documents, quest_workspace, retriever
    from sleuth.systems.quest.task import load_task

    ws = quest_workspace(proxy_corpus(), show_progress=False)
    documents = corpus_documents(ws)
    train = load_task(shared_data_dir() / "quest" / "train.jsonl", ["films", "books"], skip_empty=True)
    queries = train.queries[:args.queries]
    pairs = training_pairs(queries, train.gold, documents, retriever(ws, "bm25", 1000).transform(queries),
                           ExampleBudget())
    steps = 2 if args.quick else args.steps
    seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
    names = list(VARIANTS)
    for round_ in range(args.repeats + 1):  # round 0: warm-up
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            max_length, rank, layers = VARIANTS[name]
            config = TrainingConfig(max_length=max_length, max_steps=steps, batch_size=args.batch_size,
                                    lora_rank=rank, lora_layers=layers, learning_rate=5e-4 if rank else 2e-5)
            progress(f"round {round_}: {name}")
            start = time.perf_counter()
            train_classifier(pairs, config, show_progress=False)
            if round_:
                seconds[name].append(time.perf_counter() - start)
    table = ResultTable(f"classifier training speed, batch {args.batch_size}, {steps} steps per run, median of "
                        f"{args.repeats} (torch threads {torch.get_num_threads()})",
                        ["variant", "examples/s", "speed-up"])
    base = None
    rates = {}
    for name in names:
        median = sorted(seconds[name])[len(seconds[name]) // 2]
        rates[name] = steps * args.batch_size / median
        base = base or rates[name]
        table.add(name, rates[name], rates[name] / base)
    notes = [f"{len(pairs):,} recipe pairs from {len(queries)} films/books train queries (proxy corpus); "
             f"load average at the end {os.getloadavg()[0]:.1f}; timing includes model loading"]
    return Report([table], {"examples_per_s": rates, "seconds": seconds}, notes)


if __name__ == "__main__":
    bench_main(NAME, build_parser(), run)
