"""Operations endpoints: ``/health`` (liveness), ``/ready`` (readiness), ``/metrics`` (Prometheus text) and
``/pipelines`` (what is served), ``/extras`` (the declared hit extras and how the page shows them)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from sleuth.service.routes import service_of

router = APIRouter(tags=["operations"])


@router.get("/health")
def health(request: Request) -> dict[str, Any]:
    """Liveness: the process answers."""
    return {"status": "ok", "pipelines": list(service_of(request).pipelines)}


@router.get("/ready")
def ready(request: Request):
    """Readiness: the default pipeline is loaded (503 otherwise; the others may still build: see ``/pipelines``)."""
    service = service_of(request)
    body = {"ready": service.ready, "pipelines": list(service.pipelines), "loaded_at": service.served.current.loaded_at}
    return JSONResponse(status_code=200 if service.ready else 503, content=body)


@router.get("/metrics", response_class=PlainTextResponse)
def metrics(request: Request):
    """Request counts and latencies, Prometheus text format."""
    return PlainTextResponse(request.app.state.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8")


@router.get("/pipelines")
def pipelines(request: Request) -> dict[str, Any]:
    """The served pipelines: ``{"pipelines": [{name, description, status, depth}], "default", "max_k",
    "max_text_chars"}``; ``status`` is ``ready``, ``building on first use``, ``building: <phase> n%`` or
    ``failed: <one line>``; ``depth`` the most hits the pipeline gives a query (a larger ``k`` is a 400), or null
    where it cannot be told (not built yet, or a stage that declares no ``hits_bound``)."""
    return service_of(request).describe()


@router.get("/extras")
def extras() -> dict[str, Any]:
    """The declared hit extras: ``{"extras": [{name, display, description}], "hidden": [names the page does not show
    as chips]}`` (see :mod:`sleuth.pipelines.extras`)."""
    from sleuth.pipelines.extras import declared, page_hidden

    return {"extras": [{"name": k.name, "display": k.display, "description": k.description}
                       for k in declared().values()], "hidden": page_hidden()}
