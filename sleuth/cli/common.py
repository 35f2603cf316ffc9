"""Options shared by the CLI commands: which corpus, how to split it, which pipelines."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.errors import ConfigError
from sleuth.pipelines.workspace import CorpusSource, Workspace

console = Console(stderr=True)
# a table piped to a file or another program keeps its full width instead of rich's 80-column default
out = Console(width=None if sys.stdout.isatty() else 160)

SPLITTERS = ("none", "sections", "window")


def parse_fields(pairs: list[str] | None) -> dict[str, str] | None:
    """``["id=docid", "text=body"]`` -> ``{"id": "docid", "text": "body"}``."""
    if not pairs:
        return None
    fields = {}
    for pair in pairs:
        if "=" not in pair:
            raise ConfigError(f"--field expects NAME=KEY (e.g. text=body), got '{pair}'")
        name, key = pair.split("=", 1)
        fields[name.strip()] = key.strip()
    return fields


def make_splitter(name: str, words: int = 100):
    """The passage splitter called ``name`` (none keeps one passage per document)."""
    if name == "none":
        return None
    from sleuth.corpus.splitters import SectionSplitter, WindowSplitter

    if name == "sections":
        return SectionSplitter().split
    if name == "window":
        return WindowSplitter(words=words).split
    raise ConfigError(f"unknown splitter '{name}' (known: {', '.join(SPLITTERS)})")


def corpus_source(corpus: Path | None, fmt: str | None = None, fields: list[str] | None = None,
                  splitter: str = "none", window_words: int = 100) -> CorpusSource:
    """The corpus to work on: the given path, or the bundled SciFact when none is given."""
    if corpus is None:
        corpus, fmt = bundled_dataset_dir(), "beir"
    if not corpus.exists():
        raise ConfigError(f"corpus not found: {corpus}")
    name = splitter if splitter != "window" else f"window{window_words}"
    return CorpusSource(corpus, fmt, parse_fields(fields), make_splitter(splitter, window_words), name)


def workspace(source: CorpusSource | None, device: str = "cpu", progress: bool = True) -> Workspace:
    return Workspace(corpus=source, device=device, show_progress=progress)
