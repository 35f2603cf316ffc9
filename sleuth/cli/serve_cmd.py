"""`sleuth serve`: serve pipelines or index folders over HTTP (search, batch search, obfuscate, health, readiness,
metrics, OpenAPI docs, and admin reload and document add/delete behind an API key)."""

from __future__ import annotations

from pathlib import Path

import typer

from sleuth.cli.common import console, corpus_source, workspace
from sleuth.errors import ConfigError, MissingExtraError
from sleuth.service.admin import ENV_VAR

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def serve(
    index: list[Path] | None = typer.Option(None, help="Index folder to serve (repeatable; named by folder)."),
    corpus: Path | None = typer.Option(None, help="Corpus for --pipeline (default: the bundled SciFact)."),
    fmt: str | None = typer.Option(None, "--format", help="Corpus reader (default: detected)."),
    pipeline: list[str] | None = typer.Option(None, help="Pipeline to serve (repeatable): built-in or YAML."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    query_log: Path | None = typer.Option(None, help="Append every query to this JSONL file."),
    max_k: int = typer.Option(1000, help="Largest k a request may ask for."),
    max_query_chars: int = typer.Option(2000, help="Longest query, in characters."),
    max_batch: int = typer.Option(64, help="Most queries in one /search/batch request."),
    max_body_bytes: int = typer.Option(1_000_000, help="Largest request body, in bytes (413 above)."),
    max_obfuscations: int = typer.Option(50, help="Largest n a /obfuscate request may ask for."),
    timeout: float = typer.Option(30.0, help="Time limit of one request, in seconds (504 above)."),
    api_key: str | None = typer.Option(None, envvar=ENV_VAR, show_default=False,
                                          help=f"API key of the admin endpoints (or ${ENV_VAR}; none: disabled)."),
    device: str = typer.Option("cpu", help="Encoder device."),
) -> None:
    """Serve search over HTTP; the first pipeline or index is the default."""
    from sleuth.index.manifest import current_generation, read_manifest
    from sleuth.pipelines.config import load_pipeline, read_config
    from sleuth.pipelines.index_stage import stage_for_index
    from sleuth.service.app import create_app
    from sleuth.service.limits import Limits

    if index and pipeline:
        raise ConfigError("give --index or --pipeline, not both")
    if host not in LOOPBACK:
        console.print(f"[yellow]warning: listening on {host}, not a loopback address[/yellow]")

    def load() -> dict:
        """The served stages, loaded from the index folders or pipeline configs (again on each reload), each with
        a ``description`` for ``GET /pipelines`` and the web page."""
        stages = {}
        for path in index or []:
            stage = stage_for_index(path, max_k, device)
            manifest = read_manifest(current_generation(path))
            stage.description = f"{manifest.kind} index {path.name} ({manifest.count:,} passages)"
            stages[path.name] = stage
        if not index:
            ws = workspace(corpus_source(corpus, fmt), device)
            for name in pipeline or ["bm25"]:
                stage = load_pipeline(name, ws)
                stage.description = str(read_config(name).get("description") or "")
                stages[stage.name] = stage
        return stages

    limits = Limits(max_query_chars=max_query_chars, max_k=max_k, max_batch=max_batch, max_body_bytes=max_body_bytes,
                    max_obfuscations=max_obfuscations, timeout_seconds=timeout)
    stages = load()
    app = create_app(stages, query_log=query_log, limits=limits, api_key=api_key, loader=load,
                     index_dirs={path.name: path for path in index or []})
    try:
        import uvicorn
    except ImportError:
        raise MissingExtraError("uvicorn", "service", "the HTTP service") from None
    admin = "admin enabled" if api_key else "admin disabled"
    console.print(f"serving {', '.join(stages)} on http://{host}:{port} ({admin})")
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)


def register(app: typer.Typer) -> None:
    app.command()(serve)
