"""The stage registry: config names -> builder functions whose keyword arguments are the allowed config keys."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any

from sleuth.constraints import value_problem
from sleuth.errors import ConfigError

Builder = Callable[..., Any]
#: a check of a stage's keys together (e.g. as many fusion weights as branches): the problem, or None
StageCheck = Callable[[dict[str, Any]], str | None]
#: whether a stage with these keys reads the workspace's corpus (an index of it, its texts)
ReadsCorpus = Callable[[dict[str, Any]], bool]
STAGES: dict[str, Builder] = {}
STAGE_CHECKS: dict[str, StageCheck] = {}
STAGE_READS_CORPUS: dict[str, ReadsCorpus] = {}
#: stages that work on an earlier stage's ranking (a cutoff, a reranker, a classifier), so cannot come first
NEEDS_CANDIDATES: set[str] = set()


def register_stage(name: str, check: StageCheck | None = None, reads_corpus: ReadsCorpus | bool = True,
                   needs_candidates: bool = False) -> Callable[[Builder], Builder]:
    """Decorator: make ``builder(workspace, **params)`` available as stage ``name`` in pipeline configs; ``check``
    tests the keys together, before anything is built (each key alone is checked against its annotation);
    ``reads_corpus`` says whether the stage (with given keys) reads the workspace's corpus (default: it does), so
    that a pipeline that reads none (run files, index paths) is not given one it would not use;
    ``needs_candidates``: the stage works on an earlier stage's ranking, so a config that puts it first is refused
    before anything is built."""

    def decorate(builder: Builder) -> Builder:
        STAGES[name] = builder
        if check is not None:
            STAGE_CHECKS[name] = check
        if needs_candidates:
            NEEDS_CANDIDATES.add(name)
        STAGE_READS_CORPUS[name] = reads_corpus if callable(reads_corpus) else lambda params: reads_corpus
        return builder

    return decorate


def load_stage_modules() -> None:
    """Import the core stage builders and every registered system's, so that their stages register themselves."""
    import sleuth.pipelines.builders  # noqa: F401  (registers bm25, dense, fuse, cutoff)
    from sleuth.plugins import systems

    for system in systems():
        if system.stages is not None:
            system.module(system.stages)


def is_group(parameter: inspect.Parameter) -> bool:
    """A builder parameter whose default is a dataclass instance (e.g. ``search: VectorSearch = VectorSearch()``):
    configs give its fields as flat keys, declared once in the dataclass and accepted alike by every builder."""
    return dataclasses.is_dataclass(parameter.default) and not isinstance(parameter.default, type)


def config_parameters(name: str) -> list[inspect.Parameter]:
    """A builder's keyword parameters after the workspace."""
    params = list(inspect.signature(STAGES[name]).parameters.values())[1:]
    return [p for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]


def stage_keys(name: str) -> list[str]:
    """The config keys a stage accepts (a parameter group's fields in place of the group)."""
    keys = []
    for p in config_parameters(name):
        keys.extend([f.name for f in dataclasses.fields(p.default)] if is_group(p) else [p.name])
    return keys


def resolved_hints(target: Any) -> dict[str, Any]:
    """A builder's or a parameter group's annotations, resolved (``Annotated`` extras kept); empty when they cannot
    be resolved (such a builder's values are then not checked)."""
    try:
        return typing.get_type_hints(target, include_extras=True)
    except (NameError, TypeError):
        return {}


def key_annotations(name: str) -> dict[str, Any]:
    """Each config key of a stage with its annotation (a parameter group's fields with theirs)."""
    hints = resolved_hints(STAGES[name])
    keys: dict[str, Any] = {}
    for p in config_parameters(name):
        if is_group(p):
            keys.update(resolved_hints(type(p.default)))
        else:
            keys[p.name] = hints.get(p.name, Any)
    return keys


def check_params(name: str, params: dict[str, Any], where: str) -> None:
    """Raise a ConfigError naming the first unknown, missing or wrong key of a stage: every value is checked against
    the builder's annotation (type and declared constraint, :mod:`sleuth.constraints`), then the stage's
    own check of its keys together."""
    known = stage_keys(name)
    for key in params:
        if key not in known:
            raise ConfigError(f"{where}: stage '{name}': unknown key '{key}' (known: {', '.join(known) or 'none'})")
    for p in config_parameters(name):
        if p.default is inspect.Parameter.empty and p.kind == p.KEYWORD_ONLY and p.name not in params:
            raise ConfigError(f"{where}: stage '{name}': missing key '{p.name}'")
    hints = key_annotations(name)
    for key, value in params.items():
        problem = value_problem(value, hints.get(key, Any))
        if problem is not None:
            raise ConfigError(f"{where}: stage '{name}': key '{key}': {problem}")
    problem = STAGE_CHECKS[name](params) if name in STAGE_CHECKS else None
    if problem is not None:
        raise ConfigError(f"{where}: stage '{name}': {problem}")


def builder_arguments(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Checked config keys -> the builder's keyword arguments (a group's keys gathered into its dataclass)."""
    arguments = dict(params)
    for p in config_parameters(name):
        if is_group(p):
            fields = {f.name: arguments.pop(f.name) for f in dataclasses.fields(p.default) if f.name in arguments}
            arguments[p.name] = dataclasses.replace(p.default, **fields)
    return arguments
