"""The API docs without a CDN: ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) load their scripts and styles from
the copy packaged in fastapi-offline, served under ``/docs-assets`` (FastAPI's documented pattern of
``get_swagger_ui_html(swagger_js_url=..., swagger_css_url=...)``). A Content-Security-Policy keeps every request
on the server's own origin (ReDoc's footer would otherwise fetch its logo from cdn.redoc.ly)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

ASSETS = "/docs-assets"
CSP = ("default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; base-uri 'none'; "
       "form-action 'none'; frame-ancestors 'none'")


def assets_dir() -> Path:
    """The packaged Swagger UI and ReDoc files (swagger-ui-bundle.js, swagger-ui.css, redoc.standalone.js)."""
    return Path(str(resources.files("fastapi_offline") / "static"))


def add_docs(app) -> None:
    """Serve ``/docs``, its OAuth2 redirect page and ``/redoc`` on ``app`` (made with ``docs_url=None,
    redoc_url=None``) from the packaged assets."""
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
    from fastapi.staticfiles import StaticFiles

    app.mount(ASSETS, StaticFiles(directory=assets_dir()), name="docs-assets")
    favicon = f"{ASSETS}/favicon.png"

    def secured(response):
        response.headers["Content-Security-Policy"] = CSP
        return response

    @app.get("/docs", include_in_schema=False)
    def swagger_ui():
        return secured(get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} - Swagger UI", swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css", swagger_favicon_url=favicon,
            oauth2_redirect_url=app.swagger_ui_oauth2_redirect_url))

    @app.get(app.swagger_ui_oauth2_redirect_url, include_in_schema=False)
    def swagger_ui_redirect():
        return secured(get_swagger_ui_oauth2_redirect_html())

    @app.get("/redoc", include_in_schema=False)
    def redoc():
        return secured(get_redoc_html(openapi_url=app.openapi_url, title=f"{app.title} - ReDoc",
                                      redoc_js_url=f"{ASSETS}/redoc.standalone.js", redoc_favicon_url=favicon,
                                      with_google_fonts=False))
