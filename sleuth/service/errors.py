"""The service's error answers: every failure is ``{"error": one line}`` with its status (4xx for bad requests,
503 when busy, a shard is down or a pipeline is not built yet (then with ``Retry-After``), 504 past the time limit,
500 without details for anything unexpected)."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from sleuth.errors import ShardUnavailableError, SleuthError
from sleuth.service.limits import RequestError


def add_error_handlers(app: FastAPI) -> None:
    """Answer errors on ``app`` as ``{"error"}`` JSON."""

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
