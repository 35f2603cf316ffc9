"""`sleuth search`: run one query through a pipeline (or straight against an index) and print the ranking."""

from __future__ import annotations

from pathlib import Path

import typer

from sleuth.cli import corpus_options
from sleuth.cli.common import (
    DEVICE,
    console,
    out,
    pipeline_corpus,
    refuse_given,
    refuse_misplaced_corpus_options,
    workspace,
)
from sleuth.cli.render import hits_json, hits_table
from sleuth.cli.stage_settings import SETTINGS, checked_configs, parse_settings
from sleuth.corpus.model import Query
from sleuth.pipelines.config import build_pipeline
from sleuth.pipelines.index_stage import stage_for_index
from sleuth.stages.base import Stage, check_query


def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., help="The query text."),
    corpus: Path | None = typer.Option(None, help="Corpus to search (default: the bundled SciFact)."),
    fmt: corpus_options.Format = None,
    field: corpus_options.Fields = None,
    splitter: corpus_options.Splitter = "none",
    window_words: corpus_options.WindowWords = 100,
    pipeline: str = typer.Option("bm25", help="Built-in pipeline name, YAML file or stage name (its keys from --set)."),
    index: Path | None = typer.Option(None, help="Search this index folder directly (instead of a corpus and "
                                                 "--pipeline)."),
    k: int = typer.Option(10, "-k", "--hits", min=1, help="How many results to show."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    device: str = DEVICE,
    settings: list[str] | None = SETTINGS,
) -> None:
    """Search a corpus or an index and print the top k results."""
    check_query(Query("", query))  # before any index is read or built: an empty query costs nothing
    refuse_misplaced_corpus_options(ctx, splitter)
    if index is not None:
        refuse_given(ctx, ("corpus", "fmt", "field", "splitter", "window_words", "pipeline", "settings"),
                     "--index searches an index folder")
        stage: Stage = stage_for_index(index, k, device)
    else:
        keys = parse_settings(settings)
        config = checked_configs([pipeline], keys)[0]  # a built-in, a YAML file or a stage name, checked whole
        source = pipeline_corpus([config], corpus, fmt, field, splitter=splitter, window_words=window_words)
        stage = build_pipeline(config, workspace(source, device, progress=not as_json))
    hits = stage.search(query, k=k)
    if as_json:
        print(hits_json(query, hits))
    else:
        out.print(hits_table(query, hits))
        if not hits:  # before: an empty table and nothing said
            console.print("no results: nothing matched (a BM25 stage matches only query words in the index, "
                          "without stopwords and punctuation; a threshold or classifier stage may keep no candidate)")


def register(app: typer.Typer) -> None:
    app.command()(search)
