"""The service's error answers: every failure is ``{"error": one line}`` with its status (4xx for bad requests,
503 when busy or a shard is down, 504 past the time limit, 500 without details for anything unexpected)."""

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
        return JSONResponse(status_code=exc.status, content={"error": str(exc)})

    @app.exception_handler(ShardUnavailableError)
    def shard_down(request, exc: ShardUnavailableError):
        return JSONResponse(status_code=503, content={"error": str(exc)})

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
