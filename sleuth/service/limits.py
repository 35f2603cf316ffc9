"""The service's request limits, the 4xx errors they raise, and an ASGI middleware capping request body size (and
refusing a JSON body that gives a key twice)."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from sleuth.errors import SleuthError

#: the most obfuscated versions of one query made at once, one cap for ``sleuth privacy`` (``-n``) and
#: ``POST /obfuscate`` (``sleuth serve --max-obfuscations`` may only lower it): n of them cost memory and time in
#: proportion (``-n 1000000000`` was killed at 21.5 GB)
MAX_OBFUSCATIONS = 50
#: what a count sent as text may look like: ASCII digits (no "2.0", "1_0", "²" or "٥"), short enough to parse
INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,18}")


class RequestError(SleuthError):
    """A request the service refuses; ``status`` is the HTTP status it is answered with (4xx, or 504 on timeout),
    with ``headers`` (``Retry-After`` on a 503 worth retrying)."""

    def __init__(self, message: str, status: int = 400, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.headers = status, dict(headers or {})


class LimitError(SleuthError):
    """A limit of :class:`Limits` out of range; ``field`` names it, ``problem`` says what is wrong."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"limit '{field}' {problem}")
        self.field, self.problem = field, problem


@dataclass(frozen=True)
class Limits:
    """Named request limits (all inclusive maxima)."""

    max_query_chars: int = 2000
    max_k: int = 1000
    max_batch: int = 64
    max_body_bytes: int = 1_000_000
    max_obfuscations: int = MAX_OBFUSCATIONS
    timeout_seconds: float = 30.0
    #: passage title and text are cut to this many characters unless a request asks for more (``max_chars``)
    text_chars: int = 1000
    #: the largest ``max_chars`` a request may ask for
    max_text_chars: int = 100_000
    #: the largest search response, in bytes of JSON (a request asking for more gets a 400)
    max_response_bytes: int = 16_000_000
    #: threads answering requests, and requests that may wait for one (503 beyond)
    workers: int = 8
    max_queued: int = 64

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not value > 0 or value == math.inf:  # before: --timeout inf started, then /obfuscate was a 500
                raise LimitError(name, f"must be a positive finite number, got {value!r}")
        if self.max_obfuscations > MAX_OBFUSCATIONS:
            raise LimitError("max_obfuscations", f"must be at most {MAX_OBFUSCATIONS} (the cap shared with sleuth "
                                                 f"privacy), got {self.max_obfuscations}")
        if self.text_chars > self.max_text_chars:  # before: a default cut no request could ask for
            raise LimitError("text_chars", f"must be at most the largest max_chars a request may ask for "
                                           f"({self.max_text_chars:,}), got {self.text_chars:,}")

    def query(self, query: Any, field: str = "query") -> str:
        """``query`` checked: a non-empty string of at most ``max_query_chars`` characters."""
        if not isinstance(query, str) or not query.strip():
            raise RequestError(f"'{field}' must be a non-empty string")
        if len(query) > self.max_query_chars:
            raise RequestError(f"'{field}' is {len(query)} characters long; the limit is {self.max_query_chars}")
        return query

    def count(self, value: Any, field: str, maximum: int) -> int:
        """``value`` checked: an integer (not a bool or float; a string of ASCII digits, as a URL parameter is, is
        read as one) in ``1..maximum``."""
        if isinstance(value, str) and INTEGER_TEXT.fullmatch(value.strip()):  # "²" is isdigit() and not int()
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise RequestError(f"'{field}' must be an integer, got {value!r}"[:200])
        if not 1 <= value <= maximum:
            raise RequestError(f"'{field}' must be between 1 and {maximum}, got {value}")
        return value

    def k(self, value: Any) -> int:
        return self.count(value, "k", self.max_k)

    def batch(self, queries: Any) -> list[str]:
        """A non-empty list of at most ``max_batch`` valid queries."""
        if not isinstance(queries, list) or not queries:
            raise RequestError("'queries' must be a non-empty list of strings")
        if len(queries) > self.max_batch:
            raise RequestError(f"'queries' holds {len(queries)} queries; the limit is {self.max_batch}")
        return [self.query(q, f"queries[{i}]") for i, q in enumerate(queries)]


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


def check_query_parameters(request: Any, known: set[str]) -> None:
    """A 400 for a URL query parameter ``request`` has that is not ``known`` or comes more than once (as
    :func:`check_fields` refuses an unknown field of a JSON body: a misspelt ``topk`` is not silently ignored)."""
    names = [name for name, _ in request.query_params.multi_items()]
    unknown = set(names) - known
    if unknown:
        raise RequestError(f"unknown query parameter(s) {sorted(unknown)} (known: {', '.join(sorted(known))})"[:300])
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise RequestError(f"query parameter '{repeated}' given {names.count(repeated)} times")


def check_unicode(body: Any) -> None:
    """A 400 when a string anywhere in the parsed JSON ``body`` holds a lone surrogate: JSON allows the escape
    (``"\\ud800"``) but it is not Unicode text, and it would fail later in logs, indexes and responses."""
    from sleuth.corpus.jsonl import lone_surrogate_field

    if lone_surrogate_field({"body": body}) is not None:  # iterative: a deep body cannot exhaust the stack
        raise RequestError("the request holds a lone surrogate escape (\\ud800-\\udfff), which is not valid "
                           "Unicode text")


def chosen_pipeline(pipeline: Any, index: Any) -> str | None:
    """The served name a search asks for: ``pipeline`` or ``index`` (its other name), checked as a plain name;
    None for the default. Both given, or an empty or non-string name, is a 400 (``"pipeline": ""`` or ``false``
    answered from the default pipeline, and ``index`` beside ``pipeline`` was ignored)."""
    if pipeline is not None and index is not None:
        raise RequestError("give 'pipeline' or 'index' (its other name), not both")
    if index is not None:
        return safe_name(index, "index")
    return None if pipeline is None else safe_name(pipeline)


def safe_name(name: Any, field: str = "pipeline") -> str:
    """``name`` checked as a plain name: no path separators, ``..``, absolute or drive paths, or control characters,
    so it can never point outside the data directory."""
    if not isinstance(name, str) or not name.strip():
        raise RequestError(f"'{field}' must be a non-empty string")
    bad = (len(name) > 200 or ".." in name or "/" in name or "\\" in name or name.startswith("~")
           or PurePosixPath(name).is_absolute() or PureWindowsPath(name).is_absolute()
           or PureWindowsPath(name).drive or any(ord(c) < 32 for c in name))
    if bad:
        raise RequestError(f"'{field}' must be a plain name, not a path: {name!r}"[:240])
    return name


def duplicate_key(body: bytes) -> str | None:
    """The first key given twice within one object of the JSON ``body``; None when there is none, or when the body
    is not JSON (the endpoint answers that)."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> None:
        seen: set[str] = set()
        for key, _ in items:
            if key in seen and not found:
                found.append(key)
            seen.add(key)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None
    return found[0] if found else None


class BodySizeLimit:
    """ASGI middleware answering 413 with ``{"error"}`` when a request body exceeds ``max_bytes``: checked against
    ``Content-Length`` up front and against the bytes actually received (chunked bodies), before the app runs. A
    JSON body giving one key twice in an object is a 400 (a JSON parser keeps the last silently: ``{"k": 5, "k":
    500}`` answered 500 hits)."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and not length.isdigit():
            await send_error(send, 400, "invalid Content-Length header")
            return
        if length is not None and int(length) > self.max_bytes:
            await self._reject(send)
            return
        body, more = b"", True
        while more:  # read the whole body first (it is small by now): a 413 needs no half-run endpoint
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._reject(send)
                return
        twice = duplicate_key(body) if body and is_json_body(scope) else None
        if twice is not None:
            await send_error(send, 400, f"the JSON body gives the key {twice!r} twice in one object; give it once")
            return
        await self.app(scope, _replay([{"type": "http.request", "body": body, "more_body": False}], receive), send)

    async def _reject(self, send) -> None:
        await send_error(send, 413, f"request body larger than {self.max_bytes} bytes")


def is_json_type(kind: str) -> bool:
    """``application/json`` or a ``+json`` type (``application/merge-patch+json``)."""
    return kind == "application/json" or kind.endswith("+json")


def is_json_body(scope: dict[str, Any]) -> bool:
    """Whether the request's body is read as JSON: a JSON content type, or none (the service's default)."""
    kind = dict(scope.get("headers") or []).get(b"content-type", b"application/json")
    return is_json_type(kind.split(b";")[0].strip().decode("latin-1").lower())


async def send_error(send, status: int, message: str) -> None:
    """Answer ``status`` with ``{"error": message}`` straight through ASGI."""
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _replay(messages: list[dict], then=None):
    """An ASGI ``receive`` giving ``messages`` first, then waiting on ``then`` (or reporting a disconnect)."""
    pending = list(messages)

    async def receive() -> dict:
        if pending:
            return pending.pop(0)
        if then is not None:
            return await then()
        return {"type": "http.disconnect"}

    return receive
