"""The service's endpoints as FastAPI routers, one module per concern (search, ops, admin); each endpoint finds
the :class:`~sleuth.service.service.SearchService` on ``request.app.state.service``."""

from __future__ import annotations

from typing import Any


def service_of(request: Any):
    """The app's :class:`~sleuth.service.service.SearchService` (a FastAPI dependency)."""
    return request.app.state.service
