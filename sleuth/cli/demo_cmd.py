"""`sleuth demo`: index the bundled SciFact, answer a few real queries and print an evaluation table.

The demo's dense retriever is all-MiniLM-L6-v2 as int8 ONNX (``minilm-onnx``, 256 tokens like torch): it indexes
the 5,183 abstracts faster than torch with nDCG@10 within 0.005 of it, and needs no torch at all (measured with
``bench/demo_bench.py``; reading only 128 tokens, ``minilm-onnx-128``, would be faster still but loses 0.02). Its
index has its own cache key (the encoder name), so it never mixes with the torch ``dense`` pipeline's index;
queries are encoded by the same model.
"""

from __future__ import annotations

import time

import typer

from sleuth.cli.common import console, corpus_source, out, workspace
from sleuth.cli.render import hits_table
from sleuth.corpus.beir import load_beir
from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.eval.experiment import Experiment
from sleuth.pipelines.config import build_stages, load_pipeline

DEMO_QUERIES = (
    "0-dimensional biomaterials show inductive properties.",
    "Vitamin D deficiency is associated with higher risk of tuberculosis.",
    "Smoking during pregnancy affects the birth weight of babies.",
)
DEMO_ENCODER = "minilm-onnx"


def demo_pipelines(ws, encoder: str = DEMO_ENCODER) -> dict:
    """bm25 (built-in), dense and hybrid (the built-ins' stages with ``encoder``), bound to ``ws``."""
    dense = {"dense": {"k": 1000, "encoder": encoder}}
    configs = {"dense": [dense],
               "hybrid": [{"fuse": {"method": "rrf", "rrf_k": 60, "branches": [{"bm25": {"k": 1000}}, dense]}}]}
    stages = {"bm25": load_pipeline("bm25", ws)}
    for name, entries in configs.items():
        stages[name] = build_stages(entries, ws, where=f"demo {name}")
        stages[name].name = name
    return stages


def demo(
    k: int = typer.Option(3, "-k", help="Results shown per query."),
    max_queries: int = typer.Option(0, help="Evaluate on the first N train queries only (0: all 809)."),
    device: str = typer.Option("cpu", help="Encoder device."),
    encoder: str = typer.Option(DEMO_ENCODER, help="Dense encoder (minilm: torch at 256 tokens, slower to index)."),
) -> None:
    """Build BM25 and MiniLM indexes of the bundled SciFact, search, and evaluate bm25 / dense / hybrid."""
    dataset = load_beir(bundled_dataset_dir(), "train")
    ws = workspace(corpus_source(bundled_dataset_dir(), "beir"), device)
    console.print(f"[bold]sleuth demo[/bold]: bundled SciFact (5,183 abstracts, 809 train claims), dense encoder "
                  f"{encoder}. The first run builds the indexes (a few minutes on 2 CPU cores); later runs reuse "
                  "them.")
    start = time.perf_counter()
    stages = demo_pipelines(ws, encoder)
    console.print(f"indexes ready in {time.perf_counter() - start:.1f} s (cache: {ws.home / 'indexes'})")
    for query in DEMO_QUERIES:
        out.print(hits_table(f"hybrid: {query}", stages["hybrid"].search(query, k=k)))
    queries = dataset.queries[:max_queries] if max_queries else dataset.queries
    result = Experiment(stages, queries, qrels=dataset.qrels, measures=("nDCG@10", "R@100", "RR@10")).run()
    out.print(result.to_table(title=f"SciFact train ({len(queries)} queries), baseline bm25"))


def register(app: typer.Typer) -> None:
    app.command()(demo)
