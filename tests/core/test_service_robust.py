"""The service where its surroundings fail or misbehave, with a real BM25 index of SciFact rows: a full disk under
the query log (searches still answer; the log holds only whole lines), bounded metrics labels, admin writes past
the time limit, cancelled timed-out searches, and slow clients dropped."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest
from fastapi.testclient import TestClient

from sleuth.index.bm25 import BM25Index
from sleuth.service.app import create_app
from sleuth.service.limits import Limits
from sleuth.stages.retrieve import BM25Retrieve


@pytest.fixture(scope="module")
def bm25(scifact_passages):
    return BM25Retrieve(BM25Index.build(scifact_passages[:200], show_progress=False), k=100)


@pytest.fixture
def tiny_disk(tmp_path):
    """A 16 KiB tmpfs mounted for the test (needs root; skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_under_the_query_log_fails_no_search(bm25, scifact_rows, tiny_disk, capfd):
    """Before: once the disk was full every search answered 500 and the log ended in a torn line."""
    log = tiny_disk / "queries.jsonl"
    queries = [row["title"] for row in scifact_rows[:120]]  # about 25 KB of log lines for 16 KiB
    with TestClient(create_app({"bm25": bm25}, query_log=log, extensions=[]), raise_server_exceptions=False) as client:
        statuses = [client.post("/search", json={"query": query, "k": 3}).status_code for query in queries]
        metrics = client.get("/metrics").text
    assert statuses == [200] * len(queries)
    text = log.read_bytes().decode("utf-8")
    assert text.endswith("\n")
    logged = [json.loads(line) for line in text.splitlines()]  # every line whole JSON
    assert 20 < len(logged) < len(queries)
    assert [entry["query"] for entry in logged] == queries[:len(logged)]
    failures = len(queries) - len(logged)
    assert f"sleuth_query_log_failures_total {failures}" in metrics
    warned = capfd.readouterr().err
    assert warned.count("warning: query log") == 1 and f"{log}: cannot write to it (No space left on device" in warned


def test_rejected_requests_to_made_up_paths_add_no_metrics_labels(bm25):
    """Before: every rejected ``POST /admin/x<i>`` added its own label (3,000 grew /metrics from 12 KB to 3.8 MB)."""
    with TestClient(create_app({"bm25": bm25}, api_key="k3y", extensions=[])) as client:
        for i in range(200):
            assert client.post(f"/admin/x{i}", json={}).status_code == 401
            assert client.post(f"/admin/x{i}", json={}, headers={"X-API-Key": "k3y"}).status_code == 404
            assert client.get(f"/made/up/{i}").status_code == 404
        assert client.post("/admin/documents", json={}).status_code == 401
        metrics = client.get("/metrics").text
    labels = set(re.findall(r'endpoint="([^"]*)"', metrics))
    assert labels == {"unmatched", "/admin/documents"}, labels
    assert 'sleuth_requests_total{endpoint="unmatched",status="401"} 200' in metrics
    assert 'sleuth_requests_total{endpoint="unmatched",status="404"} 400' in metrics
    assert len(metrics) < 10_000


def test_quest_predict_is_cut_and_bounded_as_search_is(scifact_passages):
    """Before: /quest/predict answered every member's whole text, however large the response (31 MB seen)."""
    from sleuth.corpus.model import Passage
    from sleuth.systems.quest.service import QuestEndpoint

    long_text = " ".join(p.text for p in scifact_passages[100:160])  # about 90,000 characters
    passages = [*scifact_passages[:50], Passage("long", "long", long_text, ("A very long document",))]
    stage = BM25Retrieve(BM25Index.build(passages, show_progress=False), k=100)
    limits = Limits(max_text_chars=200_000, max_response_bytes=120_000)
    query = " ".join(scifact_passages[120].text.split()[:12])
    with TestClient(create_app({"quest-bm25": stage}, limits=limits, extensions=[QuestEndpoint()])) as client:
        cut = client.post("/quest/predict", json={"query": query})
        assert cut.status_code == 200
        first = cut.json()["members"][0]
        assert first["id"] == "long" and first["truncated"] is True and first["text"] == long_text[:1000]
        assert client.post("/quest/predict", json={"query": query, "max_chars": 50}).json()["members"][0]["text"] \
            == long_text[:50]
        refused = client.post("/quest/predict", json={"query": query, "max_chars": 200_000})
        assert refused.status_code == 400 and "larger than 120,000 bytes" in refused.json()["error"]
        assert client.post("/quest/predict", json={"query": query, "max_chars": 0}).status_code == 400


def test_admin_updates_past_the_time_limit_are_answered_as_committed(tmp_path, scifact_passages):
    """Before: an update that outlasted ``--timeout`` was committed but answered 504, and its retry then failed on
    duplicate ids."""
    from sleuth.pipelines.index_stage import stage_for_index

    folder = tmp_path / "scifact"
    BM25Index.build(scifact_passages[:100], folder, show_progress=False)

    def load():
        return {"scifact": stage_for_index(folder, 100, "cpu")}

    app = create_app(load(), limits=Limits(timeout_seconds=0.001), api_key="k3y", loader=load,
                     index_dirs={"scifact": folder}, extensions=[])
    added = [{"id": f"new{i}", "title": "Zebrafish fin regrowth", "text": f"zebrafish fin regrowth study {i}"}
             for i in range(5)]
    with TestClient(app) as client:
        response = client.post("/admin/documents", json={"documents": added}, headers={"X-API-Key": "k3y"})
        assert response.status_code == 200, response.text
        assert response.json() == {"index": "scifact", "added": 5, "count": 105, "reloaded": ["scifact"]}
        retry = client.post("/admin/documents", json={"documents": added}, headers={"X-API-Key": "k3y"})
        assert retry.status_code == 400 and "new0" in retry.json()["error"]  # the first was committed
        deleted = client.request("DELETE", "/admin/documents", json={"ids": ["new0"]}, headers={"X-API-Key": "k3y"})
        assert deleted.status_code == 200 and deleted.json()["count"] == 104
        # an id given twice is deleted once, and answered so (before: "deleted": 2 with the count down by one)
        twice = client.request("DELETE", "/admin/documents", json={"ids": ["new1", "new1"]},
                               headers={"X-API-Key": "k3y"})
        assert twice.json() == {"index": "scifact", "deleted": 1, "count": 103, "reloaded": ["scifact"]}


def test_a_client_sending_its_headers_byte_by_byte_is_dropped(bm25):
    """Before: uvicorn reset its only timer on each byte, so a slowloris client held its connection forever."""
    import socket
    import threading

    import httpx
    import uvicorn

    from sleuth.service.server import server_config
    from tests.server_process import free_port

    port = free_port()
    server = uvicorn.Server(server_config(create_app({"bm25": bm25}, extensions=[]), "127.0.0.1", port,
                                          read_timeout=1.0))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.05)
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
        head = f"GET /health HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Slow: {'a' * 200}\r\n".encode()
        started, closed = time.monotonic(), None
        with socket.create_connection(("127.0.0.1", port)) as sock:
            for byte in head:  # 0.02 s a byte: the head would take 5 s, never finished
                try:
                    sock.sendall(bytes([byte]))
                    sock.settimeout(0.02)
                    if sock.recv(1) == b"":
                        closed = time.monotonic() - started
                        break
                except TimeoutError:
                    continue
                except (ConnectionResetError, BrokenPipeError):
                    closed = time.monotonic() - started
                    break
        assert closed is not None and 0.9 < closed < 2.0, closed
        assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200  # others are still served
    finally:
        server.should_exit = True
        thread.join(timeout=10)


class Hops:
    """A real BM25 stage searched in ``hops`` rounds of ``seconds`` each, checking for cancellation between
    rounds as Chain-of-Skills does between hops and model batches; counts the rounds run."""

    name = "hops"

    def __init__(self, stage, hops: int, seconds: float):
        self.stage, self.hops, self.seconds, self.rounds = stage, hops, seconds, 0

    def search(self, query, k=10):
        from sleuth.stages.cancel import check_cancelled

        for _ in range(self.hops):
            check_cancelled()
            self.rounds += 1
            time.sleep(self.seconds)
        return self.stage.search(query, k=k)


def test_a_timed_out_search_is_cancelled_and_does_not_block_the_next(bm25):
    """Before: a timed-out multi-hop search ran on to its end, holding the worker, so the next request timed out
    too."""
    hops = Hops(bm25, hops=12, seconds=0.1)
    app = create_app({"hops": hops, "bm25": bm25}, limits=Limits(timeout_seconds=0.5, workers=1), extensions=[])
    with TestClient(app) as client:
        assert client.post("/search", json={"query": "cells", "pipeline": "hops"}).status_code == 504
        after = client.post("/search", json={"query": "cells", "pipeline": "bm25"})
        assert after.status_code == 200, after.text
        time.sleep(0.3)
    assert hops.rounds <= 7  # stopped at the first check past the time limit, not after all 12 rounds


def test_the_query_log_says_what_each_request_was_answered(bm25, scifact_rows, tmp_path):
    """Before: a query was logged with its hits as soon as it was ranked, so a batch answered 504 or a search
    refused as too large was logged as served, and a ``HEAD /search`` (an uptime check) as a user's query. Now each
    entry has the status its request got: 200 with its hits, else the status and error, and HEAD is not logged."""
    log = tmp_path / "queries.jsonl"
    hops = Hops(bm25, hops=12, seconds=0.1)
    title = scifact_rows[3]["title"]
    app = create_app({"bm25": bm25, "hops": hops}, query_log=log, extensions=[],
                     limits=Limits(timeout_seconds=0.5, max_response_bytes=20_000))
    with TestClient(app) as client:
        assert client.get("/search", params={"query": title, "k": 3}).status_code == 200
        assert client.head("/search", params={"query": "an uptime check", "k": 3}).status_code == 200
        timed_out = client.post("/search/batch", json={"queries": ["cells", "blood"], "pipeline": "hops"})
        assert timed_out.status_code == 504
        too_large = client.post("/search", json={"query": title, "k": 60})
        assert too_large.status_code == 400
    entries = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(entry["query"], entry["status"]) for entry in entries] == [
        (title, 200), ("cells", 504), ("blood", 504), (title, 400)]
    assert entries[0]["hits"] == 3 and entries[0]["pipeline"] == "bm25"
    assert all("hits" not in entry for entry in entries[1:])
    assert entries[1]["error"] == "the request took longer than 0.5 s" and "larger than 20,000 bytes" in entries[3]["error"]


def test_partial_where_no_shard_actor_is_searched_is_a_400(scifact_passages, tmp_path):
    """Before: ``partial=true`` on a sharded folder searched in-process (or any pipeline) answered
    ``"shards": {"complete": true, "answered": [], "down": []}``, read as "no shard answered" where both had."""
    from sleuth.index.sharded import ShardedBM25Index
    from sleuth.pipelines.index_stage import stage_for_index

    ShardedBM25Index.build(scifact_passages[:60], tmp_path / "two", shards=2, show_progress=False)
    app = create_app({"two": stage_for_index(tmp_path / "two", 100, "cpu")}, extensions=[])
    with TestClient(app) as client:
        assert client.get("/search", params={"query": "cells", "k": 3}).status_code == 200
        for refused in (client.get("/search", params={"query": "cells", "partial": "true"}),
                        client.post("/search/batch", json={"queries": ["cells"], "partial": True})):
            assert refused.status_code == 400
            assert refused.json()["error"].startswith("'partial' applies to sharded indexes served from shard actors")
