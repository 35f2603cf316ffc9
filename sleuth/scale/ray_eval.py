"""Distributed evaluation: a pipeline whose queries are split across Ray actors, runs merged in query order.

:class:`RayPipeline` is an ordinary :class:`~sleuth.stages.base.Stage`, so an :class:`~sleuth.eval.experiment.Experiment`
runs it unchanged: each actor builds the pipeline once (from a picklable zero-argument ``builder``), retrieves for
its chunks of queries, and the driver merges the chunks' runs into one run in the experiment's query order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.scale.session import require_ray
from sleuth.stages.base import Stage
from sleuth.stages.run import Run

Builder = Callable[[], Stage]


def named_pipeline(pipeline: str, corpus: CorpusSource | None, home: str, device: str = "cpu",
                   stage_keys: dict | None = None) -> Stage:
    """A built-in or YAML pipeline over ``corpus`` with its index cache under ``home`` (built there if missing), with
    ``stage_keys`` set (``{stage name: {key: value}}``, as :func:`~sleuth.pipelines.config.load_pipeline` takes)."""
    from sleuth.pipelines.config import load_pipeline

    return load_pipeline(pipeline, Workspace(corpus=corpus, home=Path(home), device=device, show_progress=False),
                         stage_keys)


def pipeline_builder(pipeline: str, corpus: CorpusSource | None, home: str | Path, device: str = "cpu",
                     stage_keys: dict | None = None) -> Builder:
    """A picklable builder of :func:`named_pipeline` for the workers."""
    return partial(named_pipeline, pipeline, corpus, str(home), device, stage_keys)


class PipelineWorker:
    """A Ray actor holding one loaded pipeline."""

    def __init__(self, builder: Builder):
        self.stage = builder()

    def name(self) -> str:
        return self.stage.name

    def transform(self, queries: list[Query]) -> Run:
        return self.stage.transform(queries, None)


def chunks(queries: Sequence[Query], parts: int) -> list[list[Query]]:
    """Contiguous, near-equal chunks of the queries (no empty chunk)."""
    parts = max(1, min(parts, len(queries)))
    size, extra = divmod(len(queries), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(list(queries[start:end]))
        start = end
    return out


class RayPipeline(Stage):
    """A first-stage pipeline evaluated by ``workers`` Ray actors (``actor_cpus`` each); needs a connected Ray.

    The first actor is waited for before the others start loading, so a missing cached index is built once.
    Queries go out in ``chunks_per_worker * workers`` contiguous chunks (later chunks balance slower workers)."""

    def __init__(self, builder: Builder, workers: int = 2, actor_cpus: float = 0.5, chunks_per_worker: int = 2,
                 name: str | None = None):
        ray = require_ray()
        if workers < 1:
            raise ConfigError(f"--ray-workers must be at least 1, got {workers}")
        actor = ray.remote(num_cpus=actor_cpus)(PipelineWorker)
        first = actor.remote(builder)
        self.name = name or ray.get(first.name.remote())
        self.actors = [first] + [actor.remote(builder) for _ in range(workers - 1)]
        ray.get([a.name.remote() for a in self.actors[1:]])
        self.chunks_per_worker = chunks_per_worker

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is not None:
            raise ConfigError(f"'{self.name}' runs on Ray as a first stage; it cannot rescore candidates")
        if not queries:
            return Run()
        ray = require_ray()
        parts = chunks(queries, self.chunks_per_worker * len(self.actors))
        futures = [self.actors[i % len(self.actors)].transform.remote(part) for i, part in enumerate(parts)]
        merged = Run.concat(ray.get(futures))
        return Run({q.id: merged[q.id] for q in queries if q.id in merged})

    def close(self) -> None:
        """Stop the actors."""
        ray = require_ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


def ray_pipelines(builders: dict[str, Builder], workers: int = 2, actor_cpus: float = 0.5) -> dict[str, RayPipeline]:
    """``{name: RayPipeline}`` for an experiment: ``workers`` actors per pipeline, each reserving ``actor_cpus`` or
    less, so that all the pools fit in the cluster's CPUs at once (an actor that cannot be placed would wait)."""
    ray = require_ray()
    total = float(ray.cluster_resources().get("CPU", 1.0))
    cpus = min(actor_cpus, total / (workers * max(len(builders), 1)))
    return {name: RayPipeline(builder, workers, cpus, name=name) for name, builder in builders.items()}
