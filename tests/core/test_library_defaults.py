"""Defaults live in the library: a stage's defaults are its shipped pipeline's (``- dhr: {}`` is the default
``dhr``), and private search has one mechanism and epsilon default for the stage, the CLI and POST /obfuscate."""

from __future__ import annotations

import dataclasses
import json

import pytest

from sleuth.pipelines.config import parse_entry, read_config
from sleuth.pipelines.registry import config_parameters, is_group, load_stage_modules


def stage_defaults(stage: str) -> dict:
    """The config keys of a stage with their defaults (a parameter group's fields in place of the group)."""
    defaults = {}
    for p in config_parameters(stage):
        if is_group(p):
            defaults.update({f.name: getattr(p.default, f.name) for f in dataclasses.fields(p.default)})
        else:
            defaults[p.name] = p.default
    return defaults


@pytest.mark.parametrize("pipeline,stage", [("bm25", "bm25"), ("dense", "dense"), ("dhr", "dhr"), ("dhr-p", "dhr_p")])
def test_a_stage_defaults_to_its_shipped_pipeline(pipeline, stage):
    load_stage_modules()
    entries = read_config(pipeline)["stages"]
    assert len(entries) == 1
    name, params = parse_entry(entries[0], pipeline)
    defaults = stage_defaults(name)
    assert name == stage and {key: defaults[key] for key in params} == params


@pytest.mark.parametrize("pipeline", ["quest-bm25-setops", "quest-dense-setops"])
def test_the_setops_stage_defaults_to_the_shipped_setops(pipeline):
    load_stage_modules()
    name, params = parse_entry(read_config(pipeline)["stages"][-1], pipeline)
    defaults = stage_defaults(name)
    params.pop("system") if pipeline == "quest-dense-setops" else None  # its rules are tuned on its own candidates
    assert name == "setops" and {key: defaults[key] for key in params} == params


def test_the_papers_dhr_recipe_stays_dhr_serial():
    _, params = parse_entry(read_config("dhr-serial")["stages"][0], "dhr-serial")
    assert (params["mode"], params["document"], params["separator"], params["length_prior"]) == (
        "serial", "summary", ", ", 0.0)


def test_one_privacy_default_for_stage_and_cli(sleuth):
    from sleuth.systems.private_search.mechanisms import DEFAULT_EPSILON, DEFAULT_MECHANISM

    load_stage_modules()
    defaults = stage_defaults("private")
    assert (defaults["mechanism"], defaults["epsilon"]) == (DEFAULT_MECHANISM, DEFAULT_EPSILON)
    result = sleuth("privacy", "obfuscate", "vitamin d deficiency", "-n", "2", "--seed", "1", "--json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    assert (printed["mechanism"], printed["epsilon"]) == (DEFAULT_MECHANISM, DEFAULT_EPSILON)
    # and one count: POST /obfuscate gave 10 where its docs promised the CLI's (and the stage's) 20
    import inspect

    from sleuth.systems.private_search.cli import obfuscate
    from sleuth.systems.private_search.service import DEFAULT_OBFUSCATIONS

    cli_n = inspect.signature(obfuscate).parameters["n"].default.default
    assert DEFAULT_OBFUSCATIONS == cli_n == defaults["n"] == 20
