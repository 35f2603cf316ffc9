"""``--set STAGE.KEY=VALUE``: a key of a pipeline's stages set from the command line (``sleuth search``, ``retrieve``,
``eval``, ``serve`` and ``quest predict``), as ``load_pipeline(stage_keys=...)`` sets it in Python: a parameter sweep
without a YAML file per value (``--set bm25.k1=1.2``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer
import yaml

from sleuth.errors import ConfigError

#: the ``--set`` option, declared once
SETTINGS = typer.Option(None, "--set", metavar="STAGE.KEY=VALUE",
                        help="Set a key of every stage of that name in the pipeline(s) (repeatable; the value is read "
                             "as in YAML), e.g. --set bm25.k1=1.2 --set dense.encoder=minilm-onnx.")

StageKeys = dict[str, dict[str, Any]]


def parse_settings(values: list[str] | None) -> StageKeys:
    """``["bm25.k1=1.2", "bm25.b=0.6"]`` -> ``{"bm25": {"k1": 1.2, "b": 0.6}}``; a malformed setting, a stage the
    registry does not know, a key the stage does not take, a value of the wrong type or range (its annotation, as
    in YAML) or a key given twice is a ConfigError naming it; the keys of a stage together are checked with the
    pipelines."""
    from sleuth.constraints import value_problem
    from sleuth.pipelines.registry import STAGES, key_annotations, load_stage_modules, stage_keys

    settings: StageKeys = {}
    for value in values or []:
        target, equals, text = value.partition("=")
        stage, dot, key = target.strip().partition(".")
        if not equals or not dot or not stage or not key:
            raise ConfigError(f"--set {value!r}: expected STAGE.KEY=VALUE, e.g. bm25.k1=1.2")
        load_stage_modules()
        if stage not in STAGES:
            raise ConfigError(f"--set {value!r}: unknown stage '{stage}' (known: {', '.join(sorted(STAGES))})")
        if key not in stage_keys(stage):
            raise ConfigError(f"--set {value!r}: stage '{stage}' has no key '{key}' (known: "
                              f"{', '.join(stage_keys(stage)) or 'none'})")
        if key in settings.get(stage, {}):
            raise ConfigError(f"--set {value!r}: {stage}.{key} is set twice")
        try:
            parsed = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {value!r}: the value is not YAML ({str(exc).splitlines()[0]})") from None
        problem = value_problem(parsed, key_annotations(stage).get(key, Any))
        if problem is not None:
            raise ConfigError(f"--set {value!r}: {problem}")
        settings.setdefault(stage, {})[key] = parsed
    return settings


#: the stage keys whose value is a file or folder the stage reads (a run file's ``path``, a retriever's ``index``)
PATH_KEYS = ("path", "index")


def stage_entries(entries: list[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(name, params)`` of every stage of (checked) stage entries, fusion branches included."""
    from sleuth.pipelines.config import split_entry

    for entry in entries:
        name, params = split_entry(entry, "a checked stage")
        yield name, params
        for branch in params.get("branches", []) if name == "fuse" else []:
            yield from stage_entries(branch if isinstance(branch, list) else [branch])


def stage_names(entries: list[Any]) -> set[str]:
    """The names of the stages of (checked) stage entries, fusion branches included."""
    return {name for name, _ in stage_entries(entries)}


def config_inputs(config: dict[str, Any]) -> list[Path]:
    """The files and folders a (checked) pipeline config reads besides a command's corpus and queries: its YAML file
    and its stages' ``path`` and ``index`` (a run file, an index folder; ``--set run_file.path=...`` too), so that an
    ``--out`` over one of them is refused before anything runs."""
    paths = [Path(config["_source"])] if config.get("_source") else []
    return paths + [Path(params[key]) for _, params in stage_entries(config["stages"]) for key in PATH_KEYS
                    if isinstance(params.get(key), (str, Path))]


def check_settings_apply(settings: StageKeys, configs: list[dict[str, Any]]) -> None:
    """A ConfigError where a ``--set`` names a stage that none of the pipelines has (it would set nothing)."""
    present = set().union(*(stage_names(config["stages"]) for config in configs)) if configs else set()
    for stage in settings:
        if stage not in present:
            names = ", ".join(str(config["name"]) for config in configs) or "none"
            raise ConfigError(f"--set {stage}.{next(iter(settings[stage]))}: no stage '{stage}' in the pipeline(s) "
                              f"run ({names}), so it would set nothing")


def checked_configs(names: list[str], settings: StageKeys) -> list[dict[str, Any]]:
    """The configs of the pipelines a command runs (built-ins, YAML files or stage names:
    :func:`~sleuth.pipelines.config.validate_pipeline`), with the ``--set`` keys set, each checked whole, and a
    ``--set`` that none of them takes refused (:func:`check_settings_apply`); nothing is built."""
    from sleuth.pipelines.config import validate_pipeline

    configs = [validate_pipeline(name, settings) for name in names]
    check_settings_apply(settings, configs)
    return configs


def settings_line(settings: StageKeys) -> str:
    """``stage keys set (--set): bm25.k1=1.2, bm25.b=0.75``: what ``sleuth eval`` records with its figures and
    ``sleuth serve`` adds to a pipeline's description."""
    return "stage keys set (--set): " + ", ".join(f"{stage}.{key}={value!r}" for stage, keys in settings.items()
                                                  for key, value in keys.items())
