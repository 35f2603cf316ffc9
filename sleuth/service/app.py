"""The search service: ``create_app(pipelines)`` serves search, batch search, health, readiness, metrics and
admin endpoints, plus each registered system's own (private search adds ``/obfuscate``), with FastAPI (OpenAPI
docs at ``/docs`` and ``/redoc``, served from a packaged copy of their assets, and ``/openapi.json``).

``/search`` takes ``query``, ``k`` and ``pipeline`` (or ``index``: the name a served index was registered under;
default: the first one) and answers ``{"query", "pipeline", "hits": [{rank, id, doc_id, score, title, text}]}``;
with ``extras: true`` every hit also has its stage ``extras`` (JSON-safe; evidence paths as lists of hop records)
and a private search's answer has the ``obfuscated_queries`` it sent, what they exposed (``privacy``) and how they
were made (``obfuscation``). Titles and texts are cut to 1,000 characters
(such hits carry ``"truncated": true``) unless ``max_chars`` asks for more (up to the server's limit), ``fields``
picks the hit fields, and a response larger than the limit is refused. ``/pipelines`` lists the served pipelines
with their descriptions and status, and ``/`` is the web page (:mod:`sleuth.service.page`). A pipeline given as a
:class:`~sleuth.service.lazy.LazyStage` is built in the background and answered with a 503 (``Retry-After``, its
status line) until it is ready.

Searches run concurrently on a bounded pool: a 503 when it is full, a 504 past the time limit (and a batch stops
between queries). Bad requests get a 4xx status with ``{"error": one line}`` (413 for large bodies, 401/403 for
admin, checked before the body is read; 400 for a ``Host`` not on the allow-list). Every search is written to the
query log when one is given, with the status its request was answered with (not a ``HEAD``); a log that cannot be written (a full disk) never fails a search: the entry is
dropped whole and counted (``sleuth_query_log_failures_total`` in ``/metrics``).

Modules: routers in :mod:`sleuth.service.routes` (search, ops, admin) and :mod:`~sleuth.service.page`; the logic in
:mod:`~sleuth.service.service` (served pipelines, searcher, document updates) without FastAPI.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sleuth.errors import MissingExtraError
from sleuth.service.limits import Limits, check_fields, check_flag  # noqa: F401 (check_fields: extensions' import)
from sleuth.service.query_log import QueryLog
from sleuth.service.service import MAX_K, SearchService
from sleuth.stages.base import Stage

#: a system's service endpoints: ``extension(app, service)`` adds routes to the FastAPI app
Extension = Callable[[Any, SearchService], None]


def create_app(pipelines: Mapping[str, Stage], query_log: str | Path | None = None, max_k: int = MAX_K,
               limits: Limits | None = None, api_key: str | None = None,
               loader: Callable[[], Mapping[str, Stage]] | None = None,
               index_dirs: Mapping[str, str | Path] | None = None, extensions: Sequence[Extension] | None = None,
               allowed_hosts: Sequence[str] | None = None):
    """A FastAPI app serving ``pipelines`` (name -> Stage); ``query_log`` is a JSONL file or None; ``limits``
    caps requests (default: :class:`Limits` with ``max_k``); ``api_key`` enables the admin endpoints, and
    ``loader`` (a function giving the pipelines anew) is what ``POST /admin/reload`` calls; ``index_dirs`` (served
    name -> bm25 or dense index folder) are the indexes ``POST``/``DELETE /admin/documents`` update (then reload);
    ``extensions`` add a system's own endpoints (default: those of every registered system, e.g. ``/obfuscate``);
    ``allowed_hosts`` are the ``Host`` values answered (see :mod:`sleuth.service.hosts`; None: any)."""
    try:
        import fastapi_offline  # noqa: F401 (the docs' assets)
        from fastapi import FastAPI

        from sleuth.service.errors import add_error_handlers
        from sleuth.service.routes import admin, ops, search
    except ImportError as exc:
        raise MissingExtraError(exc.name or "fastapi", "service", "the HTTP service") from None
    from sleuth.service.admin import AdminKeyGuard
    from sleuth.service.docs import add_docs
    from sleuth.service.hosts import AllowedHosts, check_hosts
    from sleuth.service.limits import BodySizeLimit
    from sleuth.service.metrics import MeasureRequests, Metrics
    from sleuth.service.page import add_page
    from sleuth.service.request_line import RequestLineChecks

    if allowed_hosts is not None:
        check_hosts(allowed_hosts)

    service = SearchService(pipelines, QueryLog(query_log), max_k, limits, loader, index_dirs)
    app = FastAPI(title="sleuth", description="Search service of sleuth.", docs_url=None, redoc_url=None)
    app.state.service, app.state.metrics, app.state.api_key = service, Metrics(), api_key
    app.state.metrics.counter("sleuth_query_log_failures_total", "Query log entries that could not be written.",
                              lambda: service.query_log.failures)
    add_error_handlers(app)
    for router in (search.router, ops.router, admin.router):
        app.include_router(router)
    add_page(app)
    add_docs(app)
    for extend in default_extensions() if extensions is None else extensions:
        extend(app, service)
    # the last added runs first: hosts, then metrics, then the admin key, then the body size, then the request
    # line (query string, URL parameters on a POST, the body's type, HEAD), then the routes
    app.add_middleware(RequestLineChecks)
    app.add_middleware(BodySizeLimit, max_bytes=service.limits.max_body_bytes)
    app.add_middleware(AdminKeyGuard, api_key=api_key)
    app.add_middleware(MeasureRequests, metrics=app.state.metrics)
    if allowed_hosts is not None:
        app.add_middleware(AllowedHosts, hosts=allowed_hosts)
    return app


def default_extensions() -> list[Extension]:
    """The service endpoints of every registered system (:attr:`sleuth.plugins.System.service`)."""
    from sleuth.plugins import systems

    return [endpoint for system in systems() if system.service
            for endpoint in system.module(system.service).endpoints()]
