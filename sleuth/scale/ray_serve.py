"""Serving at scale: sleuth's FastAPI service (:func:`sleuth.service.app.create_app`) as a Ray Serve deployment with
N replicas, each loading the served indexes (sharded or not) or pipelines once.

    python -m sleuth.scale.ray_serve --index indexes/scifact-sharded/bm25 --replicas 2 --ray-address local

Ray Serve's proxy spreads requests over the replicas; every replica answers exactly as ``sleuth serve`` does (same
routes, limits, errors). On a cluster, the index folders must be readable at the same path on every node.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError, SleuthError
from sleuth.scale.session import check_cluster_cpus, quiet_ray_logs, ray_session, require_ray

APP_NAME = "sleuth"


@dataclass
class ServeSettings:
    """What each replica loads: index folders (named by folder) or pipelines over a corpus, and request limits."""

    index: list[str] = field(default_factory=list)
    pipelines: list[str] = field(default_factory=list)
    corpus: str | None = None
    home: str | None = None
    max_k: int = 1000
    device: str = "cpu"

    def index_names(self) -> dict[str, Path]:
        """The index folders by the name they are served under, as ``sleuth serve`` names them (two of one name
        are a ConfigError; before, the later replaced the earlier, unsaid)."""
        from sleuth.service.served import check_index_names

        return check_index_names([Path(folder) for folder in self.index])

    def check(self) -> None:
        """What a replica would fail on, refused here, once, before anything is deployed: two index folders of one
        name, a folder that is not an index (its manifest is read), a ``max_k`` below 1."""
        from sleuth.index.sharded import index_kind

        if self.max_k < 1:
            raise ConfigError(f"--max-k must be positive, got {self.max_k}")
        for path in self.index_names().values():
            index_kind(path)


def load_stages(settings: ServeSettings) -> dict[str, Any]:
    """The served stages, as ``sleuth serve`` loads them (index folders first, else pipelines)."""
    from sleuth.index.sharded import index_kind
    from sleuth.pipelines.index_stage import stage_for_index

    stages: dict[str, Any] = {}
    for name, path in settings.index_names().items():
        stage: Any = stage_for_index(path, settings.max_k, settings.device)
        stage.description = f"{index_kind(path)} index {name}"
        stages[name] = stage
    if not settings.index:
        from sleuth.paths import home_dir
        from sleuth.pipelines.sources import corpus_source
        from sleuth.scale.ray_eval import named_pipeline

        source = corpus_source(Path(settings.corpus) if settings.corpus else None)
        given: dict[str, str] = {}
        for pipeline in settings.pipelines or ["bm25"]:
            stage = named_pipeline(pipeline, source, settings.home or str(home_dir()), settings.device)
            if stage.name in given:  # before: the later one replaced the earlier, unsaid
                raise ConfigError(f"--pipeline {given[stage.name]} and --pipeline {pipeline} are both named "
                                  f"'{stage.name}' (pipelines are served by name): rename one of them")
            given[stage.name] = pipeline
            stages[stage.name] = stage
    return stages


def app_builder(settings: ServeSettings) -> Callable[[], Any]:
    """A function building the FastAPI app in a replica (Ray Serve calls it at replica start)."""

    def build() -> Any:
        from sleuth.service.app import create_app
        from sleuth.service.limits import Limits

        return create_app(load_stages(settings), limits=Limits(max_k=settings.max_k),
                          loader=lambda: load_stages(settings))

    return build


def deployment(settings: ServeSettings, replicas: int = 2, replica_cpus: float = 0.5) -> Any:
    """The bound Ray Serve application: ``replicas`` copies of the service, ``replica_cpus`` CPUs each."""
    require_ray()
    from ray import serve

    ingress = serve.ingress(app_builder(settings))()
    deployment: Any = serve.deployment(ingress, name="SleuthService", num_replicas=replicas,
                                       ray_actor_options={"num_cpus": replica_cpus})
    return deployment.bind()


def start(settings: ServeSettings, replicas: int = 2, replica_cpus: float = 0.5, host: str = "127.0.0.1",
          port: int = 8000) -> None:
    """Deploy on the connected Ray and return once every replica is up (``serve.shutdown()`` stops it)."""
    require_ray()
    from ray import serve

    settings.check()  # here, not in every replica
    quiet_ray_logs()
    check_room(replicas, replica_cpus)
    serve.start(http_options={"host": host, "port": port})
    serve.run(deployment(settings, replicas, replica_cpus), name=APP_NAME, route_prefix="/", blocking=False)


def check_room(replicas: int, replica_cpus: float) -> None:
    """A ConfigError when the connected Ray cannot hold ``replicas`` of ``replica_cpus`` CPUs at once (before: Ray
    Serve waited for ever for the replicas it had no room for)."""
    check_cluster_cpus(replicas, "--replicas", replica_cpus, "--replica-cpus")


def check_port_free(host: str, port: int) -> None:
    """A ConfigError when ``host:port`` is taken here (before: Ray Serve's proxy failed to bind, in its own logs)."""
    try:
        with socket.create_server((host, port)):
            pass
    except OSError as exc:
        why = os.strerror(exc.errno) if exc.errno else str(exc)
        raise ConfigError(f"--host {host} --port {port}: cannot listen there ({why}); give another "
                          "--port") from None


def positive(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type: ``kind`` of a value above 0 (argparse says which option, and exits 2, otherwise)."""

    def parse(text: str) -> Any:
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
        return value

    parse.__name__ = kind.__name__
    return parse


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1..65535."""
    port = int(text)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port, 1..65535, got {text}")
    return port


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: deploy, print the address, serve until interrupted, then shut Serve (and a local Ray) down."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", action="append", default=[], help="index folder to serve (repeatable)")
    parser.add_argument("--pipeline", action="append", default=[], help="pipeline to serve (without --index)")
    parser.add_argument("--corpus", default=None, help="corpus of --pipeline (default: the bundled SciFact)")
    parser.add_argument("--replicas", type=positive(int), default=2)
    parser.add_argument("--replica-cpus", type=positive(float), default=0.5)
    parser.add_argument("--ray-address", default="local", help="local, auto or HOST:PORT")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port_number, default=8000)
    parser.add_argument("--max-k", type=int, default=1000)  # ServeSettings.check says what is wrong with it
    args = parser.parse_args(argv)
    settings = ServeSettings(index=[str(Path(p).resolve()) for p in args.index], pipelines=args.pipeline,
                             corpus=args.corpus, max_k=args.max_k)
    try:  # before: a traceback (from every replica, after Ray had started, for a bad index or pipeline)
        settings.check()
        check_port_free(args.host, args.port)
        serve_until_stopped(settings, args)
    except SleuthError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        sys.exit(2)


def serve_until_stopped(settings: ServeSettings, args: argparse.Namespace) -> None:
    """Deploy on the Ray of ``args.ray_address``, print the address, serve until Ctrl-C, then shut Serve down."""
    with ray_session(args.ray_address):
        from ray import serve

        start(settings, args.replicas, args.replica_cpus, args.host, args.port)
        print(f"serving on http://{args.host}:{args.port} with {args.replicas} replicas (Ctrl-C stops)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            serve.shutdown()


if __name__ == "__main__":
    main()
