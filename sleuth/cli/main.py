"""The `sleuth` command: the core commands (index, search, retrieve, fuse, eval, serve, update, demo) and one group per
registered system (``sleuth dhr|cos|quest|privacy <verb>``). Errors in input or configuration print one line and exit
2."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import typer

from sleuth.cli.empty_paths import refuse_empty_paths
from sleuth.cli.help_format import summarise_commands, tidy_help
from sleuth.errors import SleuthError
from sleuth.plugins import systems

#: the core command modules, each with ``register(app)``
CORE_COMMANDS = ("index_cmd", "search_cmd", "retrieve_cmd", "fuse_cmd", "eval_cmd", "serve_cmd", "update_cmd",
                 "demo_cmd")

app = typer.Typer(help="sleuth: hard retrieval on one pipeline core.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)
#: ``sleuth train <system>``: the old spelling of ``sleuth <system> train``, kept as hidden aliases
train_app = typer.Typer(help="Train a system's models (old spelling of `sleuth <system> train`).",
                        no_args_is_help=True)
_registered = False


def register() -> typer.Typer:
    """Add the core commands, then every registered system's command group (once); returns the app."""
    global _registered
    if not _registered:
        tidy_help()
        for module in CORE_COMMANDS:
            importlib.import_module(f"sleuth.cli.{module}").register(app)
        for system in systems():
            if system.cli is not None:
                system.module(system.cli).register(app, train_app)
        app.add_typer(train_app, name="train", hidden=True)
        summarise_commands(app)
        _registered = True
    return app


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning usage errors, sleuth errors and file errors into one line on stderr and
    exit code 2 (bare ``sleuth`` or a bare group prints its help and exits 0); Ctrl-C prints ``interrupted`` and
    exits 130."""
    try:
        run(argv)
    except KeyboardInterrupt:  # also while the commands register, before typer runs (before: a traceback)
        interrupted()


def interrupted() -> None:
    """``interrupted`` on stderr, exit 130 (128 + SIGINT, as a shell reports a Ctrl-C)."""
    print("interrupted", file=sys.stderr)
    sys.exit(130)


def run(argv: list[str] | None) -> None:
    """:func:`main`'s work. typer, run with ``standalone_mode=False``, turns a Ctrl-C into ``Exit(130)`` and
    *returns* an ``Exit``'s code instead of raising it, so a returned code is the exit status (before: dropped, so an
    interrupted ``sleuth index`` or ``update`` exited 0)."""
    from sleuth.train.card import set_invocation

    command = typer.main.get_command(register())
    refuse_empty_paths(command)
    set_invocation(sys.argv[1:] if argv is None else argv)  # the command a model card names
    try:
        code = command(args=argv, prog_name="sleuth", standalone_mode=False)
    except SleuthError as exc:
        fail(str(exc))
    except UnicodeDecodeError as exc:  # a reader that opened a binary or non-UTF-8 file without naming it
        fail(f"input is not UTF-8 text ({exc.reason} at byte {exc.start}); convert it to UTF-8")
    except OSError as exc:  # a file that cannot be read or written
        fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
    except KeyboardInterrupt:
        interrupted()
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as exc:  # usage errors: typer raises its bundled click's exceptions, plain click's elsewhere
        if not is_click_error(exc):
            raise
        usage_error(exc)
    else:
        if code == 130:
            interrupted()
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            sys.exit(code)
    finally:
        set_invocation(None)  # a command run in a process that goes on (tests, a notebook) names no later model


def fail(message: str) -> None:
    """Print ``error: MESSAGE`` (one line) on stderr and exit 2."""
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    sys.exit(2)


def is_click_error(exc: Exception) -> bool:
    """Whether ``exc`` is a click exception, of the pinned typer's bundled click or of ``import click``."""
    import click
    from typer.exceptions import TyperException

    return isinstance(exc, click.ClickException | TyperException) and hasattr(exc, "format_message")


def usage_error(exc: Any) -> None:
    """One line for a usage error, with a pointer to the command's ``--help``; a bare group prints its help."""
    ctx = getattr(exc, "ctx", None)
    if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
        print(ctx.get_help())
        sys.exit(0)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    print(f"error: {' '.join(exc.format_message().split())}{hint}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
