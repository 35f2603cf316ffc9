"""Training speed of Chain-of-Skills on the CPU: examples/s per skill, before and after each speed-up.

    .venv/bin/python -m bench.cos_train_bench --steps 3 --threads 1

Each configuration trains from the packaged MiniLM on the 100 HotpotQA training questions (every skill's examples
from them), ``--steps`` timed batches of 8 per skill (round-robin, after one untimed batch per skill), through the
real trainer (``train_cos``). Configurations add one speed-up at a time: length buckets; 3 sampled reranking
negatives instead of all 8 distractors (the paper's hop-2 reranking reads question + two passages); LoRA experts
instead of full-copy attention experts (gradients for the deltas only); frozen context experts (their vectors
cached: the bi-encoder skills encode only the queries with gradients); LoRA in the upper layers only (backward stops
there). "mix" is the examples/s of the default skill schedule (interleaved, weights 1/1/1/0.8/0.5). The machine is
shared: compare the ratios, and read the load average in the notes.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from bench.common import Report, ResultTable, base_parser, bench_main, progress
from sleuth.paths import shared_data_dir

NAME = "cos_train_bench"
SKILLS = ("retrieval", "expanded", "reranking", "linking", "span")
MIX = {"retrieval": 1.0, "expanded": 1.0, "reranking": 1.0, "linking": 0.8, "span": 0.5}
#: name: (variant, bucket, rerank negatives, lora frozen experts, expert layers, pooling)
CONFIGS = {
    "before: attention experts, no buckets, all negatives": ("attention", False, None, None, None, "cls"),
    "+ length buckets": ("attention", True, None, None, None, "cls"),
    "+ 3 reranking negatives": ("attention", True, 3, None, None, "cls"),
    "LoRA experts (r8, all layers)": ("lora", True, 3, (), None, "mean"),
    "+ frozen context experts (cached vectors)": ("lora", True, 3, (1, 3), None, "mean"),
    "+ LoRA in layers 2-5 only": ("lora", True, 3, (1, 3), (2, 3, 4, 5), "mean"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="timed batches per skill and configuration")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--only", action="append", default=[], help="run only configurations containing this")
    return parser


def run(args: argparse.Namespace) -> Report:
    import torch

    from sleuth.systems.chain_of_skills.experts import LoraSpec
    from sleuth.systems.chain_of_skills.model import MultiExpertConfig, MultiExpertEncoder
    from sleuth.systems.chain_of_skills.span_head import SpanProposalHead
    from sleuth.systems.chain_of_skills.training import CosTrainConfig, train_cos
    from sleuth.systems.chain_of_skills.training_data import hotpotqa_examples, load_hotpotqa

    torch.set_num_threads(args.threads)
    folder = shared_data_dir() / "hotpotqa"
    questions, corpus = load_hotpotqa(folder / "hotpot_train_100.json", folder / "hotpot_train_100_corpus.json")
    data = hotpotqa_examples(questions, corpus)
    steps = 1 if args.quick else args.steps
    table = ResultTable(f"Chain-of-Skills training speed, batch 8, {args.max_length} tokens, torch threads "
                        f"{args.threads}: examples/s per skill ({steps} timed batches each)",
                        ["configuration", *SKILLS, "mix", "mix speed-up", "CPU s"])
    data_out: dict[str, dict] = {}
    base = None
    for name, (variant, bucket, rerank_negatives, frozen, layers, pooling) in CONFIGS.items():
        if args.only and not any(part in name for part in args.only):
            continue
        progress(name)
        options = {"expert_layers": layers} if layers else {}
        lora = LoraSpec(frozen_experts=frozen) if variant == "lora" else None
        config = MultiExpertConfig(variant=variant, lora=lora, pooling=pooling, **options)
        model = MultiExpertEncoder.from_backbone("minilm", config)
        head = SpanProposalHead(model.dim, seed=13)
        settings = CosTrainConfig(lr=5e-5, batch_size=8, max_steps=(steps + 1) * len(SKILLS),
                                  max_length=args.max_length, sampling="round-robin", bucket=bucket,
                                  rerank_negatives=rerank_negatives, threads=args.threads)
        cpu = time.process_time()
        with tempfile.TemporaryDirectory() as out:
            result = train_cos(model, head, {s: data[s] for s in SKILLS}, out, settings)
        cpu = time.process_time() - cpu
        rates, seconds = {}, {}
        for skill in SKILLS:
            timed = [(t, n) for t, n, s in zip(result.step_seconds, result.examples, result.skills) if s == skill][1:]
            seconds[skill] = sum(t for t, _ in timed) / len(timed)
            rates[skill] = sum(n for _, n in timed) / sum(t for t, _ in timed)
        mix = 8 * sum(MIX.values()) / sum(MIX[s] * seconds[s] for s in SKILLS)
        base = base or mix
        table.add(name, *[rates[s] for s in SKILLS], mix, mix / base, cpu)
        data_out[name] = {"examples_per_s": rates, "seconds_per_batch": seconds, "mix_examples_per_s": mix,
                          "cpu_s": cpu}
    notes = [f"load average at the end {os.getloadavg()[0]:.1f} (2 cores shared with other jobs)",
             "each configuration keeps the speed-ups of the rows above it, except that the LoRA rows replace the "
             "full-copy attention experts; CPU s = the whole configuration (model set-up and save included)"]
    return Report([table], data_out, notes)


if __name__ == "__main__":
    bench_main(NAME, build_parser(), run)
