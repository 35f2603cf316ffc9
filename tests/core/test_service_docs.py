"""The API docs of `sleuth serve` in headless Chromium: ``/docs`` (Swagger UI) and ``/redoc`` render the service's
operations from the packaged assets (fastapi-offline), with no request leaving the browser for another origin
(ReDoc's footer logo on cdn.redoc.ly is blocked by the page's Content-Security-Policy), as Chromium's network log
shows. External names are unresolvable for this browser, so a CDN asset could not have rendered the page anyway."""

from __future__ import annotations

import json

import pytest

from sleuth.index.bm25 import BM25Index
from tests.chromium import headless_chromium  # skips this module without Chromium or selenium
from tests.server_process import sleuth_server

# names are unresolvable for this browser, except the server on loopback
NO_DNS = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

WAIT_SECONDS = 120
NETWORK = ("http:", "https:", "ws:", "wss:")  # not the browser's own chrome:// pages


@pytest.fixture(scope="module")
def url(tmp_path_factory, scifact_passages):
    index = tmp_path_factory.mktemp("docs") / "scifact"
    BM25Index.build(scifact_passages[:30], index, show_progress=False)
    with sleuth_server(["--index", str(index)]) as served:
        yield served


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with headless_chromium(tmp_path_factory.mktemp("chrome"), NO_DNS,
                           {"goog:loggingPrefs": {"performance": "ALL"}}) as driver:
        yield driver


def only_local(driver, url: str) -> list[str]:
    """The URLs the browser got responses for since the last call (all on the server's origin); every request to
    another origin must have been blocked inside the browser by the Content-Security-Policy."""
    events = [json.loads(entry["message"])["message"] for entry in driver.get_log("performance")]
    sent = {e["params"]["requestId"]: e["params"]["request"]["url"] for e in events
            if e["method"] == "Network.requestWillBeSent" and e["params"]["request"]["url"].startswith(NETWORK)}
    answered = [e["params"]["response"]["url"] for e in events
                if e["method"] == "Network.responseReceived" and e["params"]["response"]["url"].startswith(NETWORK)]
    blocked = {e["params"]["requestId"] for e in events
               if e["method"] == "Network.loadingFailed" and e["params"].get("blockedReason") == "csp"}
    assert answered and all(name.startswith(url + "/") for name in answered), answered
    external = {rid: name for rid, name in sent.items() if not name.startswith(url + "/")}
    assert set(external) <= blocked, external
    return answered


def test_swagger_ui_renders_the_operations_offline(browser, url):
    browser.get(url + "/docs")
    WebDriverWait(browser, WAIT_SECONDS).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".opblock")) >= 8)
    paths = {element.get_attribute("data-path") or element.text
             for element in browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")}
    assert {"/search", "/search/batch", "/pipelines", "/admin/reload"} <= paths, paths
    requested = only_local(browser, url)
    assert any(name.endswith("/docs-assets/swagger-ui-bundle.js") for name in requested)
    assert any(name.endswith("/openapi.json") for name in requested)


def test_redoc_renders_the_operations_offline(browser, url):
    browser.get(url + "/redoc")
    WebDriverWait(browser, WAIT_SECONDS).until(
        lambda d: "/search/batch" in d.find_element(By.TAG_NAME, "body").get_attribute("textContent"))
    requested = only_local(browser, url)
    assert any(name.endswith("/docs-assets/redoc.standalone.js") for name in requested)
