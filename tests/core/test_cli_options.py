"""Options shared by many commands are declared once (sleuth.cli.common), and wide commands take option groups."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import typer

from sleuth.cli.common import DEVICE
from sleuth.cli.main import register
from sleuth.cli.option_groups import with_option_groups


@dataclass
class Schedule:
    """A small option group (for the test of ``with_option_groups``)."""

    help_panel = "Schedule"
    steps: int = typer.Option(100, help="Training steps.")
    weight: list[str] = typer.Option([], help="SKILL=WEIGHT (repeatable).")


def commands(app: typer.Typer, prefix: str = "sleuth") -> dict[str, object]:
    """Every command callback of the app and its groups, by its full name."""
    found = {f"{prefix} {c.name or c.callback.__name__}": c.callback for c in app.registered_commands}
    for group in app.registered_groups:
        found.update(commands(group.typer_instance, f"{prefix} {group.name}"))
    return found


def test_every_device_option_is_the_one_declared_option():
    with_device = {name: inspect.signature(callback).parameters["device"].default
                   for name, callback in commands(register()).items()
                   if "device" in inspect.signature(callback).parameters}
    assert len(with_device) >= 15
    assert [name for name, default in with_device.items() if default is not DEVICE] == []


def test_an_option_group_is_flat_on_the_command_line_and_one_dataclass_in_the_command():
    from typer.testing import CliRunner

    received = []

    @with_option_groups
    def train(schedule: Schedule, out: str = typer.Option(..., help="Output.")) -> None:
        received.append((schedule, out))

    app = typer.Typer()
    app.command()(train)
    app.command("other", hidden=True)(train)
    result = CliRunner().invoke(app, ["train", "--steps", "7", "--weight", "a=1", "--weight", "b=2", "--out", "x"])
    assert result.exit_code == 0, result.output
    assert received == [(Schedule(steps=7, weight=["a=1", "b=2"]), "x")]
    assert "Schedule" in CliRunner().invoke(app, ["train", "--help"]).output


def test_wide_commands_take_option_groups():
    from sleuth.cli.eval_cmd import run_on_ray
    from sleuth.systems.chain_of_skills.train_cli import train_cos_command

    grouped = inspect.signature(train_cos_command.__wrapped__).parameters
    assert list(grouped) == ["ctx", "data", "architecture", "training", "out", "device"]
    assert len(inspect.signature(train_cos_command).parameters) == 42  # the context and the same 41 flags
    assert len(inspect.signature(run_on_ray).parameters) == 6


def int_options(callback) -> dict[str, object]:
    """The integer options of a command (those of its option groups too), by parameter name: their OptionInfo."""
    found: dict[str, object] = {}
    for name, parameter in inspect.signature(callback).parameters.items():
        default = parameter.default
        if isinstance(default, typer.models.OptionInfo):
            if parameter.annotation in (int, "int", int | None, "int | None"):
                found[name] = default
        elif dataclass_fields := getattr(parameter.annotation, "__dataclass_fields__", None):
            found.update({f.name: f.default for f in dataclass_fields.values()
                          if isinstance(f.default, typer.models.OptionInfo) and f.type in (int, "int", "int | None")})
    return found


def test_every_count_of_a_training_command_is_bounded_at_parsing():
    """A count (epochs, ranks, negatives, threads, ...) below its floor is refused by the option itself, before any
    data is read (`dhr train --lora-rank -2` once loaded the corpus for 27 s, `--mined -1` trained)."""
    found = commands(register())
    training = [name for name in found if name.endswith((" train", " train-dense"))]
    assert {"sleuth dhr train", "sleuth cos train", "sleuth quest train", "sleuth quest train-dense"} <= set(training)
    unbounded = [f"{name} {option}" for name in training for option, info in int_options(found[name]).items()
                 if option != "seed" and info.min is None and info.callback is None]
    assert unbounded == []
    assert int_options(found["sleuth quest parse"])["show"].min == 0
