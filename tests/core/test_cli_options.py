"""Options shared by many commands are declared once (sleuth.cli.common), and wide commands take option groups."""

from __future__ import annotations

import inspect

import typer

from sleuth.cli.common import DEVICE
from sleuth.cli.main import register


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
