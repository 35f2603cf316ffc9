"""`sleuth update`: add or delete documents of a bm25 or dense index folder without a full rebuild (a new
generation is written and swapped in atomically; see :mod:`sleuth.index.updates`)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from sleuth.cli.common import DEVICE, console
from sleuth.errors import ConfigError


def update(
    index: Path = typer.Argument(..., help="Index folder (bm25, dense, or a kind a system can update, e.g. hierarchical) to update."),
    add: Path | None = typer.Option(None, "--add", help="JSONL file of documents to add: id, title, text."),
    delete: str | None = typer.Option(None, "--delete", help="Comma-separated passage ids to delete."),
    encoder: str | None = typer.Option(None, help="Encoder of new dense documents (default: the index's)."),
    device: str = DEVICE,
) -> None:
    """Add (--add) or delete (--delete) documents; searches see the old or the new index, never half."""
    from sleuth.index.updates import add_documents, delete_documents, passages_from_jsonl

    if (add is None) == (delete is None):
        raise ConfigError("give exactly one of --add FILE or --delete ID,ID")
    if encoder is not None:  # not loaded for nothing and then ignored
        from sleuth.index.manifest import current_generation, read_manifest
        from sleuth.index.updates import refuse_encoder

        if delete is not None:
            raise ConfigError("--encoder encodes added documents: it goes with --add, not --delete")
        refuse_encoder(read_manifest(current_generation(index), verify=False).kind, index)
    start = time.perf_counter()
    if add is not None:
        loaded = None
        if encoder is not None:
            from sleuth.models.registry import load_encoder

            loaded = load_encoder(encoder, device=device)
        passages = passages_from_jsonl(add)
        manifest = add_documents(index, passages, encoder=loaded, device=device)
        done = f"added {len(passages):,}"
    elif delete is not None:  # always so here: exactly one of --add / --delete was checked above
        ids = list(dict.fromkeys(item.strip() for item in delete.split(",") if item.strip()))  # a,a deletes one
        manifest = delete_documents(index, ids)
        done = f"deleted {len(ids):,}"
    console.print(f"[green]{manifest.kind}[/green] index at {index}: {done}, now {manifest.count:,} passages "
                  f"({time.perf_counter() - start:.1f} s)")


def register(app: typer.Typer) -> None:
    app.command()(update)
    app.command(name="index-update", hidden=True)(update)
