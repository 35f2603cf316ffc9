"""requirements.lock installs on every Python the project admits: a pin whose release needs a newer Python than
pyproject's lowest (soupsieve 4.1.3 needs 3.11.5; CI's Python was 3.11.2) stops `make` before any test runs."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]


def lowest_python() -> Version:
    """The lowest Python pyproject admits (">=3.11" gives 3.11.0)."""
    spec = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    floors = [Version(s.version) for s in SpecifierSet(spec) if s.operator in (">=", "~=", "==")]
    assert floors, f"requires-python {spec!r} names no lowest version"
    return max(floors)


def locked_pins() -> dict[str, str]:
    """name -> version of every `name==version` line of requirements.lock."""
    pins = {}
    for line in (REPO / "requirements.lock").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.split("[", 1)[0].strip()] = version.split(";", 1)[0].strip()
    return pins


def test_every_locked_release_admits_the_lowest_python_the_project_admits():
    lowest, refused, checked = lowest_python(), [], 0
    for name, version in locked_pins().items():
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional extra's pin not installed here: its metadata cannot be read offline
        if dist.version != version:
            continue  # not the locked release (a developer's own install): say nothing of it
        checked += 1
        needs = dist.metadata.get("Requires-Python")
        if needs and lowest not in SpecifierSet(needs):
            refused.append(f"{name}=={version} needs Python {needs}")
    assert checked > 50, f"only {checked} locked releases are installed: is this the project's environment?"
    assert not refused, f"requirements.lock pins releases Python {lowest} cannot install: {refused}"
