"""The `sleuth` command: index, search, eval, demo. Errors in input or configuration print one line and exit 2."""

from __future__ import annotations

import sys

import typer

from sleuth.errors import SleuthError

app = typer.Typer(help="sleuth: hard retrieval on one pipeline core.", no_args_is_help=True,
                  pretty_exceptions_enable=False, add_completion=False)


def _register() -> None:
    """Add the command of every ``sleuth/cli/*_cmd.py`` module (each has ``register(app)``)."""
    import importlib
    import pkgutil

    import sleuth.cli

    for module in sorted(m.name for m in pkgutil.iter_modules(sleuth.cli.__path__) if m.name.endswith("_cmd")):
        importlib.import_module(f"sleuth.cli.{module}").register(app)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning sleuth errors and file errors into one line on stderr and exit code 2."""
    _register()
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
