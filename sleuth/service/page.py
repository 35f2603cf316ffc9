"""The service's web page: ``/`` serves ``static/index.html`` and ``/static/*`` its CSS, scripts and icon.

Plain HTML, CSS and JavaScript shipped inside the package (no build step, nothing fetched from the network). The
page calls ``/pipelines`` and ``/search`` with ``extras: true``, highlights the query's words in each passage, draws
Chain-of-Skills evidence paths hop by hop and lists the obfuscated queries a private search sent. A strict
Content-Security-Policy allows only the page's own files and requests to its own origin.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

STATIC = Path(str(resources.files("sleuth.service") / "static"))
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def page_router():
    """A router serving the page at ``/``."""
    from fastapi import APIRouter
    from fastapi.responses import FileResponse

    router = APIRouter()

    @router.get("/", include_in_schema=False)
    def page() -> FileResponse:
        """The search page."""
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8", headers=SECURITY_HEADERS)

    return router


def add_page(app) -> None:
    """Serve the page at ``/`` and its files under ``/static`` on the FastAPI ``app``."""
    from fastapi.staticfiles import StaticFiles

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(page_router())
