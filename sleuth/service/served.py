"""The served pipelines: looked up by name, listed with their status, and reloaded and swapped in whole. Pipelines
given as :class:`~sleuth.service.lazy.LazyStage` are built in the background (:mod:`sleuth.service.lazy`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.service.lazy import BackgroundBuilds, LazyStage, built, status_of
from sleuth.service.limits import RequestError, safe_name
from sleuth.stages.base import Stage


@dataclass(frozen=True)
class Snapshot:
    """One loaded set of pipelines (a search reads one snapshot, so a reload never gives it half of each)."""

    pipelines: dict[str, Stage]
    loaded_at: float = field(default_factory=time.time)

    @property
    def default(self) -> str:
        return next(iter(self.pipelines))


class ServedPipelines:
    """Pipelines by name (the first is the default); ``loader`` gives them anew on :meth:`reload`. Lazy ones are
    built on one background thread (:attr:`builds`), in order, those a request named first."""

    def __init__(self, pipelines: Mapping[str, Stage], loader: Callable[[], Mapping[str, Stage]] | None = None):
        if not pipelines:
            raise ConfigError("the service needs at least one pipeline or index to serve")
        self.loader = loader
        self.current = Snapshot(dict(pipelines))
        self.builds = BackgroundBuilds(self.current.pipelines.values())
        self._reload_lock = threading.Lock()

    def pipeline(self, name: Any) -> tuple[str, Stage]:
        """The served pipeline called ``name`` (default: the first one), built (a 503
        :class:`~sleuth.service.lazy.NotReadyError` for one that is not)."""
        snapshot = self.current
        name = safe_name(name) if name is not None else snapshot.default
        if name not in snapshot.pipelines:
            raise RequestError(f"unknown pipeline '{name}' (served: {', '.join(snapshot.pipelines)})")
        return name, built(snapshot.pipelines[name])

    def describe(self) -> dict[str, Any]:
        """The served pipelines with their descriptions and status (``ready``, ``building...``, ``failed: ...``),
        and the default one."""
        snapshot = self.current
        return {"pipelines": [{"name": name, "description": str(getattr(stage, "description", None) or ""),
                               "status": status_of(stage)} for name, stage in snapshot.pipelines.items()],
                "default": snapshot.default}

    @property
    def ready(self) -> bool:
        """Whether the default pipeline is built (others may still be building)."""
        return status_of(self.current.pipelines[self.current.default]) == "ready"

    def reload(self) -> dict[str, Any]:
        """Load the pipelines again through ``loader`` and swap them in whole. Lazy pipelines that were ready are
        built again before the swap (a failure keeps the current ones); the others build in the background."""
        if self.loader is None:
            raise RequestError("this service has no pipeline configs to reload from", 409)
        with self._reload_lock:
            pipelines = dict(self.loader())
            if not pipelines:
                raise ConfigError("reloading gave no pipelines; keeping the current ones")
            was_ready = {name for name, stage in self.current.pipelines.items() if status_of(stage) == "ready"}
            for name, stage in pipelines.items():
                if isinstance(stage, LazyStage) and name in was_ready:
                    stage.build()
                    if not stage.ready:
                        raise ConfigError(f"reloading pipeline '{name}': {stage.status}; keeping the current ones")
            self.current = Snapshot(pipelines)
            self.builds = BackgroundBuilds(pipelines.values(), previous=self.builds)
        return {"reloaded": list(pipelines)}


def check_index_names(folders: list[Path]) -> dict[str, Path]:
    """The index folders by the name they are served under, their folder's name (that of the absolute path, so
    ``--index .`` is not served as ''); two with the same name are refused (naming both)."""
    seen: dict[str, Path] = {}
    for folder in folders:
        name = Path(os.path.abspath(folder)).name
        if name in seen:
            raise ConfigError(f"--index {seen[name]} and --index {folder} are both named '{name}' "
                              "(indexes are served by folder name): rename one of the folders")
        seen[name] = folder
    return seen
