"""Admin endpoints behind the API key: ``POST /admin/reload`` and ``POST``/``DELETE /admin/documents``. The key is
checked by :class:`~sleuth.service.admin.AdminKeyGuard` before the body is read, and again here.

Document updates are not bound by the request time limit (``--timeout``): an update is committed (a new index
generation) and then answered, however long it takes, so that a 504 never reports a write that was in fact made
(a retry would then fail on duplicate ids). Updates run one at a time, in the request's own thread, so they take no
search slot either."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Header, Request

from sleuth.service.admin import HEADER, check_api_key
from sleuth.service.limits import RequestError, check_fields
from sleuth.service.routes import service_of

router = APIRouter(prefix="/admin", tags=["admin"])


def checked(request: Request, key: str | None):
    check_api_key(request.app.state.api_key, key)
    return service_of(request)


@router.post("/reload")
def reload(request: Request, body: Any = Body(None),
           x_api_key: str | None = Header(None, alias=HEADER)) -> dict[str, Any]:
    """Reload the pipelines from their configs (needs the API key): all of them, or with ``{"index": name}`` only
    those that read that served index folder (after `sleuth update` of it): ``{"reloaded": [names]}``."""
    service = checked(request, x_api_key)
    body = check_fields(body, {"index"}) if body is not None else {}
    if body.get("index") is None:
        return service.served.reload()
    return service.served.reload(service.documents.folder_of(body["index"]))


@router.post("/documents")
def add_documents(request: Request, body: Any = Body(...),
                  x_api_key: str | None = Header(None, alias=HEADER)) -> dict[str, Any]:
    """Add documents to a served index folder: ``{"documents": [{id, title?, text}], "index"?}`` (API key)."""
    service = checked(request, x_api_key)
    body = check_fields(body, {"documents", "index"})
    if body.get("documents") is None:  # before: "'ids' must be a non-empty list", a field this endpoint refuses
        raise RequestError("'documents' is required")
    return service.documents.update(body.get("index"), documents=body.get("documents"))


@router.delete("/documents")
def delete_documents(request: Request, body: Any = Body(...),
                     x_api_key: str | None = Header(None, alias=HEADER)) -> dict[str, Any]:
    """Delete documents of a served index folder by id: ``{"ids": [...], "index"?}`` (API key)."""
    service = checked(request, x_api_key)
    body = check_fields(body, {"ids", "index"})
    if body.get("ids") is None:
        raise RequestError("'ids' is required")
    return service.documents.update(body.get("index"), ids=body["ids"])
