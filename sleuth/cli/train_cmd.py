"""`sleuth train ...`: a command group; each ``sleuth/cli/train_*.py`` module adds one trainer to it."""

from __future__ import annotations

import importlib
import pkgutil

import typer

train_app = typer.Typer(help="Train sleuth's models (encoders, rerankers, classifiers) on the CPU or a GPU.",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    import sleuth.cli

    for module in sorted(m.name for m in pkgutil.iter_modules(sleuth.cli.__path__)):
        if module.startswith("train_") and module != "train_cmd":
            importlib.import_module(f"sleuth.cli.{module}").register(train_app)
    if train_app.registered_commands or train_app.registered_groups:
        app.add_typer(train_app, name="train")
