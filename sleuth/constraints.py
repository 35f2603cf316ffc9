"""What a stage builder's config value must be, read from the builder's annotations: the type (``int`` is not a
``bool``, a ``float`` or a ``str``) and, through ``typing.Annotated``, a small declared constraint:

    @register_stage("fuse")
    def fuse_stage(ws, *, rrf_k: Count = 60, method: Annotated[str, OneOf(METHODS)] = "rrf", ...)

:func:`value_problem` is what the registry calls for every key of every stage, so each stage gets the same checks
before any index is built (see :func:`sleuth.pipelines.registry.check_params`). It sits at the package root, beside
:mod:`sleuth.errors`, so that the index package's parameter groups (``VectorSearch``) can declare theirs."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any


@dataclass(frozen=True)
class AtLeast:
    """A number no smaller than ``low``."""

    low: float

    def problem(self, value: Any) -> str | None:
        return None if value >= self.low else f"must be at least {self.low:g}"


@dataclass(frozen=True)
class Above:
    """A number greater than ``low``."""

    low: float

    def problem(self, value: Any) -> str | None:
        return None if value > self.low else f"must be greater than {self.low:g}"


@dataclass(frozen=True)
class OneOf:
    """One of the enumerated ``choices``."""

    choices: Sequence[Any]

    def problem(self, value: Any) -> str | None:
        return None if value in self.choices else f"must be one of {', '.join(map(str, self.choices))}"


@dataclass(frozen=True)
class Check:
    """Any test: ``test(value)`` returns the problem (a phrase) or None."""

    test: Callable[[Any], str | None]

    def problem(self, value: Any) -> str | None:
        return self.test(value)


#: a count or cut-off: an integer, at least 1 (``k``, ``depth``, ...)
Count = Annotated[int, AtLeast(1)]
#: a number above zero
Positive = Annotated[float, Above(0)]
#: a number zero or more
NonNegative = Annotated[float, AtLeast(0)]


def type_name(hint: Any) -> str:
    """How an annotation reads in an error message: 'an integer', 'a list of numbers or null' ..."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in args)
    if hint is type(None):
        return "null"
    if origin is list or hint is list:
        return f"a list of {type_name(args[0]).removeprefix('a ').removeprefix('an ')}s" if args else "a list"
    names = {int: "an integer", float: "a number", str: "a string", bool: "true or false", dict: "a mapping"}
    return names.get(hint, f"a {getattr(hint, '__name__', hint)}")


def conforms(value: Any, hint: Any) -> bool:
    """Whether a YAML value is of the annotated type (an int is not a bool; a float also takes an int, not nan or
    infinity)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is typing.Any:
        return True
    if origin is Annotated:
        return conforms(value, args[0])
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:  # YAML's .nan and .inf are not numbers a stage can use
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if origin is list or hint is list:
        return isinstance(value, list) and (not args or all(conforms(v, args[0]) for v in value))
    if origin is dict or hint is dict:
        return isinstance(value, dict)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # an annotation sleuth does not check (a Protocol, a TypeVar)


def constraints(hint: Any, value: Any) -> list[Any]:
    """The declared constraints of an annotation that apply to ``value`` (``Annotated[int, AtLeast(1)]`` ->
    ``[AtLeast(1)]``; of a union, those of the members the value is of)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return [c for c in args[1:] if hasattr(c, "problem")]
    if origin in (typing.Union, types.UnionType):
        return [c for a in args if conforms(value, a) for c in constraints(a, value)]
    return []


def value_problem(value: Any, hint: Any) -> str | None:
    """What is wrong with a config value for this annotation (a phrase for the error message), or None."""
    if not conforms(value, hint):
        return f"must be {type_name(hint)}, got {value!r}"
    if value is None:
        return None
    for constraint in constraints(hint, value):
        problem = constraint.problem(value)
        if problem is not None:
            return f"{problem}, got {value!r}"
    return None
