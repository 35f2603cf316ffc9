"""The search service: ``create_app(pipelines)`` serves search, batch search, health, readiness, metrics and
admin endpoints, plus each registered system's own (private search adds ``/obfuscate``), with FastAPI (OpenAPI
docs at ``/docs`` and ``/openapi.json``).

``/search`` takes ``query``, ``k`` and ``pipeline`` (or ``index``: the name a served index was registered under;
default: the first one) and answers ``{"query", "pipeline", "hits": [{rank, id, doc_id, score, title, text}]}``;
with ``extras: true`` every hit also has its stage ``extras`` (JSON-safe; evidence paths as lists of hop records)
and a private search's answer has the ``obfuscated_queries`` it sent. ``/pipelines`` lists the served pipelines
with their descriptions, and ``/`` is the web page (:mod:`sleuth.service.page`).
Bad requests get a 4xx status with ``{"error": one line}`` (413 for large bodies, 401/403 for admin, 504 when a
request passes the time limit). Every search is written to the query log when one is given.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, TypeVar

from sleuth.errors import ConfigError, MissingExtraError, SleuthError
from sleuth.service.admin import HEADER, check_api_key
from sleuth.service.extras import hit_records
from sleuth.service.limits import BodySizeLimit, Limits, RequestError, check_unicode, safe_name
from sleuth.service.metrics import Metrics
from sleuth.service.page import add_page
from sleuth.service.query_log import QueryLog
from sleuth.stages.base import Stage

DEFAULT_K = 10
MAX_K = 1000
SEARCH_FIELDS = {"query", "k", "pipeline", "index", "extras"}
T = TypeVar("T")
#: a system's service endpoints: ``extension(app, service)`` adds routes to the FastAPI app
Extension = Callable[[Any, "SearchService"], None]


def check_flag(value: Any, field: str) -> bool:
    """``value`` checked: a JSON boolean."""
    if not isinstance(value, bool):
        raise RequestError(f"'{field}' must be true or false, got {value!r}"[:200])
    return value


def check_fields(body: Any, known: set[str]) -> dict[str, Any]:
    """``body`` checked: a JSON object with only ``known`` fields, and valid Unicode text throughout."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    check_unicode(body)
    unknown = set(body) - known
    if unknown:
        raise RequestError(f"unknown field(s) {sorted(unknown)} (known: {', '.join(sorted(known))})"[:300])
    return body


class SearchService:
    """The service's logic, independent of the web framework: check limits, pick the pipeline, search, log,
    and reload pipelines through ``loader``."""

    def __init__(self, pipelines: Mapping[str, Stage], query_log: QueryLog, max_k: int = MAX_K,
                 limits: Limits | None = None, loader: Callable[[], Mapping[str, Stage]] | None = None,
                 index_dirs: Mapping[str, str | Path] | None = None):
        if not pipelines:
            raise ConfigError("the service needs at least one pipeline or index to serve")
        self.limits = limits or Limits(max_k=max_k)
        self.pipelines, self.query_log, self.loader = dict(pipelines), query_log, loader
        self.default = next(iter(self.pipelines))
        self._lock = threading.Lock()
        self._update_lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=8, thread_name_prefix="sleuth-request")
        self.loaded_at = time.time()
        self.index_dirs = {name: Path(path) for name, path in (index_dirs or {}).items()}

    @property
    def max_k(self) -> int:
        return self.limits.max_k

    @property
    def ready(self) -> bool:
        """Whether pipelines are loaded and requests can be answered."""
        return bool(self.pipelines)

    def timed(self, work: Callable[[], T]) -> T:
        """``work()`` run within the per-request time limit (504 when it takes longer; the work is not killed)."""
        future = self._executor.submit(work)
        try:
            return future.result(timeout=self.limits.timeout_seconds)
        except FutureTimeout:
            raise RequestError(f"the request took longer than {self.limits.timeout_seconds:g} s", 504) from None

    def pipeline(self, name: Any) -> tuple[str, Stage]:
        """The served pipeline called ``name`` (default: the first one)."""
        name = safe_name(name) if name is not None else self.default
        pipelines = self.pipelines
        if name not in pipelines:
            raise RequestError(f"unknown pipeline '{name}' (served: {', '.join(pipelines)})")
        return name, pipelines[name]

    def describe(self) -> dict[str, Any]:
        """The served pipelines with their descriptions, the default one and the largest k."""
        pipelines = self.pipelines
        return {"pipelines": [{"name": name, "description": str(getattr(stage, "description", None) or "")}
                              for name, stage in pipelines.items()],
                "default": self.default, "max_k": self.max_k}

    def _search(self, name: str, stage: Stage, query: str, k: int, extras: bool = False) -> dict[str, Any]:
        """``{"hits"}`` of one query (and ``obfuscated_queries`` when ``extras`` and the stage sent some)."""
        with self._lock:
            hits = stage.search(query, k=k)
        self.query_log.record(pipeline=name, query=query, k=k, hits=len(hits))
        records, sent = hit_records(hits, extras)
        return {"hits": records} if sent is None else {"hits": records, "obfuscated_queries": sent}

    def search(self, query: Any, k: Any = DEFAULT_K, pipeline: str | None = None,
               extras: Any = False) -> dict[str, Any]:
        """One search: ``{"query", "pipeline", "hits"}`` (hits with ``extras`` when asked, see the module doc)."""
        name, stage = self.pipeline(pipeline)
        query, k, extras = self.limits.query(query), self.limits.k(k), check_flag(extras, "extras")
        found = self.timed(lambda: self._search(name, stage, query, k, extras))
        return {"query": query, "pipeline": name, **found}

    def search_batch(self, queries: Any, k: Any = DEFAULT_K, pipeline: str | None = None,
                     extras: Any = False) -> dict[str, Any]:
        """Several searches in one request: ``{"pipeline", "results": [{"query", "hits"}]}``."""
        name, stage = self.pipeline(pipeline)
        queries, k, extras = self.limits.batch(queries), self.limits.k(k), check_flag(extras, "extras")
        results = self.timed(lambda: [{"query": q, **self._search(name, stage, q, k, extras)} for q in queries])
        return {"pipeline": name, "results": results}

    def reload(self) -> dict[str, Any]:
        """Load the pipelines again through ``loader`` and swap them in whole (searches see old or new, not a mix)."""
        if self.loader is None:
            raise RequestError("this service has no pipeline configs to reload from", 409)
        pipelines = dict(self.loader())
        if not pipelines:
            raise ConfigError("reloading gave no pipelines; keeping the current ones")
        with self._lock:
            self.pipelines, self.default, self.loaded_at = pipelines, next(iter(pipelines)), time.time()
        return {"reloaded": list(pipelines)}

    def update_documents(self, index: Any, documents: Any = None, ids: Any = None) -> dict[str, Any]:
        """Add ``documents`` (``[{id, title?, text}]``) to, or delete ``ids`` from, the updatable index served as
        ``index`` (default: the only one): a new generation is written, then the pipelines are reloaded and
        swapped in whole, so searches see the index before or after the update, never half of it."""
        from sleuth.index.updates import add_documents, delete_documents, passages_from_records

        if not self.index_dirs:
            raise RequestError("this service serves no updatable index folders", 409)
        if self.loader is None:
            raise RequestError("this service cannot reload its pipelines, so it cannot swap in updates", 409)
        if index is None:
            if len(self.index_dirs) > 1:
                raise RequestError(f"give 'index' (updatable: {', '.join(self.index_dirs)})")
            index = next(iter(self.index_dirs))
        index = safe_name(index, "index")
        if index not in self.index_dirs:
            raise RequestError(f"unknown index '{index}' (updatable: {', '.join(self.index_dirs)})")
        limit = self.limits.max_batch * 16
        items = documents if documents is not None else ids
        if not isinstance(items, list) or not items:
            raise RequestError(f"'{'documents' if documents is not None else 'ids'}' must be a non-empty list")
        if len(items) > limit:
            raise RequestError(f"at most {limit} documents or ids per request, got {len(items)}", 413)
        with self._update_lock:
            if documents is not None:
                manifest = add_documents(self.index_dirs[index], passages_from_records(documents))
            else:
                if not all(isinstance(item, str) and item for item in ids):
                    raise RequestError("'ids' must be a list of non-empty strings")
                manifest = delete_documents(self.index_dirs[index], ids)
            self.reload()
        done = "added" if documents is not None else "deleted"
        return {"index": index, done: len(items), "count": manifest.count}


def create_app(pipelines: Mapping[str, Stage], query_log: str | Path | None = None, max_k: int = MAX_K,
               limits: Limits | None = None, api_key: str | None = None,
               loader: Callable[[], Mapping[str, Stage]] | None = None,
               index_dirs: Mapping[str, str | Path] | None = None, extensions: Sequence[Extension] | None = None):
    """A FastAPI app serving ``pipelines`` (name -> Stage); ``query_log`` is a JSONL file or None; ``limits``
    caps requests (default: :class:`Limits` with ``max_k``); ``api_key`` enables the admin endpoints, and
    ``loader`` (a function giving the pipelines anew) is what ``POST /admin/reload`` calls; ``index_dirs`` (served
    name -> bm25 or dense index folder) are the indexes ``POST``/``DELETE /admin/documents`` update (then reload);
    ``extensions`` add a system's own endpoints (default: those of every registered system, e.g. ``/obfuscate``)."""
    try:
        from fastapi import Body, FastAPI, Header, Query, Request
        from fastapi.exceptions import RequestValidationError
        from fastapi.responses import JSONResponse, PlainTextResponse
        from starlette.exceptions import HTTPException as StarletteHTTPException
    except ImportError:
        raise MissingExtraError("fastapi", "service", "the HTTP service") from None

    service = SearchService(pipelines, QueryLog(query_log), max_k, limits, loader, index_dirs)
    metrics = Metrics()
    app = FastAPI(title="sleuth", description="Search service of sleuth.")
    app.state.service, app.state.metrics = service, metrics
    app.add_middleware(BodySizeLimit, max_bytes=service.limits.max_body_bytes)
    add_page(app)

    @app.middleware("http")
    async def measure(request: Request, call_next):
        started = time.perf_counter()
        status = 500
        try:
            response = await call_next(request)
            status = response.status_code
            return response
        finally:
            route = request.scope.get("route")
            endpoint = getattr(route, "path", None) or "unmatched"
            metrics.observe(endpoint, status, time.perf_counter() - started)

    @app.exception_handler(RequestError)
    def request_error(request, exc: RequestError):
        return JSONResponse(status_code=exc.status, content={"error": str(exc)})

    @app.exception_handler(SleuthError)
    def sleuth_error(request, exc: SleuthError):
        return JSONResponse(status_code=400, content={"error": str(exc)})

    @app.exception_handler(RequestValidationError)
    def invalid_request(request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        return JSONResponse(status_code=400, content={"error": f"{where or 'request'}: {first.get('msg', 'invalid')}"})

    @app.exception_handler(StarletteHTTPException)
    def http_error(request, exc: StarletteHTTPException):
        return JSONResponse(status_code=exc.status_code, content={"error": str(exc.detail)}, headers=exc.headers)

    @app.exception_handler(Exception)
    def unexpected(request, exc: Exception):
        return JSONResponse(status_code=500, content={"error": f"internal error ({type(exc).__name__})"})

    @app.get("/health")
    def health() -> dict[str, Any]:
        """Liveness: the process answers."""
        return {"status": "ok", "pipelines": list(service.pipelines)}

    @app.get("/ready")
    def ready():
        """Readiness: pipelines are loaded (503 otherwise)."""
        body = {"ready": service.ready, "pipelines": list(service.pipelines), "loaded_at": service.loaded_at}
        return JSONResponse(status_code=200 if service.ready else 503, content=body)

    @app.get("/metrics", response_class=PlainTextResponse)
    def metrics_text():
        """Request counts and latencies, Prometheus text format."""
        return PlainTextResponse(metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @app.get("/pipelines")
    def pipelines_list() -> dict[str, Any]:
        """The served pipelines: ``{"pipelines": [{name, description}], "default", "max_k"}``."""
        return service.describe()

    @app.get("/search")
    def search_get(query: str = Query(...), k: int = Query(DEFAULT_K), pipeline: str | None = Query(None),
                   index: str | None = Query(None), extras: bool = Query(False)) -> dict[str, Any]:
        """Search one query."""
        return service.search(query, k, pipeline or index, extras)

    @app.post("/search")
    def search_post(body: Any = Body(...)) -> dict[str, Any]:
        """Search one query: ``{"query", "k"?, "pipeline"?, "extras"?}``."""
        body = check_fields(body, SEARCH_FIELDS)
        return service.search(body.get("query"), body.get("k", DEFAULT_K), body.get("pipeline") or body.get("index"),
                              body.get("extras", False))

    @app.post("/search/batch")
    def search_batch(body: Any = Body(...)) -> dict[str, Any]:
        """Search several queries: ``{"queries": [...], "k"?, "pipeline"?, "extras"?}``."""
        body = check_fields(body, {"queries", "k", "pipeline", "index", "extras"})
        return service.search_batch(body.get("queries"), body.get("k", DEFAULT_K),
                                    body.get("pipeline") or body.get("index"), body.get("extras", False))

    @app.post("/admin/reload")
    def admin_reload(x_api_key: str | None = Header(None, alias=HEADER)) -> dict[str, Any]:
        """Reload the pipelines from their configs (needs the API key)."""
        check_api_key(api_key, x_api_key)
        return service.reload()

    @app.post("/admin/documents")
    def admin_add_documents(body: Any = Body(...),
                            x_api_key: str | None = Header(None, alias=HEADER)) -> dict[str, Any]:
        """Add documents to a served index folder: ``{"documents": [{id, title?, text}], "index"?}`` (API key)."""
        check_api_key(api_key, x_api_key)
        body = check_fields(body, {"documents", "index"})
        return service.timed(lambda: service.update_documents(body.get("index"), documents=body.get("documents")))

    @app.delete("/admin/documents")
    def admin_delete_documents(body: Any = Body(...),
                               x_api_key: str | None = Header(None, alias=HEADER)) -> dict[str, Any]:
        """Delete documents of a served index folder by id: ``{"ids": [...], "index"?}`` (API key)."""
        check_api_key(api_key, x_api_key)
        body = check_fields(body, {"ids", "index"})
        ids = body.get("ids")
        if ids is None:
            raise RequestError("'ids' is required")
        return service.timed(lambda: service.update_documents(body.get("index"), ids=ids))

    for extend in default_extensions() if extensions is None else extensions:
        extend(app, service)
    return app


def default_extensions() -> list[Extension]:
    """The service endpoints of every registered system (:attr:`sleuth.plugins.System.service`)."""
    from sleuth.plugins import systems

    return [endpoint for system in systems() if system.service
            for endpoint in system.module(system.service).endpoints()]
