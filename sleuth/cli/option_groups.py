"""Option groups for wide commands: a dataclass whose fields default to typer Options is one parameter of the
command, while the command line keeps one flat option per field (shown under the group's help panel).

    @dataclass
    class Schedule:
        help_panel = "Schedule"
        steps: int = typer.Option(100, help="Training steps.")

    @with_option_groups
    def train(schedule: Schedule, out: Path = typer.Option(...)) -> None: ...   # sleuth ... --steps 50 --out x
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any, get_type_hints

from typer.models import OptionInfo


def flat_parameters(group: type) -> list[inspect.Parameter]:
    """A group's fields as keyword parameters, their options under the group's ``help_panel`` (if it has one)."""
    hints, panel = get_type_hints(group), getattr(group, "help_panel", None)
    parameters = []
    for field in dataclasses.fields(group):
        default: Any = field.default
        if isinstance(default, OptionInfo) and panel and default.rich_help_panel is None:
            default = copy.copy(default)
            default.rich_help_panel = panel
        parameters.append(inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=hints[field.name]))
    return parameters


def with_option_groups(command: Callable[..., Any]) -> Callable[..., Any]:
    """The command as typer sees it: each parameter annotated with a dataclass replaced by the dataclass's fields
    (flat options); called, the fields are gathered back into the dataclass the command receives."""
    hints = get_type_hints(command)
    parameters: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for parameter in inspect.signature(command).parameters.values():
        kind = hints.get(parameter.name)
        if isinstance(kind, type) and dataclasses.is_dataclass(kind):
            fields = flat_parameters(kind)
            groups[parameter.name] = (kind, [f.name for f in fields])
            parameters += fields
        else:
            parameters.append(parameter.replace(kind=inspect.Parameter.KEYWORD_ONLY,
                                                annotation=hints.get(parameter.name, parameter.annotation)))

    @functools.wraps(command)
    def run(**values: Any) -> Any:
        for name, (kind, fields) in groups.items():
            values[name] = kind(**{field: values.pop(field) for field in fields})
        return command(**values)

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run
