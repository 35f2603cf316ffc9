"""Search endpoints: ``GET``/``POST /search`` and ``POST /search/batch`` (see :mod:`sleuth.service.app`). They are
``async``: the search runs on the service's bounded executor, and no server thread waits for it, so the executor's
slots (not a thread pool in front of it) bound the requests taken."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Query, Request
from fastapi.responses import Response

from sleuth.service.limits import check_fields, check_query_parameters, chosen_pipeline
from sleuth.service.request_line import HEAD_KEY
from sleuth.service.routes import service_of
from sleuth.service.searcher import DEFAULT_K

SHAPE_FIELDS = {"k", "pipeline", "index", "extras", "max_chars", "fields", "partial"}
router = APIRouter(tags=["search"])


def json_bytes(data: bytes) -> Response:
    return Response(content=data, media_type="application/json")


@router.get("/search", response_class=Response)
async def search_get(request: Request, query: str = Query(...),
               k: str | None = Query(None, description=f"How many hits (an integer), as in the POST body (default "
                                                       f"{DEFAULT_K}, or the pipeline's depth where smaller)."),
               pipeline: str | None = Query(None), index: str | None = Query(None), extras: bool = Query(False),
               max_chars: str | None = Query(None, description="Cut title and text to this many characters."),
               fields: str | None = Query(None, description="Hit fields, comma-separated (default: all)."),
               partial: bool = Query(False, description="Shard actors: rank with the shards that answer and say "
                                                        "which are down (default: 503 naming a shard that is down).")):
    """Search one query (``k`` and ``max_chars`` are read as in the POST body: ``2.0`` is not an integer)."""
    check_query_parameters(request, {"query"} | SHAPE_FIELDS)
    head = bool(request.scope.get(HEAD_KEY))  # a HEAD probe: answered, kept out of the query log
    return json_bytes(await service_of(request).searcher.search(query, k, chosen_pipeline(pipeline, index), extras,
                                                                max_chars, fields, partial, log=not head))


@router.post("/search", response_class=Response)
async def search_post(request: Request, body: Any = Body(...)):
    """Search one query: ``{"query", "k"?, "pipeline"?, "extras"?, "max_chars"?, "fields"?, "partial"?}``."""
    body = check_fields(body, {"query"} | SHAPE_FIELDS)
    return json_bytes(await service_of(request).searcher.search(
        body.get("query"), body.get("k"), chosen_pipeline(body.get("pipeline"), body.get("index")),
        body.get("extras", False), body.get("max_chars"), body.get("fields"), body.get("partial", False)))


@router.post("/search/batch", response_class=Response)
async def search_batch(request: Request, body: Any = Body(...)):
    """Search several queries: ``{"queries": [...], "k"?, "pipeline"?, "extras"?, "max_chars"?, "fields"?,
    "partial"?}``."""
    body = check_fields(body, {"queries"} | SHAPE_FIELDS)
    return json_bytes(await service_of(request).searcher.search_batch(
        body.get("queries"), body.get("k"), chosen_pipeline(body.get("pipeline"), body.get("index")),
        body.get("extras", False), body.get("max_chars"), body.get("fields"), body.get("partial", False)))
