"""`sleuth serve`: serve pipelines or index folders over HTTP (search, batch search, obfuscate, health, readiness,
metrics, OpenAPI docs, and admin reload and document add/delete behind an API key).

Checked before serving (one line, exit 2): the port (bound before anything is loaded, so a port in use is named at
once, never after "serving ..."), index folders (named by their absolute path's folder) or pipelines with the same
name, corpus options given with --index, a writable query log, the API key file. On a loopback address only
loopback ``Host`` values are answered unless ``--allowed-host`` adds some.

Pipelines are built in the background, in order, the first (the default) first (:mod:`sleuth.service.lazy`), while
the server already answers: ``/health`` at once, ``/ready`` 503 until the default is built, a search of a pipeline
being built 503 with its status (before, the default was built before serving, and a probe of a server with a long
first build timed out on a port that listened without answering). The startup line says what is building, the log
has a line as each build ends, and a default that fails to build stops the server with that line (exit 2). Every
config is checked before anything is built.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from sleuth.cli import corpus_options
from sleuth.cli.common import DEVICE, console, pipeline_corpus, refuse_given, refuse_misplaced_corpus_options, workspace
from sleuth.cli.stage_settings import SETTINGS, parse_settings
from sleuth.errors import ConfigError, MissingExtraError
from sleuth.service.admin import ENV_VAR
from sleuth.service.hosts import LOOPBACK_ADDRESSES
from sleuth.service.served import check_index_names

if TYPE_CHECKING:
    from sleuth.stages.base import Stage

#: the built-in pipelines served on the bundled SciFact when no --pipeline is given: every one, as each runs on a flat
#: corpus of abstracts (lexical, dense, fused, DHR's document structure, Chain-of-Skills' linked hops, QUEST's set
#: operations; checked by tests/core/test_newcomer_defaults.py). Only the first is built before serving; the others
#: build in this order in the background (their indexes cached after), see :func:`pipeline_stages`.
BUNDLED_PIPELINES = ("bm25", "dense", "hybrid", "dhr", "dhr-p", "dhr-parallel", "dhr-serial", "cos-hotpotqa",
                     "cos-hotpotqa-passages", "cos-nq", "cos-retrieval", "quest-bm25", "quest-bm25-classify",
                     "quest-bm25-setops", "quest-dense", "quest-dense-classify", "quest-dense-setops")


def serve(
    ctx: typer.Context,
    index: list[Path] | None = typer.Option(None, help="Index folder to serve (repeatable; named by folder)."),
    corpus: Path | None = typer.Option(None, help="Corpus for --pipeline (default: the bundled SciFact)."),
    fmt: corpus_options.Format = None,
    field: corpus_options.Fields = None,
    splitter: corpus_options.Splitter = "none",
    window_words: corpus_options.WindowWords = 100,
    pipeline: list[str] | None = typer.Option(None, help="Pipeline to serve (repeatable): built-in, YAML or stage "
                                                         "name. Default: "
                                                         "bm25; on the bundled SciFact: every built-in pipeline. All "
                                                         "build in the background, the first (the default) first; "
                                                         "GET /ready is 200 once it is built, GET /pipelines gives "
                                                         "their status."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    query_log: Path | None = typer.Option(None, help="Append every query searched to this JSONL file, with the "
                                                       "status it was answered with (HEAD is not logged)."),
    max_k: int = typer.Option(1000, help="Largest k a request may ask for (an --index folder answers that many; a "
                                         "pipeline at most its own k, 1,000 for bm25 and dense: a k above it is a "
                                         "400 naming the key, --set bm25.k=5000 raises it)."),
    max_query_chars: int = typer.Option(2000, help="Longest query, in characters."),
    max_batch: int = typer.Option(64, help="Most queries in one /search/batch request (and 16 times as many "
                                           "documents or ids in one admin update)."),
    max_body_bytes: int = typer.Option(1_000_000, help="Largest request body, in bytes (413 above)."),
    max_obfuscations: int = typer.Option(
        50, help="Largest n a /obfuscate request may ask for (at most 50, the cap shared with sleuth privacy)."),
    timeout: float = typer.Option(30.0, help="Time limit of one request, in seconds (504 above; admin updates are "
                                             "answered once committed, whatever the time)."),
    read_timeout: float = typer.Option(10.0, help="Seconds a request may take to arrive whole (headers and body); "
                                                  "a slower client is disconnected."),
    text_chars: int = typer.Option(1000, help="Passage title and text cut to this many characters by default."),
    max_text_chars: int = typer.Option(100_000, help="Largest max_chars a request may ask for."),
    max_response_bytes: int = typer.Option(16_000_000, help="Largest search response, in bytes."),
    workers: int = typer.Option(8, help="Requests answered at once."),
    max_queued: int = typer.Option(64, help="Requests waiting for a worker (503 beyond)."),
    allowed_host: list[str] | None = typer.Option(
        None, help="Host header value to answer, name or name:port (repeatable; '*': any). On a loopback address "
                   "added to 127.0.0.1, localhost and [::1] with the port; elsewhere: these only (default: any)."),
    api_key_file: Path | None = typer.Option(
        None, help=f"File holding the API key of the admin endpoints (default: ${ENV_VAR}; none: admin disabled)."),
    api_key: str | None = typer.Option(None, hidden=True, help="Admin API key (visible in the process list)."),
    device: str = DEVICE,
    ray_address: str | None = typer.Option(None, help="Serve sharded --index folders from shard actors on Ray "
                                                       "(one actor per shard, spread over the nodes): local, auto or "
                                                       "HOST:PORT. Needs sleuth\\[ray]."),  # \\[: rich escape
    actor_cpus: float = typer.Option(0.5, min=0.01, help="CPUs reserved by each shard actor with --ray-address."),
    settings: list[str] | None = SETTINGS,
) -> None:
    """Serve search over HTTP; the first pipeline or index is the default."""
    refuse_misplaced_corpus_options(ctx, splitter)
    if ray_address is None:  # before: ignored without a word
        refuse_given(ctx, ("actor_cpus",), "without --ray-address no shard actor is started")
    from sleuth.index.manifest import current_generation, read_manifest
    from sleuth.pipelines.index_stage import stage_for_index
    from sleuth.service.admin import read_api_key
    from sleuth.service.app import create_app
    from sleuth.service.hosts import loopback_hosts
    from sleuth.service.limits import LimitError, Limits
    from sleuth.service.query_log import QueryLog

    if index and pipeline:
        raise ConfigError("give --index or --pipeline, not both")
    if index and (corpus is not None or fmt is not None or field or splitter != "none"):  # before: ignored unsaid
        given = "--corpus" if corpus is not None else "--format" if fmt is not None else "--field" if field else \
            "--splitter"
        raise ConfigError(f"{given} goes with --pipeline: an --index folder holds its own passages")
    if index and settings:
        raise ConfigError("--set goes with --pipeline: it sets keys of pipeline stages, which --index folders have "
                          "none of")
    keys = parse_settings(settings)
    if api_key is not None:
        if api_key_file is not None:
            raise ConfigError("give --api-key-file or --api-key, not both")
        console.print(f"[yellow]warning: --api-key is visible in the process list; use ${ENV_VAR} or "
                      "--api-key-file[/yellow]")
    else:
        api_key = read_api_key(api_key_file)
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be between 0 and 65535, got {port}")
    if not read_timeout > 0:
        raise ConfigError(f"--read-timeout must be positive, got {read_timeout}")
    try:
        limits = Limits(max_query_chars=max_query_chars, max_k=max_k, max_batch=max_batch,
                        max_body_bytes=max_body_bytes, max_obfuscations=max_obfuscations, timeout_seconds=timeout,
                        text_chars=text_chars, max_text_chars=max_text_chars, max_response_bytes=max_response_bytes,
                        workers=workers, max_queued=max_queued)
    except LimitError as exc:  # before: "limit 'max_k' must be positive", a name the command line does not take
        option = "--timeout" if exc.field == "timeout_seconds" else f"--{exc.field.replace('_', '-')}"
        raise ConfigError(f"{option} {exc.problem}") from None
    names = check_index_names(index or [])
    listener = bind_port(host, port)  # held from now on: nothing can take the port while the stages load
    port = listener.getsockname()[1]  # --port 0: the port the system chose
    QueryLog(query_log)  # a query log that cannot be written fails now, before the (slow) load
    if host not in LOOPBACK_ADDRESSES:
        console.print(f"[yellow]warning: listening on {host}, not a loopback address[/yellow]")
    # --allowed-host adds to the loopback names (before: it replaced them, and localhost:PORT was refused)
    loopback = loopback_hosts(port) if host in LOOPBACK_ADDRESSES else []
    hosts = [*loopback, *allowed_host] if allowed_host else (loopback or None)

    def index_stage(name: str, path: Path) -> Stage:
        stage = stage_for_index(path, max_k, device)
        manifest = read_manifest(current_generation(path), verify=False)  # stage_for_index verified it
        stage.description = f"{manifest.kind} index {name} ({manifest.count:,} passages)"
        return stage

    def load(lazy: bool = False) -> dict:
        """The served stages, loaded from the index folders or pipeline configs, each with a ``description`` for
        ``GET /pipelines`` and the web page; of pipelines, all but the first are lazy. On a reload (``lazy``) index
        folders are lazy too, so that one updated folder loads only itself (the service keeps the others)."""
        from sleuth.service.lazy import LazyStage

        stages: dict[str, Stage] = {}
        for name, path in names.items():
            stages[name] = LazyStage(name, functools.partial(index_stage, name, path)) if lazy else \
                index_stage(name, path)
        if not index:
            ws = workspace(source, device)
            stages = pipeline_stages(served, ws, keys)
        return stages

    if not index:
        served = served_pipelines(corpus, pipeline)
        configs = served_configs(served, keys)  # every config and --set checked before the corpus is named
        source = pipeline_corpus(list(configs.values()), corpus, fmt, field, "serving", splitter,
                                 window_words)  # none: index paths, runs
    try:
        import uvicorn
    except ImportError:
        raise MissingExtraError("uvicorn", "service", "the HTTP service") from None
    from sleuth.service.server import server_config

    with shard_session(ray_address, actor_cpus):
        stages = load()
        watch = DefaultWatch(stages)  # before the app starts the builds
        app = create_app(stages, query_log=query_log, limits=limits, api_key=api_key,
                         loader=functools.partial(load, lazy=True),
                         index_dirs=names, allowed_hosts=hosts)
        admin = "admin enabled" if api_key else "admin disabled"
        where = f", shards on Ray ({ray_address})" if ray_address else ""
        console.print(f"serving on http://{host}:{port} ({admin}{where}): {startup_line(stages)}", soft_wrap=True)
        server = uvicorn.Server(server_config(app, host, port, read_timeout))
        watch.attach(server)
        server.run(sockets=[listener])
        if watch.failure is not None:
            raise ConfigError(watch.failure)


@contextlib.contextmanager
def shard_session(ray_address: str | None, actor_cpus: float) -> Iterator[None]:
    """With ``--ray-address``: a Ray session in which sharded index folders load as shard actors (until it ends)."""
    if ray_address is None:
        yield
        return
    from sleuth.index.sharded import set_remote_loader
    from sleuth.scale.session import ray_session
    from sleuth.scale.shard_actors import ShardActorOptions, serve_shards_on_ray

    with ray_session(ray_address):
        serve_shards_on_ray(ShardActorOptions(actor_cpus=actor_cpus))
        try:
            yield
        finally:
            set_remote_loader(None)


def bind_port(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; a port in use or an address this machine does not have is a one-line
    error naming them (uvicorn would print "serving" first and exit 3)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise ConfigError(f"--host {host}: cannot resolve it ({exc.strerror})") from None
    listener = socket.socket(family, kind, proto)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a port in TIME_WAIT is reusable
    try:
        listener.bind(address)
        listener.listen(2048)
    except OSError as exc:
        listener.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is in use by another program: stop it, or choose another "
                              "--port") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    listener.set_inheritable(True)
    return listener


class DefaultWatch:
    """Stops the server (a uvicorn ``Server``, :meth:`attach` ed once made) when the default (first) pipeline, built
    in the background, fails to build: :attr:`failure` is then the one-line error ``sleuth serve`` exits with (a
    service whose default cannot be built answers nothing useful; before the builds moved behind the server, it
    never started). Made before the builds start, so a fast failure is not missed."""

    def __init__(self, stages: dict[str, Stage]):
        from sleuth.service.lazy import LazyStage

        self.failure: str | None = None
        self._server = None
        self._lock = threading.Lock()
        default = next(iter(stages.values()))
        if isinstance(default, LazyStage):
            announce = default.on_built

            def watch(stage: LazyStage, seconds: float) -> None:
                if announce is not None:
                    announce(stage, seconds)
                if not stage.ready:
                    problem = stage.status.removeprefix("failed: ")
                    self._fail(f"the default pipeline '{stage.name}' could not be built: {problem}")

            default.on_built = watch

    def _fail(self, failure: str) -> None:
        with self._lock:
            self.failure = failure
            if self._server is not None:
                self._server.should_exit = True

    def attach(self, server) -> None:
        """Stop ``server`` on a failure (at once when one came already)."""
        with self._lock:
            self._server = server
            if self.failure is not None:
                server.should_exit = True


def served_pipelines(corpus: Path | None, pipeline: list[str] | None) -> list[str]:
    """The pipelines ``sleuth serve`` loads: those given; else on the bundled SciFact every built-in pipeline that
    runs on it (:data:`BUNDLED_PIPELINES`, those of systems that are installed); else ``bm25``."""
    if pipeline:
        return list(pipeline)
    if corpus is not None:
        return ["bm25"]
    from sleuth.pipelines.config import builtin_pipelines

    known = builtin_pipelines()
    return [name for name in BUNDLED_PIPELINES if name in known]


def served_configs(names: list[str], stage_keys: dict | None = None) -> dict[str, dict]:
    """The served pipelines' configs by the name given (a built-in, a YAML file or a stage name:
    :func:`~sleuth.pipelines.config.validate_pipeline`), with ``stage_keys`` set (``--set``), checked whole: a typo
    in any of them, two of one name or a ``--set`` no pipeline takes is a one-line ConfigError, before anything is
    built (and before the corpus is named)."""
    from sleuth.cli.stage_settings import checked_configs

    configs = dict(zip(names, checked_configs(names, stage_keys or {})))
    sources: dict[str, str] = {}
    for source, config in configs.items():  # before: the later one replaced the earlier under its name, unsaid
        name = str(config["name"])
        if name in sources:
            raise ConfigError(f"--pipeline {sources[name]} and --pipeline {source} are both named '{name}' "
                              "(pipelines are served by name): rename one of them")
        sources[name] = source
    return configs


def pipeline_stages(names: list[str], ws, stage_keys: dict | None = None) -> dict[str, Stage]:
    """The served pipelines by name, as :class:`~sleuth.service.lazy.LazyStage` s the service builds in the
    background in this order (the first, the default, first), each with ``stage_keys`` set (``--set``); the configs
    are checked first (:func:`served_configs`)."""
    from sleuth.cli.stage_settings import settings_line, stage_names
    from sleuth.pipelines.config import load_pipeline
    from sleuth.service.lazy import LazyStage

    stages: dict[str, Stage] = {}
    for source, config in served_configs(names, stage_keys).items():
        own = {stage: keys for stage, keys in (stage_keys or {}).items() if stage in stage_names(config["stages"])}
        # the keys it is served with, said (before: /pipelines said k1=0.9 of a pipeline served with bm25.k1=2.0)
        description = "; ".join(part for part in (str(config.get("description") or ""),
                                                  settings_line(own) if own else "") if part)
        stage = LazyStage(str(config["name"]), functools.partial(load_pipeline, source, ws, stage_keys),
                          description, on_built=announce_built)
        stages[stage.name] = stage
    return stages


def announce_built(stage, seconds: float) -> None:
    """The server log's line when a background build ends: ``pipeline 'dense' ready (built in 4 min 2 s)`` or
    ``pipeline 'x' failed: <one line> (after 0.1 s)``."""
    from sleuth.progress import format_duration

    outcome = "ready (built in" if stage.ready else f"{stage.status} (after"
    console.print(f"pipeline '{stage.name}' {outcome} {format_duration(seconds)})", soft_wrap=True, markup=False,
                  highlight=False)


def startup_line(stages: dict[str, Stage]) -> str:
    """``ready: idx`` (index folders), or ``building in the background: bm25 (the default: /ready is 503 until it
    is built), dense, hybrid`` (pipelines); both parts where some are ready and some are not."""
    from sleuth.service.lazy import status_of

    ready = [name for name, stage in stages.items() if status_of(stage) == "ready"]
    later = [name for name in stages if name not in ready]
    default = next(iter(stages))
    later = [f"{name} (the default: /ready is 503 until it is built)" if name == default else name for name in later]
    parts = ([f"ready: {', '.join(ready)}"] if ready else []) + \
        ([f"building in the background: {', '.join(later)}"] if later else [])
    return "; ".join(parts)


def register(app: typer.Typer) -> None:
    app.command()(serve)
