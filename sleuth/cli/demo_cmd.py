"""`sleuth demo`: index the bundled SciFact, answer a few real queries and print an evaluation table.

The dense retriever is the int8 ONNX MiniLM (``minilm-onnx``, its own cache key), whose SciFact vectors ship with
sleuth (``sleuth.index.prebuilt``); another encoder encodes the abstracts in a background thread while BM25's results
are shown. Every pipeline retrieves ``DEMO_DEPTH`` candidates. Why these choices (measured): docs/demo/README.md.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import typer

from sleuth.cli.common import DEVICE, console, corpus_source, out, workspace
from sleuth.cli.render import hits_table
from sleuth.corpus.beir import load_beir
from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.errors import ConfigError
from sleuth.eval.experiment import Experiment
from sleuth.pipelines.config import load_pipeline

DEMO_QUERIES = (
    "0-dimensional biomaterials show inductive properties.",
    "Vitamin D deficiency is associated with higher risk of tuberculosis.",
    "Smoking during pregnancy affects the birth weight of babies.",
)
DEMO_ENCODER = "minilm-onnx"
DEMO_DEPTH = 100
MEASURES = ("nDCG@10", "R@100", "RR@10")


def builtin(names: tuple[str, ...], ws, encoder: str = DEMO_ENCODER, depth: int = DEMO_DEPTH) -> dict:
    """The built-in pipelines ``names`` (their shipped YAML) with ``depth`` candidates per retriever and ``encoder``
    for dense retrieval, bound to ``ws``; building a dense one encodes the corpus unless its index is cached."""
    keys: dict[str, dict] = {"bm25": {"k": depth}, "dense": {"k": depth, "encoder": encoder}}
    return {name: load_pipeline(name, ws, stage_keys=keys) for name in names}


def bm25_pipeline(ws, depth: int = DEMO_DEPTH) -> dict:
    """The demo's bm25 pipeline, bound to ``ws``."""
    return builtin(("bm25",), ws, depth=depth)


def dense_pipelines(ws, encoder: str = DEMO_ENCODER, depth: int = DEMO_DEPTH) -> dict:
    """The demo's dense and hybrid pipelines, bound to ``ws``."""
    return builtin(("dense", "hybrid"), ws, encoder, depth)


def demo_pipelines(ws, encoder: str = DEMO_ENCODER, depth: int = DEMO_DEPTH) -> dict:
    """bm25, dense and hybrid, bound to ``ws``."""
    return {**bm25_pipeline(ws, depth), **dense_pipelines(ws, encoder, depth)}


def demo(
    k: int = typer.Option(3, "-k", min=1, help="Results shown per query."),
    max_queries: int | None = typer.Option(None, min=1, help="Evaluate on the first N train queries only (default: "
                                                             "all 809; 0 is refused, as by eval)."),
    device: str = DEVICE,
    encoder: str = typer.Option(DEMO_ENCODER, help="Dense encoder (minilm: torch at 256 tokens, slower to index)."),
) -> None:
    """Build BM25 and MiniLM indexes of the bundled SciFact, search, and evaluate bm25 / dense / hybrid."""
    from sleuth.models.registry import check_encoder_name

    try:  # before anything runs, and named as the option (not as the packaged dense.yaml's key)
        check_encoder_name(encoder)
    except ConfigError as error:
        raise ConfigError(f"--encoder: {error}") from None
    start = time.perf_counter()
    dataset = load_beir(bundled_dataset_dir(), "train")
    queries = dataset.queries[:max_queries] if max_queries else dataset.queries
    ws = workspace(corpus_source(bundled_dataset_dir(), "beir"), device)
    console.print(f"[bold]sleuth demo[/bold]: bundled SciFact (5,183 abstracts, 809 train claims), dense encoder "
                  f"{encoder}. The dense index comes from the abstracts' vectors shipped with sleuth (another "
                  "encoder encodes them: minutes on 2 CPU cores, in the background while BM25's results are "
                  "shown); later runs reuse the indexes.")
    stages = bm25_pipeline(ws)
    ws.show_progress = False  # the background encoding must not draw a progress bar between the tables
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="demo-dense") as background:
        dense = background.submit(dense_pipelines, ws, encoder)
        console.print(f"bm25 index ready in {time.perf_counter() - start:.1f} s (cache: {ws.home / 'indexes'})")
        for query in DEMO_QUERIES:
            out.print(hits_table(f"bm25: {query}", stages["bm25"].search(query, k=k)))
        if not dense.done():
            result = Experiment(stages, queries, qrels=dataset.qrels, measures=MEASURES).run()
            out.print(result.to_table(title=f"SciFact train ({len(queries)} queries), bm25 alone: the dense index "
                                            "is still being built"))
            with console.status(f"encoding the abstracts with {encoder} for the dense index ..."):
                stages.update(dense.result())
        else:
            stages.update(dense.result())
    console.print(f"dense index ready after {time.perf_counter() - start:.1f} s")
    for query in DEMO_QUERIES:
        out.print(hits_table(f"hybrid: {query}", stages["hybrid"].search(query, k=k)))
    result = Experiment(stages, queries, qrels=dataset.qrels, measures=MEASURES).run()
    out.print(result.to_table(title=f"SciFact train ({len(queries)} queries), baseline bm25"))


def register(app: typer.Typer) -> None:
    app.command()(demo)
