"""An empty string given for a file or folder is a usage error naming the parameter: typer turns ``''`` into
``Path('.')``, so ``sleuth quest parse ''`` read the current folder and said ".: is a folder"."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import typer


def takes_paths(param: Any) -> bool:
    """Whether a typer parameter's values are paths (``Path``, ``Path | None``, ``list[Path]``)."""
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    return annotation is Path or Path in typing.get_args(annotation)


def refuse_empty_paths(command: Any) -> None:
    """Make every path parameter of ``command`` and its subcommands refuse ``''`` before it is converted."""
    for param in getattr(command, "params", []):
        if takes_paths(param):
            param.process_value = _refusing_empty(param, param.process_value)
    for sub in getattr(command, "commands", {}).values():
        refuse_empty_paths(sub)


def _refusing_empty(param: Any, process_value: Any) -> Any:
    def checked(ctx: Any, value: Any) -> Any:
        values = value if isinstance(value, list | tuple) else (value,)
        if any(isinstance(one, str) and not one.strip() for one in values):
            raise typer.BadParameter("an empty path; give a file or folder", ctx=ctx, param=param)
        return process_value(ctx, value)

    return checked
