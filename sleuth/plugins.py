"""The one registration point of systems: what a system adds to the core, and how the core finds the systems.

The core (corpus, index, models, stages, pipelines, eval, train, service, scale, cli) never imports a system. A
system describes itself with a :class:`System` and is listed in a tuple exposed under the ``sleuth.systems``
entry-point group; sleuth's own four are ``sleuth.systems:SYSTEMS`` (see ``pyproject.toml``). Another package
adds a system the same way, with no change to sleuth::

    [project.entry-points."sleuth.systems"]
    mine = "my_package:SYSTEMS"

Everything a system names is imported only when it is needed (the CLI group when the CLI starts, the stage
builders when a pipeline config is read, the service endpoints when an app is made).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from sleuth.errors import ConfigError

ENTRY_POINT_GROUP = "sleuth.systems"


@dataclass(frozen=True)
class System:
    """One retrieval system on the core: its CLI group, its pipeline stages and YAML, its service endpoints.

    ``cli`` names a module of ``package`` with ``register(app, train_app)`` (adds ``sleuth <name> ...``);
    ``stages`` a module whose import registers its stage builders; ``service`` a module with
    ``endpoints() -> list`` of callables ``(app, service)`` that add routes to a FastAPI app; ``updates`` a module
    whose ``UPDATERS`` maps the index kinds it owns to :class:`sleuth.index.updates.Updater`; ``shards`` a module
    whose ``SHARD_LOADERS`` maps the kind of one shard folder it owns to a loader ``(path) -> index`` (what a shard
    actor runs) and whose ``REMOTE_INDEXES`` maps the sharded kinds it owns to ``(path, ShardActorOptions) ->
    index`` served by shard actors (:mod:`sleuth.scale.shard_actors`). Built-in pipeline YAML files live in the
    package's ``pipelines/`` folder.
    """

    name: str
    title: str
    package: str
    cli: str | None = "cli"
    stages: str | None = "builders"
    service: str | None = None
    updates: str | None = None
    shards: str | None = None

    def module(self, name: str) -> ModuleType:
        """Import the system's module ``name`` (relative to its package)."""
        return importlib.import_module(f"{self.package}.{name}")

    @property
    def folder(self) -> Path:
        """The system's package folder."""
        return Path(str(importlib.import_module(self.package).__file__)).parent

    @property
    def pipelines_dir(self) -> Path:
        """Where the system's built-in pipeline YAML files are."""
        return self.folder / "pipelines"


@functools.cache
def systems() -> tuple[System, ...]:
    """Every registered system: the tuples named by ``sleuth.systems`` entry points (sleuth's own first)."""
    found: list[System] = []
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: (p.value != "sleuth.systems:SYSTEMS",
                                                                              p.name)):
        value = point.load()
        for system in value if isinstance(value, (tuple, list)) else [value]:
            if not isinstance(system, System):
                raise ConfigError(f"entry point '{point.name}' ({point.value}) must give System objects")
            if any(system.name == other.name for other in found):
                raise ConfigError(f"two systems are called '{system.name}' (entry point '{point.name}')")
            found.append(system)
    return tuple(found)


def system(name: str) -> System:
    """The registered system called ``name``."""
    for candidate in systems():
        if candidate.name == name:
            return candidate
    raise ConfigError(f"unknown system '{name}' (registered: {', '.join(s.name for s in systems()) or 'none'})")


def system_entry(hook: str, table: str, kind: str) -> Any | None:
    """What a registered system lists for index ``kind`` in the ``table`` of its ``hook`` module (e.g. the
    ``UPDATERS`` of its ``updates`` module), or None when no system does."""
    for candidate in systems():
        module = getattr(candidate, hook)
        if module is not None:
            entry = getattr(candidate.module(module), table, {}).get(kind)
            if entry is not None:
                return entry
    return None
