"""`sleuth quest train-dense`: train QUEST's dual encoder (in-batch softmax over training queries and their gold
documents, BM25 hard negatives) as a LoRA adapter over the packaged MiniLM or in full."""

from __future__ import annotations

from pathlib import Path

import typer

from sleuth.cli.common import DEVICE, console, positive_number
from sleuth.errors import ConfigError
from sleuth.overwrite import refuse_overwriting_inputs


def train_dense_command(
    examples: Path = typer.Option(..., help="QUEST training examples (JSONL: query, docs, ...)."),
    documents: Path = typer.Option(..., help="QUEST corpus (documents.jsonl {title, text}), e.g. the proxy of "
                                             "`sleuth quest corpus`."),
    out_dir: Path = typer.Option(..., "--out", help="Output directory (an adapter with --lora-rank, else a "
                                                    "sentence-transformers model): new, empty or an earlier "
                                                    "model (replaced)."),
    domain: list[str] | None = typer.Option(None, help="Use only these domains (repeatable), e.g. films."),
    hard_negatives: int = typer.Option(1, min=0, help="BM25 negatives per example (0: in-batch negatives only)."),
    negative_depth: int = typer.Option(50, min=1, help="BM25 depth the hard negatives are sampled from."),
    epochs: int = typer.Option(1, min=1, help="Passes over the examples."),
    max_steps: int | None = typer.Option(None, min=1, help="Stop after this many optimiser steps."),
    batch_size: int = typer.Option(32, min=1, help="Examples per batch (the other examples' documents are negatives)."),
    lr: float = typer.Option(2e-5, callback=positive_number,
                             help="AdamW learning rate (a LoRA wants more, e.g. 5e-4)."),
    max_length: int = typer.Option(256, min=1, help="Token limit of queries and documents while training."),
    lora_rank: int | None = typer.Option(None, min=1, help="Train a LoRA adapter of this rank (a few MB; what ships)."),
    max_minutes: float | None = typer.Option(None, callback=positive_number,
                                             help="Stop training after this much wall time."),
    seed: int = typer.Option(0, help="Seed of negative sampling, shuffling and initialisation."),
    device: str = DEVICE,
) -> None:
    """Train QUEST's dual encoder; `quest-dense` style pipelines use it as `dense: {encoder: <out>}`."""
    from sleuth.systems.quest.dense_training import DenseExampleBudget, dense_examples
    from sleuth.systems.quest.methods import quest_workspace
    from sleuth.systems.quest.task import load_task
    from sleuth.train.checks import check_lora_rank, check_max_length, refuse_other_files
    from sleuth.train.contrastive import TrainConfig, train_contrastive

    check_max_length(max_length, {"the backbone": "minilm"})
    check_lora_rank(lora_rank, {"the backbone": "minilm"})
    refuse_overwriting_inputs(out_dir, [examples, documents], folder=True)
    refuse_other_files(out_dir)
    ws = quest_workspace(documents, device)
    task = load_task(examples, domain, skip_empty=True)
    data = dense_examples(ws, task.queries, DenseExampleBudget(hard_negatives, negative_depth, seed))
    if not data:  # before: "no training examples", naming neither file
        raise ConfigError(f"--examples {examples}: none of its {len(task.queries)} queries has a gold document in "
                          f"--documents {documents}; nothing to train on")
    config = TrainConfig(lr=lr, batch_size=batch_size, epochs=epochs, max_steps=max_steps, max_length=max_length,
                         seed=seed, device=device, lora_rank=lora_rank, max_minutes=max_minutes)
    result = train_contrastive("minilm", data, out_dir, config)
    first, last = result.first_last(20)
    console.print(f"trained {result.steps} steps of {batch_size} on {len(data):,} examples from "
                  f"{len(task.queries)} queries in {result.seconds:.0f} s "
                  f"({result.steps * batch_size / max(result.seconds, 1e-9):.1f} examples/s); "
                  f"loss {first:.3f} -> {last:.3f}; wrote {out_dir}")
