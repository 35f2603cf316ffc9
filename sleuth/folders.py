"""Folders a failed run created are removed: a build that fails (a corpus of unknown format, an empty corpus, a
bad id) leaves no empty cache folders in ``$SLEUTH_HOME`` and no empty parents of ``--out``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def removed_if_failed(path: str | Path) -> Iterator[None]:
    """Run the block that writes ``path``; if it raises, remove ``path`` and those of its parent folders that did
    not exist before the block, as long as they are empty (a folder holding anything is kept)."""
    path = Path(path).absolute()
    new = [folder for folder in (path, *path.parents) if not folder.exists()]  # deepest first
    try:
        yield
    except BaseException:
        for folder in new:
            try:
                folder.rmdir()
            except FileNotFoundError:
                continue
            except OSError:  # not empty: it holds something this run did not create, or another process's files
                break
        raise
