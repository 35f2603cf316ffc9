"""Checks of a request's line and headers before it is routed (an ASGI middleware), and the methods a path allows.

- A query string that is not UTF-8 is a 400: Starlette would put U+FFFD in place of the bad bytes and search for
  that.
- A ``POST``, ``PUT``, ``PATCH`` or ``DELETE`` with URL parameters is a 400: those endpoints take their fields in
  the JSON body, and the parameters (``POST /search?k=1``) were ignored without a word.
- A body sent with a ``Content-Type`` other than JSON is a 415 naming the type (curl's ``-d`` sends a form type
  unless told otherwise); a body without the header is read as JSON (FastAPI would hand the endpoint its bytes).
- ``HEAD`` is answered as ``GET`` without the body (health checkers use it; FastAPI routes only the methods named).
"""

from __future__ import annotations

from typing import Any

from sleuth.service.limits import is_json_type, send_error

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def request_line_problem(scope: dict[str, Any]) -> tuple[int, str] | None:
    """``(status, message)`` for a request the service refuses before routing, else None."""
    raw: bytes = scope.get("query_string") or b""
    method, path = scope["method"], scope["path"]
    if raw and method in BODY_METHODS:
        shown = raw[:80].decode("latin-1")
        return 400, f"{method} {path} takes its fields in the JSON body, not as URL parameters (got '?{shown}')"
    if raw and not utf8_query_string(raw):
        return 400, "the URL's query string is not valid UTF-8 (percent-encode its text as UTF-8)"
    headers = dict(scope.get("headers") or [])
    kind = headers.get(b"content-type", b"").decode("latin-1").split(";")[0].strip().lower()
    if method in BODY_METHODS and kind and not is_json_type(kind) and has_body(headers):
        return 415, f"send the body as JSON with 'Content-Type: application/json' (got '{kind[:60]}')"
    return None


def utf8_query_string(raw: bytes) -> bool:
    """Whether every percent-decoded name and value of the query string ``raw`` is UTF-8."""
    from urllib.parse import unquote_to_bytes

    try:
        for part in raw.replace(b"+", b" ").split(b"&"):
            unquote_to_bytes(part).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def has_body(headers: dict[bytes, bytes]) -> bool:
    """Whether the request announces a body (a non-zero ``Content-Length`` or a chunked one)."""
    length = headers.get(b"content-length", b"").strip()
    return (length not in (b"", b"0")) or b"transfer-encoding" in headers


#: the ASGI scope key marking a ``HEAD`` request answered as ``GET`` (a search is then not logged)
HEAD_KEY = "sleuth.head"


class RequestLineChecks:
    """ASGI middleware applying :func:`request_line_problem` and answering ``HEAD`` as a bodiless ``GET``."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = request_line_problem(scope)
        if problem is not None:
            await send_error(send, *problem)
            return
        if scope["method"] == "HEAD":
            scope, send = {**scope, "method": "GET", HEAD_KEY: True}, without_body(send)
        headers = dict(scope.get("headers") or [])
        if scope["method"] in BODY_METHODS and b"content-type" not in headers and has_body(headers):
            scope = {**scope, "headers": [*scope["headers"], (b"content-type", b"application/json")]}
        await self.app(scope, receive, send)


def without_body(send):
    """An ASGI ``send`` passing the response start (its ``Content-Length`` too) and dropping the body's bytes."""

    async def send_head(message: dict) -> None:
        if message["type"] == "http.response.body":
            if message.get("more_body", False):
                return
            message = {"type": "http.response.body", "body": b"", "more_body": False}
        await send(message)

    return send_head


def allowed_methods(app, scope: dict[str, Any]) -> list[str]:
    """Every method some route of ``app`` answers on ``scope``'s path (``HEAD`` wherever ``GET``), sorted: the
    ``Allow`` of a 405, where Starlette names only the first route that matched the path. Each method is asked of
    the routes (FastAPI nests an included router's routes), static file mounts left out (they answer GET alone)."""
    from starlette.routing import Match, Mount

    routes = [route for route in getattr(app, "routes", ()) if not isinstance(route, Mount)]
    methods = {method for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
               if any(route.matches({**scope, "method": method})[0] == Match.FULL for route in routes)}
    return sorted(methods | ({"HEAD"} if "GET" in methods else set()))
