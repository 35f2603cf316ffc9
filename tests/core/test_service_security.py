"""Service security over a real BM25 index of SciFact rows: the ``Host`` allow-list (against DNS rebinding) and the
admin key checked before anything of the request body is received."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi.testclient import TestClient

from sleuth.index.bm25 import BM25Index
from sleuth.service.app import create_app
from sleuth.service.hosts import loopback_hosts
from sleuth.stages.retrieve import BM25Retrieve

KEY = "security-key-5e2a"


@pytest.fixture(scope="module")
def stage(scifact_passages):
    return BM25Retrieve(BM25Index.build(scifact_passages[:40], show_progress=False), k=20)


def test_only_allowed_hosts_are_answered(stage):
    app = create_app({"small": stage}, allowed_hosts=loopback_hosts(8123), extensions=[])
    with TestClient(app, base_url="http://127.0.0.1:8123") as client:
        for host in ("127.0.0.1:8123", "localhost:8123", "[::1]:8123", "LOCALHOST:8123"):
            assert client.get("/search", params={"query": "cells"}, headers={"Host": host}).status_code == 200, host
        for host in ("rebound.example:8123", "127.0.0.1:8124", "localhost", "127.0.0.1.nip.io:8123", ""):
            response = client.get("/metrics", headers={"Host": host})
            assert response.status_code == 400, host
            assert "is not allowed" in response.json()["error"] and "--allowed-host" in response.json()["error"]
    anywhere = create_app({"small": stage}, allowed_hosts=["search.example", "*.bad"], extensions=[])
    with TestClient(anywhere, base_url="http://search.example") as client:
        assert client.get("/health").status_code == 200
        assert client.get("/health", headers={"Host": "search.example:9000"}).status_code == 200  # no port: any
        assert client.get("/health", headers={"Host": "other.example"}).status_code == 400
    with TestClient(create_app({"small": stage}, allowed_hosts=["*"], extensions=[])) as client:
        assert client.get("/health", headers={"Host": "whatever:1"}).status_code == 200


def call_asgi(app, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict, int]:
    """One HTTP request straight through ASGI: (status, JSON body, how many times the body was asked for)."""
    asked, sent = [0], []

    async def receive():
        asked[0] += 1
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
             "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    content = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], json.loads(content), asked[0]


def test_the_admin_key_is_checked_before_the_body_is_read(stage):
    body = json.dumps({"documents": [{"id": "x", "text": "y"}]}).encode()
    headers = {"content-type": "application/json", "content-length": str(len(body))}
    keyed = create_app({"small": stage}, api_key=KEY, extensions=[])
    for given, status in ((None, 401), ("wrong", 401), (KEY + "x", 401)):
        sent = {**headers, **({"X-API-Key": given} if given else {})}
        got, answer, asked = call_asgi(keyed, "/admin/documents", sent, body)
        assert (got, asked) == (status, 0) and "API key" in answer["error"]
    got, answer, asked = call_asgi(create_app({"small": stage}, extensions=[]), "/admin/reload", headers, b"")
    assert (got, asked) == (403, 0) and "disabled" in answer["error"]
    got, answer, asked = call_asgi(keyed, "/admin/documents", {**headers, "X-API-Key": KEY}, body)
    assert asked >= 1 and got == 409  # the right key: the body is read (no updatable index folders here)
    with TestClient(keyed) as client:  # a malformed body with a wrong key: 401, never a parse error
        response = client.post("/admin/documents", content=b"{not json", headers={"X-API-Key": "wrong",
                                                                                   "content-type": "application/json"})
        assert response.status_code == 401
        metrics = client.get("/metrics").text
    assert 'sleuth_requests_total{endpoint="/admin/documents",status="401"} 4' in metrics  # 3 through ASGI, 1 here
