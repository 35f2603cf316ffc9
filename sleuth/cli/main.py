"""The `sleuth` command: the core commands (index, search, eval, serve, update, demo) and one group per registered
system (``sleuth dhr|cos|quest|privacy <verb>``). Errors in input or configuration print one line and exit 2."""

from __future__ import annotations

import importlib
import sys

import typer

from sleuth.errors import SleuthError
from sleuth.plugins import systems

#: the core command modules, each with ``register(app)``
CORE_COMMANDS = ("index_cmd", "search_cmd", "eval_cmd", "serve_cmd", "update_cmd", "demo_cmd")

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
        for module in CORE_COMMANDS:
            importlib.import_module(f"sleuth.cli.{module}").register(app)
        for system in systems():
            if system.cli is not None:
                system.module(system.cli).register(app, train_app)
        app.add_typer(train_app, name="train", hidden=True)
        _registered = True
    return app


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning sleuth errors and file errors into one line on stderr and exit code 2."""
    register()
    try:
        app(args=argv, standalone_mode=False)
    except SleuthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:  # a file that cannot be read or written
        print(f"error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        sys.exit(1)
    except Exception as exc:  # click usage errors arrive here in non-standalone mode
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
