"""The admin API key check: admin endpoints are disabled without a configured key, and need ``X-API-Key``."""

from __future__ import annotations

import hmac

from sleuth.service.limits import RequestError

HEADER = "X-API-Key"
ENV_VAR = "SLEUTH_API_KEY"


def check_api_key(configured: str | None, given: str | None) -> None:
    """Raise 403 when admin is disabled (no key configured), 401 when ``given`` is missing or wrong."""
    if not configured:
        raise RequestError(f"admin endpoints are disabled: no API key configured ({ENV_VAR})", status=403)
    if not given or not hmac.compare_digest(given.encode(), configured.encode()):
        raise RequestError(f"missing or wrong API key (header {HEADER})", status=401)
