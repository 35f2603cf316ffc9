"""Request metrics in the Prometheus text exposition format (0.0.4), kept in memory and written by hand."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable

#: upper bounds (seconds) of the latency histogram's buckets
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    """Request counts by endpoint and status, a latency histogram by endpoint (thread-safe), and counters kept
    elsewhere (:meth:`counter`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counters: dict[str, tuple[str, Callable[[], int]]] = {}
        self.requests: dict[tuple[str, int], int] = defaultdict(int)
        self.buckets: dict[str, list[int]] = defaultdict(lambda: [0] * len(BUCKETS))
        self.sums: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)

    def counter(self, name: str, description: str, read: Callable[[], int]) -> None:
        """Also render the counter ``name``, whose value ``read()`` gives."""
        self.counters[name] = (description, read)

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        """Record one finished request."""
        with self._lock:
            self.requests[endpoint, status] += 1
            row = self.buckets[endpoint]
            for i, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    row[i] += 1
            self.sums[endpoint] += seconds
            self.counts[endpoint] += 1

    def render(self) -> str:
        """The metrics as Prometheus text."""
        lines = ["# HELP sleuth_requests_total HTTP requests by endpoint and status.",
                 "# TYPE sleuth_requests_total counter"]
        with self._lock:
            for (endpoint, status), count in sorted(self.requests.items()):
                lines.append(f'sleuth_requests_total{{endpoint="{_label(endpoint)}",status="{status}"}} {count}')
            lines += ["# HELP sleuth_request_duration_seconds HTTP request latency by endpoint.",
                      "# TYPE sleuth_request_duration_seconds histogram"]
            for endpoint in sorted(self.counts):
                label = f'endpoint="{_label(endpoint)}"'
                for bound, count in zip(BUCKETS, self.buckets[endpoint]):
                    lines.append(f'sleuth_request_duration_seconds_bucket{{{label},le="{bound}"}} {count}')
                lines.append(f'sleuth_request_duration_seconds_bucket{{{label},le="+Inf"}} {self.counts[endpoint]}')
                lines.append(f"sleuth_request_duration_seconds_sum{{{label}}} {self.sums[endpoint]:.6f}")
                lines.append(f"sleuth_request_duration_seconds_count{{{label}}} {self.counts[endpoint]}")
        for name, (description, read) in sorted(self.counters.items()):
            lines += [f"# HELP {name} {description}", f"# TYPE {name} counter", f"{name} {read()}"]
        return "\n".join(lines) + "\n"


class MeasureRequests:
    """ASGI middleware observing every HTTP request's status and latency into ``metrics``, labelled by the route
    template (:func:`route_template`), never the raw path: the labels are bounded by the routes."""

    def __init__(self, app, metrics: Metrics):
        self.app, self.metrics = app, metrics

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [500]

        async def observed(message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observed)
        finally:
            self.metrics.observe(route_template(scope), status[0], time.perf_counter() - started)


def route_template(scope) -> str:
    """The path template of the route a request went to, or would have gone to when a middleware answered it
    first (e.g. "/admin/documents" for a 401); "unmatched" for any other path, so that requests to made-up paths
    add no labels."""
    from starlette.routing import Match

    route = scope.get("route")
    if getattr(route, "path", None):
        return route.path
    partial = None
    for prefix, route in _routes(getattr(scope.get("app"), "routes", ()), ""):
        if not scope["path"].startswith(prefix):
            continue
        match, _ = route.matches({**scope, "path": scope["path"][len(prefix):]})
        if match == Match.FULL:
            return prefix + route.path
        if match == Match.PARTIAL and partial is None:
            partial = prefix + route.path
    return partial or "unmatched"


def _routes(routes, prefix: str):
    """``(prefix, route)`` of every route, included routers opened (FastAPI keeps them as one entry)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes, prefix + getattr(getattr(route, "include_context", None), "prefix", ""))
        elif getattr(route, "path", None) is not None:
            yield prefix, route


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
