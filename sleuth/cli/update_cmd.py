"""`sleuth update`: add or delete documents of a bm25 or dense index folder without a full rebuild (a new
generation is written and swapped in atomically; see :mod:`sleuth.index.updates`)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from sleuth.cli.common import DEVICE, console
from sleuth.errors import ConfigError, InputError


def update(
    index: Path = typer.Argument(..., help="Index folder (bm25, dense, or a kind a system can update, e.g. hierarchical) to update."),
    add: Path | None = typer.Option(None, "--add", help="JSONL file of documents to add: id, title, text."),
    delete: str | None = typer.Option(None, "--delete", help="Comma-separated passage ids to delete (spaces around "
                                      "each are dropped)."),
    delete_file: Path | None = typer.Option(None, "--delete-file", help="File of passage ids to delete, one per line, "
                                            "each taken exactly as written (ids with commas or surrounding spaces)."),
    encoder: str | None = typer.Option(None, help="Encoder of new dense documents (default: the index's)."),
    field: list[str] | None = typer.Option(None, "--field", help="Field mapping of the --add file (repeatable), e.g. "
                                           "id=docno (default: the mapping the index was built with)."),
    device: str = DEVICE,
) -> None:
    """Add (--add) or delete (--delete, --delete-file) documents; searches see the old or the new index, never half."""
    from sleuth.index.as_built import CorpusReading, split_as_built
    from sleuth.index.updates import add_documents, delete_documents, passages_from_jsonl
    from sleuth.pipelines.sources import parse_fields

    if field and add is None:
        raise ConfigError("--field names the keys of the --add file: it goes with --add, not with a deletion")
    if sum(option is not None for option in (add, delete, delete_file)) != 1:
        raise ConfigError("give exactly one of --add FILE, --delete ID,ID or --delete-file FILE")
    if encoder is not None:  # not loaded for nothing and then ignored
        from sleuth.index.manifest import current_generation, read_manifest
        from sleuth.index.updates import refuse_encoder

        if add is None:
            raise ConfigError("--encoder encodes added documents: it goes with --add, not with a deletion")
        refuse_encoder(read_manifest(current_generation(index), verify=False).kind, index)
    start = time.perf_counter()
    if add is not None:
        loaded = None
        if encoder is not None:
            from sleuth.models.registry import load_encoder

            loaded = load_encoder(encoder, device=device)
        reading = CorpusReading.of(index)
        mapping = parse_fields(field) or reading.fields
        passages = split_as_built(passages_from_jsonl(add, mapping), reading.splitter, add)
        documents = len({passage.doc_id for passage in passages})
        manifest = add_documents(index, passages, encoder=loaded, device=device)
        done = f"added {len(passages):,}" if reading.splitter == "none" else \
            f"added {documents:,} document{'s' * (documents != 1)} as {len(passages):,} passages (--splitter " \
            f"{reading.splitter}, as built)"
    else:  # exactly one of --add / --delete / --delete-file was checked above
        ids = ids_in_file(delete_file) if delete_file is not None else ids_to_delete(str(delete))
        manifest = delete_documents(index, ids)
        done = f"deleted {len(ids):,}"
    console.print(f"[green]{manifest.kind}[/green] index at {index}: {done}, now {manifest.count:,} passages "
                  f"({time.perf_counter() - start:.1f} s)")
    console.print(f"note: a sleuth serve already serving this folder shows the change after POST /admin/reload "
                  f"(with {{\"index\": \"{Path(index).name}\"}}: only the pipelines that read it) or a restart "
                  "(admin updates, POST /admin/documents, show at once)", highlight=False, soft_wrap=True)


def ids_to_delete(option: str) -> list[str]:
    """The ids of ``--delete a,b``: split at commas, spaces around each dropped, each id once."""
    return list(dict.fromkeys(item.strip() for item in option.split(",") if item.strip()))


def ids_in_file(path: Path) -> list[str]:
    """The ids of ``--delete-file``: one per non-blank line, exactly as written (the line end aside), each once; a
    file without any is an InputError naming it."""
    from sleuth.io import text_lines

    ids = list(dict.fromkeys(line for _, line in text_lines(path)))
    if not ids:
        raise InputError("no ids to delete (one per line)", path=path)
    return ids


def register(app: typer.Typer) -> None:
    app.command()(update)
    app.command(name="index-update", hidden=True)(update)
