"""`sleuth quest train`: fine-tune QUEST's relevance classifier (MiniLM cross-encoder, binary cross-entropy)
and tune its decision thresholds on held-out queries (0.00..0.95 in steps of 0.05)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from sleuth.cli.common import DEVICE, console, out, positive_number
from sleuth.errors import ConfigError
from sleuth.overwrite import refuse_overwriting_inputs


def train_classifier_command(
    examples: Path = typer.Option(..., help="QUEST training examples (JSONL: query, docs, original_query, ...)."),
    documents: Path = typer.Option(..., help="QUEST corpus (documents.jsonl {title, text}); see `sleuth quest "
                                             "corpus` for the proxy built from attribution sentences."),
    out_dir: Path | None = typer.Option(None, "--out", help="Model directory (default: "
                                                               "$SLEUTH_HOME/models/quest-classifier): new, empty "
                                                               "or an earlier model (replaced)."),
    tune_examples: Path | None = typer.Option(None, help="Validation examples for the threshold sweep; default: "
                                                            "hold out the last --tune-queries training queries."),
    tune_half: bool = typer.Option(True, "--tune-half/--all-tune-examples",
                                   help="Tune on the tuning half of --tune-examples only (SHA-1 of the query text "
                                        "even; the report half stays unseen for reports)."),
    tune_queries: int = typer.Option(60, min=1, help="Training queries held out for the threshold sweep (no "
                                                     "--tune-examples); also caps the queries read from "
                                                     "--tune-examples."),
    tune_retriever: list[str] | None = typer.Option(None, help="Retrievers whose top-100 candidates tune a "
                                                                  "threshold (repeatable; default bm25 and dense)."),
    candidates: int = typer.Option(100, min=1,
                                   help="Retriever candidates the classifier reads when tuning (paper: 100)."),
    domain: list[str] | None = typer.Option(None, help="Use only these domains (repeatable), e.g. films."),
    positive_repeats: int = typer.Option(50, min=1, help="Copies of each positive (paper: 50)."),
    retriever_negatives: int = typer.Option(250, min=0, help="Negatives sampled from BM25's top --retriever-depth "
                                                             "(paper: 250)."),
    random_negatives: int = typer.Option(250, min=0, help="Negatives sampled from the whole corpus (paper: 250)."),
    retriever_depth: int = typer.Option(1000, min=1,
                                        help="BM25 depth the retriever negatives come from (paper: 1000)."),
    max_queries: int | None = typer.Option(None, min=1, help="Train on the first N usable queries only."),
    epochs: int = typer.Option(1, min=1, help="Passes over the training pairs."),
    max_steps: int | None = typer.Option(None, min=1, help="Stop after this many optimiser steps."),
    batch_size: int = typer.Option(16, min=1, help="Training batch size."),
    learning_rate: float = typer.Option(2e-5, "--lr", "--learning-rate", callback=positive_number,
                                        help="AdamW learning rate (a LoRA wants more, e.g. 5e-4)."),
    max_length: int = typer.Option(384, min=1, help="Tokens of query + document the classifier reads (paper: 384)."),
    lora_rank: int | None = typer.Option(None, min=1, help="Train a LoRA adapter of this rank over the frozen backbone "
                                                           "(a few MB; what ships) instead of every weight."),
    lora_layer: list[int] | None = typer.Option(None, min=0, help="Encoder layers that get the LoRA (repeatable; "
                                                                  "default all); top layers only skip the lower "
                                                                  "backward pass."),
    threads: int | None = typer.Option(None, min=1, help="Torch CPU threads (1 is fastest on a busy shared CPU)."),
    max_minutes: float | None = typer.Option(None, callback=positive_number,
                                             help="Stop training after this much wall time."),
    expand_depth: int = typer.Option(10, min=0, help="Per-constraint retrieval depth of the set-operation variant."),
    save_runs: Path | None = typer.Option(None, help="Write the scored tuning runs here (JSON) for reports."),
    backbone: str = typer.Option("minilm", help="Backbone: minilm (packaged all-MiniLM-L6-v2) or a model path."),
    seed: int = typer.Option(0, help="Seed of negative sampling and shuffling."),
    int8: bool = typer.Option(False, "--int8", help="Classify the tuning candidates with int8 dynamic quantisation "
                                                    "(CPU only, about 2x faster; the saved model stays fp32)."),
    device: str = DEVICE,
) -> None:
    """Train the QUEST relevance classifier and tune its thresholds; writes a model directory with training.json."""
    from sleuth.models.adapters import adapter_info, is_adapter
    from sleuth.models.registry import backbone_dir
    from sleuth.systems.quest.classifier_training import ExampleBudget, TrainingConfig
    from sleuth.systems.quest.methods import RETRIEVERS, default_classifier_dir, quest_workspace
    from sleuth.systems.quest.task import load_task
    from sleuth.systems.quest.training import TuningPlan, train_and_tune
    from sleuth.train.checks import check_lora_rank, check_max_length, refuse_other_files

    unknown = [r for r in tune_retriever or () if r not in RETRIEVERS]
    if unknown:
        raise ConfigError(f"--tune-retriever: unknown retriever '{unknown[0]}' (known: {', '.join(RETRIEVERS)})")
    if lora_layer and lora_rank is None:
        raise ConfigError("--lora-layer places a LoRA: it needs --lora-rank")
    backbone_dir(backbone, "--backbone")
    if is_adapter(Path(backbone_dir(backbone))):  # before: trained, then unloadable (an adapter of an adapter)
        raise ConfigError(f"--backbone {backbone}: a trained adapter (sleuth-adapter.json), not a model to train one "
                          f"on; give its backbone ('{adapter_info(Path(backbone))['backbone']}') or a full model folder")
    check_max_length(max_length, {"--backbone": backbone})
    check_lora_rank(lora_rank, {"--backbone": backbone})
    if out_dir is not None:
        refuse_overwriting_inputs(out_dir, [examples, documents, tune_examples,
                                            None if backbone == "minilm" else backbone], folder=True)
    refuse_other_files(out_dir or default_classifier_dir())
    if save_runs is not None:
        refuse_overwriting_inputs(save_runs, [examples, documents, tune_examples], option="--save-runs", file=True)
    budget = ExampleBudget(positive_repeats, retriever_negatives, random_negatives, retriever_depth, max_queries,
                           seed)
    config = TrainingConfig(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate, max_steps=max_steps,
                            seed=seed, max_length=max_length, lora_rank=lora_rank,
                            lora_layers=tuple(lora_layer) if lora_layer else None, threads=threads,
                            max_minutes=max_minutes)
    train = load_task(examples, domain, skip_empty=True)
    tune = load_task(tune_examples, domain, skip_empty=True) if tune_examples is not None else None
    plan = TuningPlan(tune=tune, held_out=tune_queries, tune_half=tune_half, retrievers=tuple(tune_retriever or ("bm25", "dense")),
                      candidates=candidates, int8=int8, expand_depth=expand_depth, runs=save_runs)
    ws = quest_workspace(documents, device)
    start = time.perf_counter()
    target = out_dir or default_classifier_dir()
    record = train_and_tune(ws, train, plan, budget, config, target, backbone=backbone, device=device)
    console.print(f"trained {record['steps']} steps ({record['examples_seen']:,} of {record['train_pairs']:,} recipe "
                  f"pairs from {record['train_queries']} queries, {record['examples_per_second']} examples/s over "
                  f"{record['step_seconds']:.0f} s of steps) in {record['train_seconds']:.0f} s with loading; "
                  f"{time.perf_counter() - start:.0f} s in all; wrote {target}")
    for name, cut in record["cuts"].items():
        out.print(f"set rule {name}: {cut} (average F1 {record['tuned_f1'][name]:.4f} on "
                  f"{record['tune_queries']} tuning queries)")

