"""What the CLI commands share: the consoles, and the corpus / workspace helpers of :mod:`sleuth.pipelines`."""

from __future__ import annotations

import math
import sys
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

import typer
from rich.console import Console

from sleuth.errors import ConfigError
from sleuth.models.device import check_device
from sleuth.pipelines.sources import SPLITTERS, corpus_source, make_splitter, parse_fields, refuse_corpus_options
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.progress import console as progress_console
from sleuth.progress import format_duration

console = progress_console  # stderr, shared with the progress bars so messages print above them
# a table piped to a file or another program keeps its full width instead of rich's 80-column default
out = Console(width=None if sys.stdout.isatty() else 160)
#: the ``--device`` option of every command that runs a model, declared once (checked before any work)
DEVICE = typer.Option("cpu", callback=check_device, help="Torch device of the encoders and models: cpu, cuda, "
                                                         "cuda:N or mps.")


def positive_number(param: typer.CallbackParam, value: float | None) -> float | None:
    """Option callback: a finite number above 0 (None for an option left out), else a ConfigError naming the option
    (typer's ``min=`` lets nan through)."""
    return _checked_number(param, value, lambda v: v > 0, "a positive number")


def non_negative_number(param: typer.CallbackParam, value: float | None) -> float | None:
    """Option callback: a finite number >= 0 (None for an option left out), else a ConfigError naming the option."""
    return _checked_number(param, value, lambda v: v >= 0, "a number >= 0")


def _checked_number(param: typer.CallbackParam, value: float | None, accepts, what: str) -> float | None:
    if value is not None and not (math.isfinite(value) and accepts(value)):
        raise ConfigError(f"{option_flag(param.opts, param.name)} must be {what}, got {value}")
    return value


def option_flag(opts: list[str], name: str | None) -> str:
    """How the command line names an option: its longest flag (``--window-words``)."""
    return max(opts, key=len) if opts else f"--{(name or '').replace('_', '-')}"


def refuse_given(ctx: typer.Context, names: tuple[str, ...], why: str) -> None:
    """A ConfigError naming those of the command's parameters ``names`` that its command line gave (a value equal to
    the default too; an option left out is never taken for a choice), which ``why`` makes useless:
    ``--kind bm25 builds no dense index: --encoder and --factory do not apply``."""
    given = [option_flag(param.opts, param.name) for param in ctx.command.params if param.name in names
             and getattr(ctx.get_parameter_source(param.name), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")]
    if given:
        listed = given[0] if len(given) == 1 else f"{', '.join(given[:-1])} and {given[-1]}"
        raise ConfigError(f"{why}: {listed} {'does' if len(given) == 1 else 'do'} not apply")


def refuse_misplaced_corpus_options(ctx: typer.Context, splitter: str, split_read: bool = True) -> None:
    """A ConfigError for the corpus options given that would change nothing: ``--window-words`` without ``--splitter
    window`` (before: ignored by search, retrieve, eval and serve; index refused it), ``--split`` where no BEIR folder
    is read (``split_read`` False: TREC topics, run files)."""
    if splitter != "window":
        refuse_given(ctx, ("window_words",),
                     f"only --splitter window cuts word windows (this is --splitter {splitter})")
    if not split_read:
        refuse_given(ctx, ("split",), "--split picks the qrels split of a BEIR folder, and none is read here")


def first_repeat(values: Sequence[object]) -> int | None:
    """The position of the first value that an earlier one equals (an option given twice), None where all differ."""
    return next((number for number, value in enumerate(values) if value in values[:number]), None)


def first_untaken(candidates: Iterable[str], taken: Collection[str]) -> str | None:
    """The first of ``candidates`` (a row's name: a file's stem, then longer forms of its path) that ``taken`` does
    not hold, None when it holds every one (the same file given twice)."""
    return next((candidate for candidate in candidates if candidate not in taken), None)


def show_progress() -> bool:
    """Progress is always shown (:mod:`sleuth.progress`: a live bar on a terminal, periodic plain lines in a log)."""
    return True


def note_bundled(corpus: object | None, what: str = "searching", option: str = "--corpus") -> None:
    """Say on stderr that the bundled SciFact is used when no corpus was given (``corpus`` None) and how to give one
    (``option``: ``--corpus``, or ``sleuth index``'s argument)."""
    if corpus is None:
        missing = option if option.startswith("--") else "corpus"
        console.print(f"note: no {missing} given: {what} the bundled BEIR SciFact corpus (5,183 abstracts); {option} "
                      "FILE_OR_FOLDER for your own", highlight=False, soft_wrap=True)


def build_note(built: dict[str, float], reads_indexes: bool = True) -> str:
    """The line on index building (under ``sleuth eval``'s table, after ``sleuth retrieve``'s summary): ``built 2
    indexes in 7 min 20 s (bm25-…: 3.1 s, dense-…: 7 min 17 s)``, that none was built, or (``reads_indexes``
    False: run files alone) that none is read."""
    if not built:
        return "no index built by this run (loaded from the cache or --index)" if reads_indexes else \
            "no index read: run files only"
    each = ", ".join(f"{key}: {format_duration(seconds)}" for key, seconds in built.items())
    return (f"built {len(built)} index{'es' if len(built) > 1 else ''} in {format_duration(sum(built.values()))} "
            f"({each})")


def pipeline_corpus(configs: list[dict], corpus: Path | None, fmt: str | None, field: list[str] | None,
                    what: str = "searching", splitter: str = "none", window_words: int = 100) -> CorpusSource | None:
    """The corpus the pipelines of these (checked) configs search: ``corpus``, cut into passages by ``splitter``;
    the bundled SciFact, said on stderr, when none is given; or none where no pipeline reads a corpus (run files,
    ``index:`` paths: :func:`sleuth.pipelines.config.reads_corpus`), which the bundled SciFact would only be named
    for."""
    from sleuth.pipelines.config import reads_corpus

    if corpus is None and not any(reads_corpus(config["stages"]) for config in configs):
        refuse_corpus_options(fmt, field is not None, splitter)
        return None
    source = corpus_source(corpus, fmt, field, splitter, window_words)
    note_bundled(corpus, what)
    return source


def workspace(source: CorpusSource | None, device: str = "cpu", progress: bool = True) -> Workspace:
    """A workspace over ``source`` with the CLI's device and progress settings (``progress``: show the progress of long work)."""
    return Workspace(corpus=source, device=device, show_progress=progress and show_progress())


__all__ = ["DEVICE", "SPLITTERS", "build_note", "console", "corpus_source", "make_splitter", "note_bundled", "out", "parse_fields", "pipeline_corpus", "show_progress", "workspace"]
