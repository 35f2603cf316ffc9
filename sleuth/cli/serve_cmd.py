"""`sleuth serve`: serve pipelines or index folders over HTTP (GET/POST /search, GET /health)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sleuth.cli.common import console, corpus_source, workspace
from sleuth.errors import ConfigError, MissingExtraError


def serve(
    index: Optional[list[Path]] = typer.Option(None, help="Index folder to serve (repeatable; named by folder)."),
    corpus: Optional[Path] = typer.Option(None, help="Corpus for --pipeline (default: the bundled SciFact)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Corpus reader (default: detected)."),
    pipeline: Optional[list[str]] = typer.Option(None, help="Pipeline to serve (repeatable): built-in or YAML."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    query_log: Optional[Path] = typer.Option(None, help="Append every query to this JSONL file."),
    max_k: int = typer.Option(1000, help="Largest k a request may ask for."),
    device: str = typer.Option("cpu", help="Encoder device."),
) -> None:
    """Serve search over HTTP; the first pipeline or index is the default."""
    from sleuth.cli.search_cmd import stage_for_index
    from sleuth.pipelines.config import load_pipeline
    from sleuth.service.app import create_app

    if index and pipeline:
        raise ConfigError("give --index or --pipeline, not both")
    stages = {}
    for path in index or []:
        stages[path.name] = stage_for_index(path, max_k, device)
    if not index:
        ws = workspace(corpus_source(corpus, fmt), device)
        for name in pipeline or ["bm25"]:
            stage = load_pipeline(name, ws)
            stages[stage.name] = stage
    app = create_app(stages, query_log=query_log, max_k=max_k)
    try:
        import uvicorn
    except ImportError:
        raise MissingExtraError("uvicorn", "service", "the HTTP service") from None
    console.print(f"serving {', '.join(stages)} on http://{host}:{port}")
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


def register(app: typer.Typer) -> None:
    app.command()(serve)
