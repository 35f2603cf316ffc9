"""Each system README's module list (its ``| module | what |`` table, else its "What is implemented" section) names
exactly the modules of its package: every module is listed, and every listed file or folder exists. And no module
writes its own copy of the ranking sort."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

import pytest

import sleuth
from sleuth.plugins import systems
from sleuth.stages.run import Hit, rank_hits

PACKAGE = Path(sleuth.__file__).parent


def module_section(readme: str) -> str:
    """The README's module table, or its "What is implemented" section."""
    table = re.search(r"^\| module \| what \|\n(?:\|.*\n)+", readme, re.M)
    if table:
        return table.group(0)
    section = re.search(r"^## What is implemented\n(.*?)(?=^## )", readme, re.M | re.S)
    assert section, "no module table and no 'What is implemented' section"
    return section.group(1)


def listed_paths(section: str) -> set[str]:
    """The back-quoted file and folder names of a section: ``x.py``, ``training*.py``, ``static/``, ``a/b/*.yaml``."""
    return {name for name in re.findall(r"`([\w*./-]+)`", section) if name.endswith((".py", "/", ".yaml"))}


@pytest.mark.parametrize("system", systems(), ids=lambda s: s.name)
def test_a_system_readme_lists_its_modules(system):
    folder = system.folder
    listed = listed_paths(module_section((folder / "README.md").read_text(encoding="utf-8")))
    modules = {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}
    modules |= {f"{p.name}/" for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    unlisted = {m for m in modules if not any(fnmatch.fnmatch(m, pattern) for pattern in listed)}
    assert not unlisted, f"{system.name}: README lists no {sorted(unlisted)}"
    missing = {name for name in listed if not list(folder.glob(name.rstrip("/")))}
    assert not missing, f"{system.name}: README lists {sorted(missing)}, not in {folder}"


def test_one_ranking_sort():
    copies = [f"{path.relative_to(PACKAGE)}:{number}" for path in sorted(PACKAGE.rglob("*.py"))
              for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
              if re.search(r"-\s*\w+\.score\s*,\s*\w+\.id", line) and path.name != "run.py"]
    assert copies == [], "sort with sleuth.stages.run.rank_hits / ranking_key"
    hits = [Hit("b", 1.0), Hit("a", 1.0), Hit("c", 2.0)]
    assert [h.id for h in rank_hits(hits)] == ["c", "a", "b"] and [h.id for h in hits] == ["b", "a", "c"]


def test_one_jsonl_reader():
    """JSON Lines are read by sleuth.corpus.jsonl.iter_jsonl alone (file:line errors), nowhere by hand."""
    by_hand = [f"{path.relative_to(PACKAGE)}:{number}" for path in sorted(PACKAGE.rglob("*.py"))
               if path.parent.name != "corpus"
               for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
               if "json.loads(line" in line]
    assert by_hand == []


def test_update_names_the_line_of_a_bad_record(tmp_path, scifact_passages, sleuth):
    from sleuth.index.bm25 import BM25Index

    BM25Index.build(scifact_passages[:50], tmp_path / "ix", show_progress=False)
    bad = tmp_path / "add.jsonl"
    bad.write_text('{"id": "n1", "text": "new"}\n["not", "an", "object"]\n', encoding="utf-8")
    result = sleuth("update", str(tmp_path / "ix"), "--add", str(bad))
    assert result.returncode == 2
    assert f"{bad}:2" in result.stderr and "expected a JSON object, found list" in result.stderr
