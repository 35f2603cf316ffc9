"""Pipelines built in the background (sleuth.service.lazy): a service answers with its ready pipelines at once,
refuses one being built with a 503, Retry-After and its status, serves it once built, reports a failed build as
one line, builds a pipeline a request named first, and `sleuth serve` says at startup which are ready."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import httpx
import pytest
from fastapi.testclient import TestClient

from sleuth.pipelines.config import load_pipeline
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.service.app import create_app
from sleuth.service.lazy import LazyStage
from tests.server_process import free_port, wait_for

#: a pipeline whose build fails: a dense stage with an ONNX encoder file that is not there
BROKEN = """name: broken
description: dense retrieval with an encoder file that is not there
stages:
  - dense: {k: 100, encoder: %s}
"""


@pytest.fixture
def workspace(tmp_path, scifact_rows, monkeypatch):
    """A workspace over 40 real SciFact abstracts, its indexes cached under a fresh SLEUTH_HOME."""
    monkeypatch.setenv("SLEUTH_HOME", str(tmp_path / "home"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:40]), encoding="utf-8")
    return Workspace(CorpusSource(corpus), show_progress=False)


def gated_build(ws: Workspace, gate: threading.Event, built: list[str], name: str = "bm25"):
    """A build of the real ``bm25`` pipeline that waits for ``gate`` first (so the test sees it while it builds)
    and records that it ran."""

    def build():
        assert gate.wait(30), "the test never opened the gate"
        built.append(name)
        return load_pipeline("bm25", ws)

    return build


def test_pipeline_being_built_answers_503_while_another_answers(workspace, scifact_rows):
    gate, built = threading.Event(), []
    lazy = LazyStage("later", gated_build(workspace, gate, built), "bm25, built in the background")
    app = create_app({"bm25": load_pipeline("bm25", workspace), "later": lazy}, extensions=[])
    title = scifact_rows[3]["title"]
    with TestClient(app) as client:
        wait_for(lambda: not lazy.pending)  # the background thread took it and waits at the gate
        listed = {p["name"]: p for p in client.get("/pipelines").json()["pipelines"]}
        assert listed["bm25"]["status"] == "ready" and listed["later"]["status"] == "building"
        assert listed["later"]["description"] == "bm25, built in the background"
        assert listed["bm25"]["depth"] == 1000 and listed["later"]["depth"] is None  # told once built
        refused = client.get("/search", params={"query": title, "pipeline": "later"})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "10"
        assert refused.json()["error"] == "pipeline 'later' is not ready: building; ask again shortly"
        answered = client.get("/search", params={"query": title, "pipeline": "bm25"})
        assert answered.status_code == 200 and answered.json()["hits"][0]["id"] == scifact_rows[3]["_id"]
        assert client.get("/ready").status_code == 200  # the default is ready; the other is still building
        gate.set()
        wait_for(lambda: lazy.ready)
        after = client.get("/search", params={"query": title, "pipeline": "later"})
        assert after.status_code == 200 and after.json()["hits"][0]["id"] == scifact_rows[3]["_id"]
        listed = client.get("/pipelines").json()["pipelines"]
        assert {p["status"] for p in listed} == {"ready"} and {p["depth"] for p in listed} == {1000}
    assert built == ["bm25"]


def test_a_requested_pipeline_is_built_next(workspace):
    gate, built = threading.Event(), []
    stages = {name: LazyStage(name, gated_build(workspace, gate, built, name)) for name in ("first", "second", "third")}
    app = create_app({"bm25": load_pipeline("bm25", workspace), **stages}, extensions=[])
    with TestClient(app) as client:
        wait_for(lambda: not stages["first"].pending)
        refused = client.get("/search", params={"query": "cells", "pipeline": "third"})
        assert refused.status_code == 503 and "building on first use" in refused.json()["error"]
        gate.set()
        app.state.service.served.builds.join(30)
    assert built == ["first", "third", "second"]


def test_failed_build_is_one_line_in_the_list_and_the_answer(workspace, tmp_path):
    config = tmp_path / "broken.yaml"
    config.write_text(BROKEN % (tmp_path / "missing" / "model.onnx"), encoding="utf-8")
    lazy = LazyStage("broken", lambda: load_pipeline(config, workspace))
    app = create_app({"bm25": load_pipeline("bm25", workspace), "broken": lazy}, extensions=[])
    with TestClient(app) as client:
        app.state.service.served.builds.join(60)
        status = {p["name"]: p["status"] for p in client.get("/pipelines").json()["pipelines"]}["broken"]
        assert status.startswith("failed: ") and "\n" not in status and "Traceback" not in status
        refused = client.get("/search", params={"query": "cells", "pipeline": "broken"})
        assert refused.status_code == 503 and "retry-after" not in refused.headers
        assert refused.json()["error"] == f"pipeline 'broken' is not available: {status}"
        assert client.get("/search", params={"query": "cells"}).status_code == 200


def test_reload_keeps_ready_pipelines_ready(workspace, scifact_rows):
    """An admin reload builds again, before the swap, the lazy pipelines that were ready."""
    def load():
        return {"bm25": load_pipeline("bm25", workspace), "later": LazyStage("later", lambda: load_pipeline("bm25",
                                                                                                           workspace))}

    app = create_app(load(), api_key="k", loader=load, extensions=[])
    with TestClient(app) as client:
        app.state.service.served.builds.join(30)
        assert client.post("/admin/reload", headers={"X-API-Key": "k"}).json() == {"reloaded": ["bm25", "later"]}
        assert client.get("/search", params={"query": scifact_rows[3]["title"], "pipeline": "later"}).status_code == 200


def test_serve_starts_with_the_first_pipeline_and_builds_the_others(tmp_path, scifact_rows):
    """`sleuth serve` prints which pipelines are ready and which build in the background; a failing build is a
    `failed: ...` status and a 503 with that line, never a traceback, while the ready one answers."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:40]), encoding="utf-8")
    config = tmp_path / "broken.yaml"
    config.write_text(BROKEN % (tmp_path / "missing" / "model.onnx"), encoding="utf-8")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", "--corpus", str(corpus), "--pipeline", "bm25", "--pipeline",
         str(config), "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={"PATH": "/usr/bin:/bin", "SLEUTH_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1",
             "PYTHONPATH": ":".join(sys.path)})
    try:
        def broken_status() -> str:
            try:
                listed = httpx.get(url + "/pipelines", timeout=2).json()["pipelines"]
            except httpx.HTTPError:
                return ""
            return {p["name"]: p["status"] for p in listed}["broken"]

        wait_for(lambda: process.poll() is not None or broken_status().startswith("failed: "), 120)
        assert process.poll() is None, process.stdout.read()
        refused = httpx.get(url + "/search", params={"query": "cells", "pipeline": "broken"})
        assert refused.status_code == 503 and refused.json()["error"].endswith(broken_status())
        assert httpx.get(url + "/search", params={"query": scifact_rows[3]["title"]}).status_code == 200
    finally:
        process.kill()
        output = process.communicate(timeout=30)[0]
    assert (f"serving on {url} (admin disabled): building in the background: bm25 (the default: /ready is 503 "
            "until it is built), broken") in output
    assert "pipeline 'bm25' ready (built in" in output
    assert "pipeline 'broken' failed: encoder file not found" in output and "Traceback" not in output


def serve_process(tmp_path, *args: str) -> tuple[subprocess.Popen, str]:
    """`sleuth serve ARGS` on a free loopback port, its output piped; the process and its URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "serve", *args, "--port", str(port)], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
        env={"PATH": "/usr/bin:/bin", "SLEUTH_HOME": str(tmp_path / "home"), "OMP_NUM_THREADS": "1",
             "PYTHONPATH": ":".join(sys.path)})
    return process, f"http://127.0.0.1:{port}"


def test_serve_answers_health_while_the_default_builds(tmp_path, scifact_rows):
    """Before: the default pipeline was built before uvicorn ran, so the listening port answered nothing (a
    liveness probe with a timeout restarted a server whose first build was long). Now /health answers at once,
    /ready is a 503 and a search a 503 naming the build until the default is built, then both are 200."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:120]), encoding="utf-8")
    # encodes 120 abstracts (about 15 s on one thread, with the model's load; /health answers within 2-3 s)
    process, url = serve_process(tmp_path, "--corpus", str(corpus), "--pipeline", "dense")
    try:
        def health() -> bool:
            assert process.poll() is None, process.stdout.read()
            try:
                return httpx.get(url + "/health", timeout=2).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(health, 120)
        ready = httpx.get(url + "/ready", timeout=5)
        assert ready.status_code == 503 and ready.json()["ready"] is False
        refused = httpx.get(url + "/search", params={"query": "cells"}, timeout=5)
        assert refused.status_code == 503 and "pipeline 'dense' is not ready: building" in refused.json()["error"]
        wait_for(lambda: httpx.get(url + "/ready", timeout=5).status_code == 200, 300)
        found = httpx.get(url + "/search", params={"query": scifact_rows[7]["title"], "k": 3}, timeout=30)
        assert found.status_code == 200 and found.json()["hits"][0]["doc_id"] == scifact_rows[7]["_id"]
    finally:
        process.kill()
        process.communicate(timeout=30)


def test_a_default_that_fails_to_build_stops_the_server(tmp_path, scifact_rows):
    """A service whose default pipeline cannot be built exits 2 with that one line (its build moved behind the
    server, the server stops instead of answering 503 forever)."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:40]), encoding="utf-8")
    config = tmp_path / "broken.yaml"
    config.write_text(BROKEN % (tmp_path / "missing" / "model.onnx"), encoding="utf-8")
    process, _ = serve_process(tmp_path, "--corpus", str(corpus), "--pipeline", str(config), "--pipeline", "bm25")
    output = process.communicate(timeout=120)[0]
    assert process.returncode == 2, output
    lines = output.strip().splitlines()
    assert lines[-1].startswith("error: the default pipeline 'broken' could not be built: encoder file not found")
    assert "Traceback" not in output


def test_status_shows_how_far_the_build_has_come(workspace):
    """While a build counts its work (sleuth.progress), the status reads its phase and percentage."""
    gate, counted = threading.Event(), threading.Event()

    def build():
        from sleuth.progress import progress

        with progress("encoding passages", total=8, unit="passages", enabled=False) as task:
            task.advance(2)
            counted.set()
            assert gate.wait(30)
        return load_pipeline("bm25", workspace)

    lazy = LazyStage("later", build)
    app = create_app({"bm25": load_pipeline("bm25", workspace), "later": lazy}, extensions=[])
    with TestClient(app) as client:
        assert counted.wait(30)
        listed = {p["name"]: p["status"] for p in client.get("/pipelines").json()["pipelines"]}
        assert listed["later"] == "building: encoding passages 25%"
        gate.set()
        app.state.service.served.builds.join(30)
        assert lazy.status == "ready"
