"""The admin API key: where it comes from (``$SLEUTH_API_KEY`` or a key file; a command-line key is visible in the
process list), its check (admin endpoints are disabled without a configured key, and need ``X-API-Key``), and an
ASGI guard that checks it before an admin request's body is read."""

from __future__ import annotations

import hmac
import os
from pathlib import Path

from sleuth.errors import ConfigError
from sleuth.service.limits import RequestError, send_error

HEADER = "X-API-Key"
ENV_VAR = "SLEUTH_API_KEY"
PREFIX = "/admin/"


def check_api_key(configured: str | None, given: str | bytes | None) -> None:
    """Raise 403 when admin is disabled (no key configured), 401 when ``given`` is missing or wrong."""
    if not configured:
        raise RequestError(f"admin endpoints are disabled: no API key configured ({ENV_VAR})", status=403)
    if isinstance(given, str):
        given = given.encode("latin-1", "replace")  # header text is decoded as latin-1
    if not given or not hmac.compare_digest(given, configured.encode()):
        raise RequestError(f"missing or wrong API key (header {HEADER})", status=401)


def read_api_key(path: Path | None = None) -> str | None:
    """The key in the file ``path``, else ``$SLEUTH_API_KEY``, else None; surrounding whitespace removed from
    either (an HTTP header value cannot carry it: a key from a secret file's text, ending in a newline, was
    configured and no request could match it)."""
    if path is None:
        key = os.environ.get(ENV_VAR, "").strip()
        if "\n" in key:
            raise ConfigError(f"${ENV_VAR} must hold the key on one line")
        return key or None
    try:
        key = Path(path).read_text(encoding="utf-8-sig").strip()  # -sig: a byte order mark is not part of the key
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--api-key-file {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    if not key or "\n" in key:
        raise ConfigError(f"--api-key-file {path}: must hold the key on one line")
    return key


class AdminKeyGuard:
    """ASGI middleware answering 401/403 to ``/admin/*`` requests with a missing or wrong key before anything of
    the body is received."""

    def __init__(self, app, api_key: str | None):
        self.app, self.api_key = app, api_key

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PREFIX):
            given = dict(scope.get("headers") or []).get(HEADER.lower().encode())
            try:
                check_api_key(self.api_key, given)
            except RequestError as exc:
                await send_error(send, exc.status, str(exc))
                return
        await self.app(scope, receive, send)
