"""The guard every command that writes ``--out`` runs first: the output must not be one of the command's inputs
(the same file by any path: relative, through a symlink, a hard link), a folder holding one, nor a file already in
an input folder (a BEIR folder's ``queries.jsonl``), since writing it would destroy the input before (or while) it is
read; and it must be writable, so that hours of training or evaluation do not end in an error at the save."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from sleuth.errors import ConfigError


def clashing_input(out: str | Path, inputs: Iterable[str | Path | None], in_folders: bool = True) -> Path | None:
    """The first input that ``out`` would overwrite (it is that file, a folder holding it, or, with ``in_folders``, a
    file already in that input folder), else None."""
    resolved = Path(out).resolve()
    for given in inputs:
        if given is None:
            continue
        path = Path(given).resolve()
        if path == resolved or resolved in path.parents or (in_folders and path in resolved.parents
                                                            and resolved.is_file()):
            return Path(given)
        if resolved.exists() and path.exists() and os.path.samefile(resolved, path):
            return Path(given)
    return None


def refuse_overwriting_inputs(out: str | Path, inputs: Iterable[str | Path | None], option: str = "--out",
                              action: str = "write", folder: bool = False, file: bool = False,
                              in_folders: bool = True) -> None:
    """Raise a one-line ConfigError when ``out`` is one of ``inputs`` (or holds one, or is a file of an input folder:
    ``in_folders``, :func:`clashing_input`) or cannot be written (:func:`check_writable`; ``folder``: ``out`` is a
    folder to write in, ``file``: a file); nothing is written yet."""
    clash = clashing_input(out, inputs, in_folders)
    if clash is not None:
        what = "the current folder" if clash.resolve() == Path.cwd().resolve() else f"the input {clash}"
        if clash.resolve() in Path(out).resolve().parents:  # before: a BEIR folder's queries.jsonl was overwritten
            raise ConfigError(f"{option} {out}: refusing to {action} over a file of {what}; choose another {option}")
        raise ConfigError(f"{option} {out}: refusing to {action} over {what} (or a folder holding it); "
                          f"choose another {option}")
    check_writable(out, option, folder, file)


def check_writable(out: str | Path, option: str = "--out", folder: bool = False, file: bool = False) -> None:
    """Raise a one-line ConfigError now when ``out`` could not be written later: the folder it would be written in
    (``out`` itself when it is a folder, else its nearest existing ancestor) must be a folder in which a file can
    be made (a probe file is made there and removed at once); with ``folder``, ``out`` must not be a file, with
    ``file`` not a folder (else the write fails after the work, naming its temporary file)."""
    path = Path(out)
    if folder and path.exists() and not path.is_dir():
        raise ConfigError(f"{option} {out}: is a file; give a folder")
    if file and path.is_dir():
        raise ConfigError(f"{option} {out}: is a folder; give a file")
    where = path if path.is_dir() else path.parent
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        raise ConfigError(f"{option} {out}: {where} is a file, not a folder")
    try:
        tempfile.NamedTemporaryFile(dir=where, prefix=".sleuth-probe-").close()
    except OSError as exc:
        raise ConfigError(f"{option} {out}: cannot write in {where} ({exc.strerror or exc})") from None
