"""Help-text fixes for the pinned typer (0.29), whose help shows ``<bool>`` beside every flag and ``{query}`` for a
required argument in the usage line: flags show no type, and arguments read ``QUERY`` / ``[CORPUS]`` as in click;
and whose commands list printed the line breaks of a docstring's first paragraph: each command's summary is one line.

Applied once by :func:`sleuth.cli.main.register`; each patch is skipped when typer no longer has the method."""

from __future__ import annotations

import inspect

import typer
from typer import core


def tidy_help() -> None:
    """Patch typer's option/argument help rendering (idempotent)."""
    option, argument = core.TyperOption, core.TyperArgument
    if hasattr(option, "display_type_rich") and not getattr(option, "_sleuth_tidy", False):
        shown = option.display_type_rich

        def display_type_rich(self, ctx):
            return None if self.is_flag and self.metavar is None else shown(self, ctx)

        setattr(option, "display_type_rich", display_type_rich)  # noqa: B010 (setattr: patching a method)
        setattr(option, "_sleuth_tidy", True)  # noqa: B010
    if hasattr(argument, "_usage_display_name") and not getattr(argument, "_sleuth_tidy", False):

        def usage_display_name(self) -> str:
            name = self.display_name_raw.upper() if self.metavar is None else self.display_name_raw
            name = name if self.required else f"[{name}]"
            return name + ("..." if self.nargs != 1 else "")

        setattr(argument, "_usage_display_name", usage_display_name)  # noqa: B010
        setattr(argument, "_sleuth_tidy", True)  # noqa: B010


def summarise_commands(app: typer.Typer) -> None:
    """Give every command of ``app`` (and of its groups) without a ``short_help`` its docstring's first paragraph
    as one line: the commands list of ``--help`` printed that paragraph's line breaks as broken lines."""
    for info in app.registered_commands:
        if info.short_help is None and info.callback is not None and info.callback.__doc__:
            first = inspect.cleandoc(info.callback.__doc__).split("\n\n")[0]
            info.short_help = " ".join(first.split())
    for group in app.registered_groups:
        if group.typer_instance is not None:
            summarise_commands(group.typer_instance)
