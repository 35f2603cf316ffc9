"""The guard every command that writes ``--out`` runs first: the output must not be one of the command's inputs
(the same file by any path: relative, through a symlink, a hard link) nor a folder holding one, since writing it
would destroy the input before (or while) it is read."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from sleuth.errors import ConfigError


def clashing_input(out: str | Path, inputs: Iterable[str | Path | None]) -> Path | None:
    """The first input that ``out`` would overwrite (it is that file, or a folder holding it), else None."""
    resolved = Path(out).resolve()
    for given in inputs:
        if given is None:
            continue
        path = Path(given).resolve()
        if path == resolved or resolved in path.parents:
            return Path(given)
        if resolved.exists() and path.exists() and os.path.samefile(resolved, path):
            return Path(given)
    return None


def refuse_overwriting_inputs(out: str | Path, inputs: Iterable[str | Path | None], option: str = "--out",
                              action: str = "write") -> None:
    """Raise a one-line ConfigError when ``out`` is one of ``inputs`` (or holds one); nothing is written yet."""
    clash = clashing_input(out, inputs)
    if clash is not None:
        what = "the current folder" if clash.resolve() == Path.cwd().resolve() else f"the input {clash}"
        raise ConfigError(f"{option} {out}: refusing to {action} over {what} (or a folder holding it); "
                          f"choose another {option}")
