"""The service's error answers: every failure is ``{"error": one line}`` with its status (4xx for bad requests,
503 when busy, a shard is down or a pipeline is not built yet (then with ``Retry-After``), 504 past the time limit,
500 without details for anything unexpected). ``/openapi.json`` documents them so: a request FastAPI finds
invalid is a 400 with that body, not FastAPI's default 422 with its ``detail`` list."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sleuth.errors import ShardUnavailableError, SleuthError
from sleuth.service.limits import RequestError

#: the body of every error answer, as OpenAPI documents it
ERROR_SCHEMA = {"title": "Error", "type": "object", "required": ["error"],
                "properties": {"error": {"title": "Error", "type": "string", "description": "What was wrong, one line."}}}
BAD_REQUEST = {"description": "Bad Request: an invalid request, answered with one line",
               "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def add_error_handlers(app: FastAPI) -> None:
    """Answer errors on ``app`` as ``{"error"}`` JSON, and document the 400 in its OpenAPI schema."""
    document_bad_requests(app)

    @app.exception_handler(RequestError)
    def request_error(request, exc: RequestError):
        return JSONResponse(status_code=exc.status, content={"error": str(exc)}, headers=exc.headers)

    @app.exception_handler(ShardUnavailableError)
    def shard_down(request, exc: ShardUnavailableError):
        return JSONResponse(status_code=503, content={"error": str(exc)})

    @app.exception_handler(SleuthError)
    def sleuth_error(request, exc: SleuthError):
        return JSONResponse(status_code=400, content={"error": str(exc)})

    @app.exception_handler(RequestValidationError)
    def invalid_request(request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        if first.get("type") == "json_invalid":
            return JSONResponse(status_code=400, content={"error": json_error_message(first, exc.body)})
        message = f"{where_invalid(first)}: {first.get('msg', 'invalid')}"
        return JSONResponse(status_code=400, content={"error": message})

    @app.exception_handler(StarletteHTTPException)
    def http_error(request, exc: StarletteHTTPException):
        if exc.status_code == 405:
            return method_not_allowed(request)
        return JSONResponse(status_code=exc.status_code, content={"error": str(exc.detail)}, headers=exc.headers)

    @app.exception_handler(Exception)
    def unexpected(request, exc: Exception):
        return JSONResponse(status_code=500, content={"error": f"internal error ({type(exc).__name__})"})


def document_bad_requests(app: FastAPI) -> None:
    """Make ``app.openapi()`` (``/openapi.json``, read by ``/docs`` and ``/redoc``) say what the service answers to
    a request FastAPI finds invalid: a 400 with ``{"error"}`` in place of every 422 FastAPI documents, whichever
    router or system added the route (before: each documented a 422 the service never sends)."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = bad_requests_documented(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def bad_requests_documented(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each operation's 422 response replaced by a 400 answering :data:`ERROR_SCHEMA`, and
    FastAPI's validation schemas dropped once nothing refers to them."""
    replaced = False
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            if responses.pop("422", None) is not None:
                responses.setdefault("400", BAD_REQUEST)
                replaced = True
    if replaced:
        schemas = schema.setdefault("components", {}).setdefault("schemas", {})
        schemas["Error"] = ERROR_SCHEMA
        for name in ("HTTPValidationError", "ValidationError"):  # the first refers to the second
            if f'/{name}"' not in json.dumps(schema):
                schemas.pop(name, None)
    return schema


def method_not_allowed(request):
    """A 405 whose ``Allow`` names every method the path takes (Starlette names the first route's only: ``PUT
    /search`` said ``allow: GET``), or for ``OPTIONS`` a 204 with that ``Allow``."""
    from fastapi import Response

    from sleuth.service.request_line import allowed_methods

    allow = allowed_methods(request.app, request.scope)
    headers = {"Allow": ", ".join(allow)}
    if request.method == "OPTIONS":
        return Response(status_code=204, headers=headers)
    return JSONResponse(status_code=405, headers=headers, content={
        "error": f"method {request.method[:20]} is not allowed on {request.url.path[:100]} (allowed: {headers['Allow']})"})


def where_invalid(error: dict) -> str:
    """Where FastAPI's validation ``error`` lies, in words: ``query parameter 'k'`` for its ``("query", "k")``, the
    dotted path inside the body otherwise (``request`` when it has none)."""
    location = [str(part) for part in error.get("loc", ())]
    if len(location) == 2 and location[0] in ("query", "path", "header"):
        return f"{location[0]} parameter '{location[1]}'"
    return ".".join(part for part in location if part != "body") or "request"


def json_error_message(error: dict, body: object) -> str:
    """``request body is not valid JSON: Expecting value at line 1 column 5`` from FastAPI's ``json_invalid`` error
    (whose location holds the character offset of the fault in ``body``)."""
    reason = str((error.get("ctx") or {}).get("error") or "JSON decode error")
    position = error.get("loc", ("body", None))[-1]
    if isinstance(position, int) and isinstance(body, (str, bytes)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        return f"request body is not valid JSON: {reason} at line {line} column {column}"
    return f"request body is not valid JSON: {reason}"
