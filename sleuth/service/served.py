"""The served pipelines: looked up by name, listed with their status, and reloaded and swapped in whole (after an
update of one index folder, only those that read it: :func:`reads`). Pipelines given as
:class:`~sleuth.service.lazy.LazyStage` are built in the background (:mod:`sleuth.service.lazy`)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.service.depth import depth
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
        """The served pipelines with their descriptions, status (``ready``, ``building...``, ``failed: ...``) and
        depth (:func:`depth_hits`), and the default one."""
        snapshot = self.current
        return {"pipelines": [{"name": name, "description": str(getattr(stage, "description", None) or ""),
                               "status": status_of(stage), "depth": depth_hits(stage)}
                              for name, stage in snapshot.pipelines.items()],
                "default": snapshot.default}

    @property
    def ready(self) -> bool:
        """Whether the default pipeline is built (others may still be building)."""
        return status_of(self.current.pipelines[self.current.default]) == "ready"

    def reload(self, folder: str | Path | None = None) -> dict[str, Any]:
        """Load the pipelines again through ``loader`` and swap them in whole; after an update of ``folder``, only
        those that read it (or whose folders cannot be told) are taken anew, the others kept as they are, never
        rebuilt. Lazy pipelines that were ready are built again before the swap (a failure keeps the current ones);
        the others build in the background. ``{"reloaded": [the names taken anew]}``."""
        if self.loader is None:
            raise RequestError("this service has no pipeline configs to reload from", 409)
        with self._reload_lock:
            fresh = dict(self.loader())
            if not fresh:
                raise ConfigError("reloading gave no pipelines; keeping the current ones")
            current = self.current.pipelines
            kept = set() if folder is None else {name for name, stage in current.items()
                                                 if name in fresh and not reads(stage, Path(folder))}
            pipelines = {name: current[name] if name in kept else stage for name, stage in fresh.items()}
            was_ready = {name for name, stage in current.items() if status_of(stage) == "ready"}
            for name, stage in pipelines.items():
                if isinstance(stage, LazyStage) and name in was_ready and name not in kept:
                    stage.build()
                    if not stage.ready:
                        raise ConfigError(f"reloading pipeline '{name}': {stage.status}; keeping the current ones")
            self.current = Snapshot(pipelines)
            self.builds = BackgroundBuilds(pipelines.values(), previous=self.builds)
        return {"reloaded": [name for name in pipelines if name not in kept]}


def reads(stage: Stage, folder: Path) -> bool:
    """Whether ``stage`` reads the index ``folder`` (:meth:`~sleuth.stages.base.Stage.index_folders`: its BM25 and
    dense retrievers', of a workspace its cached indexes; True where that cannot be told: a system's own stage, a
    retriever over an index of unknown origin, a lazy pipeline being built or failed)."""
    folders = stage.index_folders()
    return folders is None or os.path.realpath(folder) in {os.path.realpath(path) for path in folders}


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


def depth_hits(stage: Stage) -> int | None:
    """The most hits a served pipeline gives a query (:mod:`sleuth.service.depth`), where it can be told: None for
    one that is not built yet or whose depth is unknown (every ``k`` up to ``--max-k`` is searched)."""
    if isinstance(stage, LazyStage) and not stage.ready:
        return None
    found = depth(built(stage))
    return None if found is None else found.hits
