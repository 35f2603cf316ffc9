"""Pipelines from readable YAML configs: a name, a description and a list of stages with their parameters.

    name: hybrid
    description: BM25 and MiniLM fused by reciprocal rank fusion
    stages:
      - fuse:
          method: rrf
          branches:
            - bm25: {k: 1000}
            - dense: {k: 1000, encoder: minilm}
      - cutoff: {k: 1000}
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from sleuth.errors import ConfigError
from sleuth.io import open_text
from sleuth.pipelines.registry import (
    NEEDS_CANDIDATES,
    STAGE_READS_CORPUS,
    STAGES,
    builder_arguments,
    check_params,
    load_stage_modules,
)
from sleuth.pipelines.workspace import Workspace
from sleuth.plugins import systems
from sleuth.stages.base import Sequential, Stage

TOP_LEVEL_KEYS = ("name", "description", "stages")


def builtin_pipelines() -> dict[str, Path]:
    """Names and files of the pipelines shipped with sleuth: the core's and every registered system's."""
    folders = [Path(str(resources.files("sleuth.pipelines") / "builtin"))]
    folders += [system.pipelines_dir for system in systems() if system.pipelines_dir.is_dir()]
    return {f.stem: f for folder in folders for f in sorted(folder.glob("*.yaml"))}


class UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that gives one key twice (PyYAML keeps the last silently)."""


def _unique_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    first: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        try:
            if key in first:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' given twice, first on line {first[key]}", key_node.start_mark)
            first[key] = key_node.start_mark.line + 1
        except TypeError:  # an unhashable key: construct_mapping says so
            break
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def read_config(source: str | Path) -> dict[str, Any]:
    """Parse a pipeline config from a built-in name or a YAML file, checking its top-level keys."""
    builtin = builtin_pipelines()
    path = builtin.get(str(source), Path(source))
    if not path.is_file():
        raise ConfigError(f"unknown pipeline '{source}': not a file and not a built-in "
                          f"({', '.join(sorted(builtin))})")
    with open_text(path) as handle:  # a file that is not UTF-8: one InputError line
        text = handle.read()
    try:
        config = yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError(f"{where}: invalid YAML ({getattr(exc, 'problem', exc)})") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a pipeline config") from None
    if refers_to_itself(config):  # before: a RecursionError traceback when the stages were checked
        raise ConfigError(f"{path}: a YAML alias refers to a mapping or list that holds it (*alias inside &alias)")
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: a pipeline config is a mapping with keys {', '.join(TOP_LEVEL_KEYS)}")
    for key in config:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(f"{path}: unknown key '{key}' (known: {', '.join(TOP_LEVEL_KEYS)})")
    if not isinstance(config.get("stages"), list) or not config["stages"]:
        raise ConfigError(f"{path}: 'stages' must be a non-empty list")
    for key in ("name", "description"):  # before: a list as name was a TypeError in sleuth eval's table
        if key in config and not (isinstance(config[key], str) and config[key].strip()):
            raise ConfigError(f"{path}: '{key}' must be a non-empty string, got {config[key]!r}"[:200])
    config.setdefault("name", path.stem)
    config["_source"] = str(path)
    return config


def refers_to_itself(value: Any, enclosing: frozenset[int] = frozenset()) -> bool:
    """Whether a list or mapping in ``value`` holds itself (``stages: &a [{fuse: {branches: [*a]}}]``)."""
    if not isinstance(value, (list, dict)):
        return False
    if id(value) in enclosing:
        return True
    children = list(value.values()) if isinstance(value, dict) else value
    return any(refers_to_itself(child, enclosing | {id(value)}) for child in children)


def split_entry(entry: Any, where: str) -> tuple[str, dict[str, Any]]:
    """A stage entry, ``name`` or ``{name: {params}}``, as its name (a registered stage) and its parameters (a
    mapping), their keys not yet checked (keys set from outside are merged first: :func:`with_stage_keys`)."""
    load_stage_modules()
    params: Any
    if isinstance(entry, str):
        name, params = entry, {}
    elif isinstance(entry, dict) and len(entry) == 1:
        name, params = next(iter(entry.items()))
        params = params or {}
    else:
        raise ConfigError(f"{where}: a stage is written 'name' or 'name: {{key: value}}', got {entry!r}")
    if name not in STAGES:
        raise ConfigError(f"{where}: unknown stage '{name}' (known: {', '.join(sorted(STAGES))})")
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: stage '{name}': parameters must be a mapping")
    return name, params


def parse_entry(entry: Any, where: str) -> tuple[str, dict[str, Any]]:
    """A stage entry (:func:`split_entry`) with its keys checked against its builder's."""
    name, params = split_entry(entry, where)
    check_params(name, params, where)
    return name, params


def build_stages(entries: list[Any], workspace: Workspace, where: str) -> Stage:
    """Build stage entries into one stage (a Sequential when there are several)."""
    stages = []
    for i, entry in enumerate(entries, start=1):
        name, params = parse_entry(entry, f"{where}, stage {i}")
        try:
            arguments = builder_arguments(name, params)
        except ConfigError as exc:
            raise ConfigError(f"{where}, stage {i} '{name}': {exc}") from None
        try:
            stages.append(from_entry(STAGES[name](workspace, **arguments), name))
        except (TypeError, ValueError, ConfigError) as exc:  # a value of the wrong kind or out of its range
            raise ConfigError(f"{where}, stage {i} '{name}': {exc}") from None
    return stages[0] if len(stages) == 1 else Sequential(stages)


def from_entry(stage: Stage, name: str) -> Stage:
    """``stage``, built by config entry ``name``, marked with it (:attr:`Stage.config_stage`), and so are the parts
    of a Sequential it built (a serial ``dhr``) that no inner entry marked: the service names ``dhr.k`` as the key
    that raises its depth, and a ``dual_encoder``'s dense retriever ``dual_encoder.k``, not ``dense.k``."""
    if "config_stage" not in vars(stage):
        stage.config_stage = name
    for part in stage.stages if isinstance(stage, Sequential) else ():
        from_entry(part, name)
    return stage


def load_pipeline(source: str | Path, workspace: Workspace | None = None,
                  stage_keys: dict[str, dict[str, Any]] | None = None, **keys: Any) -> Stage:
    """Build a pipeline from a built-in name, a YAML file or a stage name, bound to ``workspace`` (for corpus
    indexes); the whole config is checked first (:func:`pipeline_config`), so a wrong key in a later stage or branch
    is reported before any index is built. ``keys`` set keys of a one-stage pipeline's stage, checked like the
    config's own; ``stage_keys`` (``{stage name: {key: value}}``) set keys of every stage of that name, fusion
    branches included (``stage_keys={"dense": {"encoder": "minilm-onnx"}}`` runs the built-in hybrid with another
    encoder). The pipeline is its stages wrapped under the config's name, or under the ``name`` key where one is set
    (``ws.pipeline("bm25", name="lex")`` is a pipeline called lex)."""
    return build_pipeline(pipeline_config(source, stage_keys, **keys), workspace)


def build_pipeline(config: dict[str, Any], workspace: Workspace | None = None) -> Stage:
    """Build a checked config (:func:`pipeline_config`, :func:`validate_pipeline`) bound to ``workspace``: its stages
    wrapped under the config's name."""
    pipeline = Sequential([build_stages(config["stages"], workspace or Workspace(), where=config["_where"])],
                          name=config["name"])
    pipeline.description = config.get("description")
    return pipeline


def pipeline_config(source: str | Path, stage_keys: dict[str, dict[str, Any]] | None = None,
                    **keys: Any) -> dict[str, Any]:
    """The config :func:`load_pipeline` builds from ``source`` (a built-in name or a YAML file; a stage name: that
    one stage, to compose), with ``keys`` and ``stage_keys`` set (a ``name`` key names the pipeline too), checked
    whole (:func:`check_entries`) without building anything; ``"_where"`` names it in error messages."""
    if not isinstance(source, (str, Path)):
        raise ConfigError(f"a pipeline is named by a built-in name, a YAML file or a stage name, got "
                          f"{type(source).__name__}")
    load_stage_modules()
    one_stage = names_a_stage(source)
    if one_stage:  # a stage to compose (``bm25 >> ws.pipeline("cutoff", k=2)``): a cutoff gets its ranking then
        config: dict[str, Any] = {"name": str(source), "stages": [{str(source): keys}]}
        where = f"pipeline '{source}'"
    else:
        config = read_config(source)
        where = config["_source"]
        if keys:
            config["stages"], where = [with_keys(config, keys)], f"pipeline '{config['name']}'"
    if isinstance(keys.get("name"), str) and keys["name"].strip():  # the pipeline is called what its stage is named
        config["name"] = keys["name"]  # (before: ws.pipeline("bm25", name="b2") kept the name 'bm25')
    if stage_keys:
        config["stages"] = with_stage_keys(config["stages"], stage_keys, where)
    check_entries(config["stages"], where, has_input=one_stage)  # all of it, before any index is built
    config["_where"] = where
    return config


def with_keys(config: dict[str, Any], keys: dict[str, Any]) -> dict[str, Any]:
    """The one stage entry of ``config`` with ``keys`` set over its own."""
    if len(config["stages"]) != 1:
        raise ConfigError(f"pipeline '{config['name']}' has {len(config['stages'])} stages; keys can be set on a "
                          "one-stage pipeline only (write a YAML config for the others)")
    name, params = parse_entry(config["stages"][0], config["_source"])
    return {name: {**params, **keys}}


def with_stage_keys(entries: list[Any], stage_keys: dict[str, dict[str, Any]], where: str) -> list[Any]:
    """``entries`` with ``stage_keys[name]`` set over the keys of every stage called ``name`` (branches too)."""
    updated = []
    for i, entry in enumerate(entries, start=1):  # an entry's keys are checked with the set ones merged (a stage
        name, params = split_entry(entry, f"{where}, stage {i}")  # named alone lacks its required keys until then)
        params = {**params, **stage_keys.get(name, {})}
        if name == "fuse":
            params["branches"] = [with_stage_keys(b if isinstance(b, list) else [b], stage_keys, f"{where}, stage {i}")
                                  for b in params.get("branches", [])]
        updated.append({name: params})
    return updated


def check_entries(entries: list[Any], where: str, has_input: bool = False) -> None:
    """Check stage entries, and the branches of every ``fuse`` among them, without building anything: names, keys,
    each value against its builder's annotation and each stage's check of its keys together, and that a stage that
    works on an earlier ranking (a ``cutoff``, a reranker, a classifier) has one (``has_input``: an earlier stage
    gives the entries candidates)."""
    for i, entry in enumerate(entries, start=1):
        name, params = parse_entry(entry, f"{where}, stage {i}")
        if i == 1 and not has_input:
            refuse_first(name, where)
        for j, branch in enumerate(params.get("branches", []) if name == "fuse" else [], start=1):
            check_entries(branch if isinstance(branch, list) else [branch], f"{where}, stage {i}, branch {j}",
                          has_input or i > 1)


def names_a_stage(source: str | Path) -> bool:
    """Whether a pipeline ``source`` is a stage's name (that one stage, to compose), not a built-in or a YAML file;
    call it after :func:`load_stage_modules`."""
    return str(source) in STAGES and str(source) not in builtin_pipelines()


def refuse_first(name: str, where: str) -> None:
    """A ConfigError where stage ``name`` comes first in ``where`` but works on an earlier stage's ranking (a
    ``cutoff``, a reranker, a classifier; before: a cutoff gave every query no hits)."""
    if name in NEEDS_CANDIDATES:
        raise ConfigError(f"{where}, stage 1 '{name}': {'cuts' if name == 'cutoff' else 'works on'} the ranking of "
                          "an earlier stage, so it cannot come first")


def reads_corpus(entries: list[Any]) -> bool:
    """Whether any of these (checked) stage entries reads the workspace's corpus: a ``bm25`` or ``dense`` stage
    without an ``index:`` path, a ``fuse`` with such a branch, any system stage but ``private``; not a ``run_file``,
    ``cutoff``, ``max_passage`` or ``path_passages`` (each stage's ``register_stage(reads_corpus=...)``)."""
    for entry in entries:
        name, params = split_entry(entry, "a checked stage")
        if STAGE_READS_CORPUS[name](params):
            return True
    return False


def validate_pipeline(source: str | Path, stage_keys: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The config of a pipeline run on its own over queries, as the CLI runs one: :func:`pipeline_config`'s (a
    built-in, a YAML file or a stage name; ``stage_keys`` set; checked whole, nothing built), and a first stage that
    works on an earlier ranking (``--pipeline cutoff``, a reranker, a classifier) refused, as nothing comes before
    it."""
    load_stage_modules()
    if names_a_stage(source):
        refuse_first(str(source), f"pipeline '{source}'")  # before its keys: `--pipeline cutoff` said "missing key 'k'"
    config = pipeline_config(source, stage_keys)
    check_entries(config["stages"], config["_where"])
    return config
