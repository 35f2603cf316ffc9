"""What the CLI commands share: the consoles, and the corpus / workspace helpers of :mod:`sleuth.pipelines`."""

from __future__ import annotations

import sys

from rich.console import Console

from sleuth.pipelines.sources import SPLITTERS, corpus_source, make_splitter, parse_fields
from sleuth.pipelines.workspace import CorpusSource, Workspace

console = Console(stderr=True)
# a table piped to a file or another program keeps its full width instead of rich's 80-column default
out = Console(width=None if sys.stdout.isatty() else 160)


def show_progress() -> bool:
    """Progress bars only on a terminal: piped to a log, their carriage-return redraws are noise."""
    return console.is_terminal


def workspace(source: CorpusSource | None, device: str = "cpu", progress: bool = True) -> Workspace:
    """A workspace over ``source`` with the CLI's device and progress settings (progress only on a terminal)."""
    return Workspace(corpus=source, device=device, show_progress=progress and show_progress())


__all__ = ["SPLITTERS", "console", "corpus_source", "make_splitter", "out", "parse_fields", "show_progress", "workspace"]
