"""Docs that stay true: the README's lists of stages, built-in pipelines and commands mirror the registries, and
every system has a README naming its paper."""

from __future__ import annotations

import re
from pathlib import Path

import typer.main

from sleuth.cli.main import register
from sleuth.pipelines.config import builtin_pipelines
from sleuth.pipelines.registry import STAGES, load_stage_modules
from sleuth.plugins import systems

ROOT = Path(__file__).resolve().parents[2]


def section(title: str) -> str:
    """The README text under ``### title`` up to the next heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(rf"^### {re.escape(title)}\n(.*?)(?=^#)", text, flags=re.M | re.S)
    assert match, f"README.md has no '### {title}' section"
    return match.group(1)


def table_names(text: str, column: int) -> set[str]:
    """Backticked names in one column of a markdown table's body rows."""
    names: set[str] = set()
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) > column and not set(cells[0]) <= {"-", " "}:
            names.update(re.findall(r"`([^`]+)`", cells[column]))
    return names


def test_readme_stage_list_matches_the_registry():
    load_stage_modules()
    assert table_names(section("Stages (config names)"), 1) == set(STAGES)


def test_readme_pipeline_list_matches_the_built_ins():
    assert table_names(section("Built-in pipelines"), 1) == set(builtin_pipelines())


def test_readme_command_list_matches_the_cli():
    command = typer.main.get_command(register())
    visible = set()
    for name, sub in command.commands.items():
        if sub.hidden:
            continue
        children = [c for c, cmd in getattr(sub, "commands", {}).items() if not cmd.hidden]
        visible.update([f"sleuth {name} {child}" for child in children] or [f"sleuth {name}"])
    assert table_names(section("Commands"), 0) == visible


def test_every_system_has_a_readme_naming_its_paper():
    for system in systems():
        readme = system.folder / "README.md"
        assert readme.is_file(), f"{system.name}: no README.md in {system.folder}"
        paper = system.title.split(" (")[0]
        text = " ".join(readme.read_text(encoding="utf-8").split())  # a title may wrap across lines
        assert paper in text, f"{readme} does not name the paper '{paper}'"


def test_bench_results_are_written_by_bench_code_and_name_no_machine_paths():
    results = ROOT / "bench" / "results"
    scripts = {p.stem for p in (ROOT / "bench").glob("*.py")}
    for path in sorted(results.iterdir()):
        stem = path.name.split(".")[0]
        assert any(stem == s or stem.startswith(f"{s}_") for s in scripts), f"{path.name}: no bench/ script wrote it"
        if path.suffix in (".json", ".md"):
            text = path.read_text(encoding="utf-8")
            for prefix in ("/work/", "/root/", "/tmp/", "/home/"):
                assert prefix not in text, f"{path.name} names a machine path ({prefix}...)"
