"""`sleuth serve` wired end to end on 127.0.0.1: limits and the API key (from SLEUTH_API_KEY) reach the server,
admin reload re-reads the index folder, and metrics count what was served."""

from __future__ import annotations

import re

import httpx
import pytest

from sleuth.index.bm25 import BM25Index
from tests.server_process import sleuth_server

KEY = "serve-test-key"


@pytest.fixture(scope="module")
def served(tmp_path_factory, scifact_passages):
    """`sleuth serve` over a 200-passage index with small limits and an API key from the environment."""
    index = tmp_path_factory.mktemp("serve") / "scifact"
    BM25Index.build(scifact_passages[:200], index, show_progress=False)
    args = ["--index", str(index), "--max-k", "5", "--max-batch", "2", "--max-body-bytes", "2000",
            "--max-query-chars", "300"]
    with sleuth_server(args, env={"SLEUTH_API_KEY": KEY}, ready="/ready") as url:
        yield url, index


def test_limits_from_the_command_line(served, scifact_rows):
    url, _ = served
    title = scifact_rows[3]["title"]
    assert httpx.post(url + "/search", json={"query": title, "k": 5}).json()["hits"][0]["id"] == scifact_rows[3]["_id"]
    assert "between 1 and 5" in httpx.post(url + "/search", json={"query": title, "k": 6}).json()["error"]
    assert "limit is 2" in httpx.post(url + "/search/batch", json={"queries": ["a", "b", "c"]}).json()["error"]
    assert "300" in httpx.post(url + "/search", json={"query": "a" * 301}).json()["error"]
    big = httpx.post(url + "/search", json={"query": "a", "pad": "x" * 3000})
    assert big.status_code == 413 and "2000 bytes" in big.json()["error"]


def test_admin_reload_with_the_key_from_the_environment(served, scifact_passages, scifact_rows):
    url, index = served
    assert httpx.post(url + "/admin/reload").status_code == 401
    assert httpx.post(url + "/admin/reload", headers={"X-API-Key": "nope"}).status_code == 401
    late = scifact_rows[300]
    assert httpx.post(url + "/search", json={"query": late["title"], "k": 5}).json()["hits"][0]["id"] != late["_id"]
    BM25Index.build(scifact_passages, index, show_progress=False)
    reloaded = httpx.post(url + "/admin/reload", headers={"X-API-Key": KEY}, timeout=60)
    assert reloaded.status_code == 200 and reloaded.json()["reloaded"] == [index.name]
    assert httpx.post(url + "/search", json={"query": late["title"], "k": 5}).json()["hits"][0]["id"] == late["_id"]


def test_metrics_after_traffic(served):
    url, _ = served

    def count(text: str, endpoint: str, status: int) -> int:
        found = re.search(rf'^sleuth_requests_total{{endpoint="{endpoint}",status="{status}"}} (\d+)$', text, re.M)
        return int(found.group(1)) if found else 0

    before = httpx.get(url + "/metrics").text
    httpx.get(url + "/search", params={"query": "cancer", "k": 2})
    httpx.post(url + "/admin/reload", headers={"X-API-Key": "wrong"})
    text = httpx.get(url + "/metrics").text
    assert count(text, "/search", 200) == count(before, "/search", 200) + 1
    assert count(text, "/admin/reload", 401) == count(before, "/admin/reload", 401) + 1
    assert count(text, "/metrics", 200) >= 1
