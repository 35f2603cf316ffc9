"""An admin update of one served index folder reloads only the pipelines that read it, on real SciFact indexes:
the others keep their loaded pipeline (never rebuilt) and answer throughout, the answer names those reloaded, and
`sleuth serve --index A --index B` loads only the updated folder again (before: every served pipeline was loaded
again after each update)."""

from __future__ import annotations

import collections
import json
import threading

import httpx
import pytest
from fastapi.testclient import TestClient

from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex
from sleuth.pipelines.config import load_pipeline
from sleuth.pipelines.index_stage import stage_for_index
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.service.app import create_app
from sleuth.service.lazy import LazyStage
from sleuth.stages.retrieve import BM25Retrieve
from tests.server_process import sleuth_server, wait_for

KEY = "scope-key-7c2e"


def test_an_update_rebuilds_only_the_pipelines_that_read_its_folder(tmp_path, scifact_passages):
    from sleuth.models.registry import load_encoder

    lexical, dense = tmp_path / "lexical", tmp_path / "vectors"
    BM25Index.build(scifact_passages[:200], lexical, show_progress=False)
    DenseIndex.build(scifact_passages[:60], load_encoder("minilm-onnx"), dense, show_progress=False)
    builds: collections.Counter[str] = collections.Counter()
    gate = threading.Event()  # holds every build after the first, so the test sees the service while one runs

    def build(name, folder):
        def make():
            builds[name] += 1
            if builds[name] > 1:
                assert gate.wait(60), "the test never opened the gate"
            return stage_for_index(folder, 50, "cpu")
        return make

    def load():  # as `sleuth serve --index` reloads: each folder a pipeline built when needed
        return {"lexical": LazyStage("lexical", build("lexical", lexical)),
                "vectors": LazyStage("vectors", build("vectors", dense))}

    app = create_app(load(), api_key=KEY, loader=load, index_dirs={"lexical": lexical, "vectors": dense},
                     extensions=[])
    service, new, known = app.state.service, scifact_passages[250], scifact_passages[5]

    def top(client, index, query):
        response = client.post("/search", json={"query": query, "index": index, "k": 3})
        assert response.status_code == 200, response.text
        return response.json()["hits"][0]["id"]

    with TestClient(app) as client:
        assert service.served.builds.join(60)
        vectors = service.pipelines["vectors"]
        assert builds == {"lexical": 1, "vectors": 1} and top(client, "vectors", known.title) == known.id
        answers = []
        update = threading.Thread(target=lambda: answers.append(client.post(
            "/admin/documents", json={"documents": [{"id": new.id, "title": new.title, "text": new.text}],
                                      "index": "lexical"}, headers={"X-API-Key": KEY})))
        update.start()
        try:
            wait_for(lambda: builds["lexical"] == 2)  # the update is committed and 'lexical' is being rebuilt
            # meanwhile both answer: 'vectors' as it was, 'lexical' from the index it had loaded
            assert top(client, "vectors", known.title) == known.id
            assert top(client, "lexical", new.title) != new.id
            assert {p["status"] for p in client.get("/pipelines").json()["pipelines"]} == {"ready"}
        finally:
            gate.set()
            update.join(60)
        assert answers[0].status_code == 200, answers[0].text
        assert builds == {"lexical": 2, "vectors": 1}  # before: 'vectors' was built again too
        assert service.pipelines["vectors"] is vectors
        assert answers[0].json() == {"index": "lexical", "added": 1, "count": 201, "reloaded": ["lexical"]}
        assert top(client, "lexical", new.title) == new.id and top(client, "vectors", known.title) == known.id
        # a reload asked for by name of no folder (POST /admin/reload) still reloads every pipeline
        reloaded = client.post("/admin/reload", headers={"X-API-Key": KEY})
        assert reloaded.json() == {"reloaded": ["lexical", "vectors"]} and builds == {"lexical": 3, "vectors": 2}


def test_pipelines_that_read_other_indexes_are_kept(tmp_path, scifact_rows, scifact_passages):
    """Served beside an index folder, pipelines over a corpus (their workspace's cached indexes: hybrid) keep serving
    the objects they had; one that fuses the folder with the corpus is reloaded, and so is one whose folder cannot
    be told (a retriever over an index loaded by hand)."""
    corpus, mine, both = tmp_path / "corpus.jsonl", tmp_path / "mine", tmp_path / "both.yaml"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:40]), encoding="utf-8")
    BM25Index.build(scifact_passages[100:140], mine, show_progress=False)
    both.write_text(f"name: both\nstages:\n  - fuse:\n      branches:\n        - bm25: {{k: 100}}\n"
                    f"        - bm25: {{k: 100, index: {mine}}}\n", encoding="utf-8")
    ws = Workspace(CorpusSource(corpus), show_progress=False)

    def load():
        return {"hybrid": load_pipeline("hybrid", ws, {"dense": {"encoder": "minilm-onnx"}}),
                "both": load_pipeline(both, ws), "mine": stage_for_index(mine, 50, "cpu"),
                "by-hand": BM25Retrieve(BM25Index.load(mine), k=50)}

    app = create_app(load(), api_key=KEY, loader=load, index_dirs={"mine": mine}, extensions=[])
    new = scifact_passages[300]
    with TestClient(app) as client:
        before = dict(app.state.service.pipelines)
        added = client.post("/admin/documents", json={"documents": [{"id": new.id, "title": new.title,
                                                                     "text": new.text}]}, headers={"X-API-Key": KEY})
        assert added.status_code == 200, added.text
        after = app.state.service.pipelines
        assert after["hybrid"] is before["hybrid"]  # before: taken anew, as every other
        assert [name for name in after if after[name] is not before[name]] == ["both", "mine", "by-hand"]
        assert added.json()["reloaded"] == ["both", "mine", "by-hand"]
        for name in ("both", "mine", "by-hand"):
            hits = client.post("/search", json={"query": new.title, "pipeline": name, "k": 3}).json()["hits"]
            assert new.id in [hit["id"] for hit in hits[:2 if name == "both" else 1]], name  # both: one of 2 fused
        title = scifact_rows[7]["title"]
        assert client.post("/search", json={"query": title, "pipeline": "hybrid", "k": 3}).json()["hits"][0]["id"] \
            == scifact_rows[7]["_id"]


@pytest.mark.parametrize("method", ["POST", "DELETE"])
def test_serve_loads_only_the_updated_folder_again(tmp_path, scifact_passages, method):
    """`sleuth serve --index team --index scratch`: with scratch's folder damaged on disk after it was loaded, an
    update of team is served at once and scratch keeps answering (before: the reload loaded scratch again, failed,
    and answered 500 for the committed update); POST /admin/reload, which reloads all, names the damage."""
    team, scratch = tmp_path / "team", tmp_path / "scratch"
    BM25Index.build(scifact_passages[:40], team, show_progress=False)
    BM25Index.build(scifact_passages[40:80], scratch, show_progress=False)
    new, other = scifact_passages[100], scifact_passages[45]
    with sleuth_server(["--index", str(team), "--index", str(scratch)], env={"SLEUTH_API_KEY": KEY}) as url:
        def top(index, query):
            response = httpx.post(url + "/search", json={"query": query, "index": index, "k": 1}, timeout=30)
            assert response.status_code == 200, response.text
            return response.json()["hits"][0]["id"]

        (scratch / "manifest.json").write_text("{not json\n")
        if method == "POST":
            body, want = {"documents": [{"id": new.id, "title": new.title, "text": new.text}], "index": "team"}, \
                {"index": "team", "added": 1, "count": 41, "reloaded": ["team"]}
        else:
            body, want = {"ids": [scifact_passages[3].id], "index": "team"}, \
                {"index": "team", "deleted": 1, "count": 39, "reloaded": ["team"]}
        updated = httpx.request(method, url + "/admin/documents", json=body, headers={"X-API-Key": KEY}, timeout=60)
        assert updated.status_code == 200, updated.text
        assert updated.json() == want
        if method == "POST":
            assert top("team", new.title) == new.id
        else:
            assert top("team", scifact_passages[3].title) != scifact_passages[3].id
        assert top("scratch", other.title) == other.id
        listed = {p["name"]: p for p in httpx.get(url + "/pipelines").json()["pipelines"]}
        assert listed["team"]["status"] == "ready" and listed["team"]["description"] == \
            f"bm25 index team ({want['count']} passages)"
        everything = httpx.post(url + "/admin/reload", headers={"X-API-Key": KEY}, timeout=60)
        assert everything.status_code == 400 and "reloading pipeline 'scratch'" in everything.json()["error"]
        assert top("scratch", other.title) == other.id  # the current ones kept


def test_a_reload_after_sleuth_update_can_name_the_index(tmp_path, scifact_passages):
    """`sleuth update` of a served folder (another process) showed after POST /admin/reload, which reloaded every
    pipeline; `{"index": name}` reloads only those that read that folder."""
    from sleuth.index.updates import add_documents

    first, second = tmp_path / "first", tmp_path / "second"
    BM25Index.build(scifact_passages[:80], first, show_progress=False)
    BM25Index.build(scifact_passages[80:160], second, show_progress=False)

    def load():
        return {"first": stage_for_index(first, 50, "cpu"), "second": stage_for_index(second, 50, "cpu")}

    app = create_app(load(), api_key=KEY, loader=load, index_dirs={"first": first, "second": second}, extensions=[])
    new = scifact_passages[250]
    add_documents(first, [new])  # as `sleuth update --add` does, outside the service
    with TestClient(app) as client:
        before = dict(app.state.service.pipelines)
        header = {"X-API-Key": KEY}
        assert client.post("/admin/reload", json={"index": "first"}, headers=header).json() == {"reloaded": ["first"]}
        after = app.state.service.pipelines
        assert after["second"] is before["second"] and after["first"] is not before["first"]
        answer = client.post("/search", json={"query": new.title, "pipeline": "first", "k": 1}).json()
        assert answer["hits"] and answer["hits"][0]["id"] == new.id, answer
        for body, status, message in (({"index": "third"}, 400, "unknown index 'third' (updatable: first, second)"),
                                      ({"force": True}, 400, "force")):
            answer = client.post("/admin/reload", json=body, headers=header)
            assert answer.status_code == status and message in answer.json()["error"], answer.text
        assert client.post("/admin/reload", headers=header).json() == {"reloaded": ["first", "second"]}
