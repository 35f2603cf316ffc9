"""`sleuth demo`: index the bundled SciFact, answer a few real queries and print an evaluation table."""

from __future__ import annotations

import time

import typer

from sleuth.cli.common import console, corpus_source, out, workspace
from sleuth.cli.render import hits_table
from sleuth.corpus.beir import load_beir
from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.eval.experiment import Experiment
from sleuth.pipelines.config import load_pipeline

DEMO_QUERIES = (
    "0-dimensional biomaterials show inductive properties.",
    "Vitamin D deficiency is associated with higher risk of tuberculosis.",
    "Smoking during pregnancy affects the birth weight of babies.",
)
PIPELINES = ("bm25", "dense", "hybrid")


def demo(
    k: int = typer.Option(3, "-k", help="Results shown per query."),
    max_queries: int = typer.Option(0, help="Evaluate on the first N train queries only (0: all 809)."),
    device: str = typer.Option("cpu", help="Encoder device."),
) -> None:
    """Build BM25 and MiniLM indexes of the bundled SciFact, search, and evaluate bm25 / dense / hybrid."""
    dataset = load_beir(bundled_dataset_dir(), "train")
    ws = workspace(corpus_source(bundled_dataset_dir(), "beir"), device)
    console.print("[bold]sleuth demo[/bold]: bundled SciFact (5,183 abstracts, 809 train claims). "
                  "The first run builds the indexes (a few minutes on 2 CPU cores); later runs reuse them.")
    start = time.perf_counter()
    stages = {name: load_pipeline(name, ws) for name in PIPELINES}
    console.print(f"indexes ready in {time.perf_counter() - start:.1f} s (cache: {ws.home / 'indexes'})")
    for query in DEMO_QUERIES:
        out.print(hits_table(f"hybrid: {query}", stages["hybrid"].search(query, k=k)))
    queries = dataset.queries[:max_queries] if max_queries else dataset.queries
    result = Experiment(stages, queries, qrels=dataset.qrels, measures=("nDCG@10", "R@100", "RR@10")).run()
    out.print(result.to_table(title=f"SciFact train ({len(queries)} queries), baseline bm25"))


def register(app: typer.Typer) -> None:
    app.command()(demo)
