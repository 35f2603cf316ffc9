"""The search service: ``create_app(pipelines)`` serves ``GET/POST /search`` and ``GET /health`` with FastAPI.

``/search`` takes ``query``, ``k`` and ``pipeline`` (or ``index``: the name a served index was registered under;
default: the first one) and answers ``{"query", "pipeline", "hits": [{rank, id, doc_id, score, title, text}]}``.
Bad requests get HTTP 400 with ``{"error": one line}``. Every search is written to the query log when one is given.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Mapping

from sleuth.errors import ConfigError, MissingExtraError, SleuthError
from sleuth.service.query_log import QueryLog
from sleuth.stages.base import Stage

DEFAULT_K = 10
MAX_K = 1000


def hit_record(rank: int, hit) -> dict[str, Any]:
    """The JSON form of one hit."""
    return {"rank": rank, "id": hit.id, "doc_id": hit.doc_id, "score": hit.score, "title": hit.title,
            "text": hit.text}


class SearchService:
    """The service's logic, independent of the web framework: pick the pipeline, check k, search, log."""

    def __init__(self, pipelines: Mapping[str, Stage], query_log: QueryLog, max_k: int = MAX_K):
        if not pipelines:
            raise ConfigError("the service needs at least one pipeline or index to serve")
        self.pipelines, self.query_log, self.max_k = dict(pipelines), query_log, max_k
        self.default = next(iter(self.pipelines))
        self._lock = threading.Lock()

    def search(self, query: Any, k: Any = DEFAULT_K, pipeline: str | None = None) -> dict[str, Any]:
        name = pipeline or self.default
        if name not in self.pipelines:
            raise ConfigError(f"unknown pipeline '{name}' (served: {', '.join(self.pipelines)})")
        if not isinstance(query, str) or not query.strip():
            raise ConfigError("'query' must be a non-empty string")
        try:
            k = int(k)
        except (TypeError, ValueError):
            raise ConfigError(f"'k' must be an integer, got {k!r}") from None
        if not 1 <= k <= self.max_k:
            raise ConfigError(f"'k' must be between 1 and {self.max_k}, got {k}")
        with self._lock:
            hits = self.pipelines[name].search(query, k=k)
        self.query_log.record(pipeline=name, query=query, k=k, hits=len(hits))
        return {"query": query, "pipeline": name, "hits": [hit_record(r, h) for r, h in enumerate(hits, start=1)]}


def create_app(pipelines: Mapping[str, Stage], query_log: str | Path | None = None, max_k: int = MAX_K):
    """A FastAPI app serving ``pipelines`` (name -> Stage); ``query_log`` is a JSONL file or None."""
    try:
        from fastapi import Body, FastAPI, Query
        from fastapi.exceptions import RequestValidationError
        from fastapi.responses import JSONResponse
    except ImportError:
        raise MissingExtraError("fastapi", "service", "the HTTP service") from None

    service = SearchService(pipelines, QueryLog(query_log), max_k)
    app = FastAPI(title="sleuth", description="Search service of sleuth.")
    app.state.service = service

    @app.exception_handler(SleuthError)
    def sleuth_error(request, exc: SleuthError):
        return JSONResponse(status_code=400, content={"error": str(exc)})

    @app.exception_handler(RequestValidationError)
    def invalid_request(request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
        return JSONResponse(status_code=400, content={"error": f"{where or 'request'}: {first.get('msg', 'invalid')}"})

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "pipelines": list(service.pipelines)}

    @app.get("/search")
    def search_get(query: str = Query(...), k: int = Query(DEFAULT_K), pipeline: str | None = Query(None),
                   index: str | None = Query(None)) -> dict[str, Any]:
        return service.search(query, k, pipeline or index)

    @app.post("/search")
    def search_post(body: dict[str, Any] = Body(...)) -> dict[str, Any]:
        unknown = set(body) - {"query", "k", "pipeline", "index"}
        if unknown:
            raise ConfigError(f"unknown field(s) {sorted(unknown)} (known: query, k, pipeline, index)")
        return service.search(body.get("query"), body.get("k", DEFAULT_K), body.get("pipeline") or body.get("index"))

    return app
