"""The service under concurrent load and past its limits, with real BM25 and dense (int8 ONNX MiniLM) indexes of
SciFact rows: concurrent searches answer exactly what sequential ones do, a time-limited batch stops between
queries (so timed-out work does not pile up), a full executor answers 503, and responses are capped (passage text
cut by default with ``truncated``, ``max_chars`` and ``fields`` on request, a response size limit)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from fastapi.testclient import TestClient

from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex
from sleuth.models.registry import load_encoder
from sleuth.service.app import create_app
from sleuth.service.limits import Limits
from sleuth.stages.retrieve import BM25Retrieve, DenseRetrieve


@pytest.fixture(scope="module")
def encoder():
    return load_encoder("minilm-onnx")


@pytest.fixture(scope="module")
def stages(scifact_passages, encoder):
    bm25 = BM25Retrieve(BM25Index.build(scifact_passages[:300], show_progress=False), k=100)
    dense = DenseRetrieve(DenseIndex.build(scifact_passages[:120], encoder, show_progress=False), encoder, k=100)
    return {"bm25": bm25, "dense": dense}


class Slow:
    """A real BM25 stage whose every search takes ``seconds`` more, counting its searches."""

    name = "slow"

    def __init__(self, stage, seconds: float):
        self.stage, self.seconds, self.calls = stage, seconds, 0

    def search(self, query, k=10):
        self.calls += 1
        time.sleep(self.seconds)
        return self.stage.search(query, k=k)


def test_concurrent_searches_answer_what_sequential_ones_do(stages, scifact_rows):
    queries = [row["title"] for row in scifact_rows[:120]]
    with TestClient(create_app(stages, extensions=[]), raise_server_exceptions=False) as client:
        def ask(job):
            query, pipeline = job
            response = client.post("/search", json={"query": query, "pipeline": pipeline, "k": 5})
            return response.status_code, response.json()

        jobs = [(query, pipeline) for query in queries for pipeline in ("bm25", "dense")]
        sequential = [ask(job) for job in jobs]
        with ThreadPoolExecutor(32) as pool:
            concurrent = list(pool.map(ask, jobs))
    assert all(status == 200 for status, _ in sequential)
    assert concurrent == sequential
    assert sum(body["hits"][0]["id"] == row["_id"] for (_, body), row
               in zip(sequential[1::2], scifact_rows[:120])) >= 100  # dense finds most titles' own abstracts


def test_an_encoder_used_from_many_threads_gives_each_its_own_vectors(encoder, scifact_rows):
    """The query-batch memo is per thread: a thread never gets the vectors of another thread's query."""
    texts = [row["title"] for row in scifact_rows[:40]]
    expected = {text: encoder.encode_queries([text])[0] for text in texts}
    wrong = []

    def work(offset: int) -> None:
        for i in range(60):
            text = texts[(offset + i // 2) % len(texts)]  # each text twice in a row: the memo is used
            if not np.allclose(encoder.encode_queries([text])[0], expected[text], atol=1e-5):
                wrong.append(text)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong


def test_a_timed_out_batch_stops_between_queries(stages):
    """Before: a 504 batch went on with every query (16 timed-out batches kept the workers busy for seconds)."""
    slow = Slow(stages["bm25"], 0.6)
    app = create_app({"slow": slow, "bm25": stages["bm25"]}, limits=Limits(timeout_seconds=0.2, workers=8),
                     extensions=[])
    with TestClient(app) as client:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda _: client.post("/search/batch", json={"queries": ["cells"] * 6,
                                                                                 "pipeline": "slow"}), range(8)))
        assert [a.status_code for a in answers] == [504] * 8
        assert "0.2 s" in answers[0].json()["error"]
        started = time.monotonic()
        while client.post("/search", json={"query": "cells", "pipeline": "bm25"}).status_code != 200:
            time.sleep(0.05)
        assert time.monotonic() - started < 2.0  # light searches answer within one slow query, not six
        time.sleep(1.0)
    assert slow.calls == 8  # one query per batch, then the deadline stopped each


def test_a_full_executor_answers_503(stages):
    slow = Slow(stages["bm25"], 1.0)
    app = create_app({"slow": slow}, limits=Limits(workers=1, max_queued=1, timeout_seconds=10), extensions=[])
    with TestClient(app) as client:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: client.post("/search", json={"query": "cells"}), range(4)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200, 200, 503, 503], [a.text for a in answers]
    busy = next(a for a in answers if a.status_code == 503)
    assert set(busy.json()) == {"error"} and "busy" in busy.json()["error"]
    assert busy.headers["retry-after"] == "1"  # before: none, where a pipeline being built said when to ask again


def test_a_default_text_cut_above_what_a_request_may_ask_for_is_refused():
    """Before: `sleuth serve --text-chars 5000 --max-text-chars 100` started, cutting texts by default at a length
    no request could ask for."""
    from sleuth.service.limits import LimitError

    with pytest.raises(LimitError, match=r"'text_chars' must be at most the largest max_chars a request may ask for "
                                         r"\(100\), got 5,000"):
        Limits(text_chars=5000, max_text_chars=100)
    assert Limits(text_chars=100, max_text_chars=100).text_chars == 100


@pytest.fixture(scope="module")
def long_client(scifact_passages):
    """BM25 over 50 abstracts plus one document made of 60 abstracts' texts (about 90,000 characters)."""
    long_text = " ".join(p.text for p in scifact_passages[100:160])
    passages = [*scifact_passages[:50], Passage("long", "long", long_text, ("A very long document",))]
    stage = BM25Retrieve(BM25Index.build(passages, show_progress=False), k=100)
    limits = Limits(max_text_chars=200_000, max_response_bytes=120_000)
    with TestClient(create_app({"small": stage}, limits=limits, extensions=[])) as client:
        yield client, long_text


def test_passage_text_is_cut_unless_more_is_asked_for(long_client, scifact_passages):
    client, long_text = long_client
    query = " ".join(scifact_passages[120].text.split()[:12])
    first = client.post("/search", json={"query": query, "k": 3}).json()["hits"][0]
    assert first["id"] == "long" and first["truncated"] is True and first["text"] == long_text[:1000]
    short = [hit for hit in client.post("/search", json={"query": query, "k": 50}).json()["hits"]
             if len(hit["text"]) < 1000]
    assert short and all("truncated" not in hit for hit in short)
    full = client.post("/search", json={"query": query, "k": 1, "max_chars": 200_000}).json()["hits"][0]
    assert full["text"] == long_text and "truncated" not in full
    assert client.get("/search", params={"query": query, "k": 1, "max_chars": 50}).json()["hits"][0]["text"] == \
        long_text[:50]
    for bad in (0, 200_001, "many", True):
        response = client.post("/search", json={"query": query, "max_chars": bad})
        assert response.status_code == 400 and "max_chars" in response.json()["error"]


def test_fields_choose_what_each_hit_holds(long_client):
    client, _ = long_client
    hits = client.post("/search", json={"query": "cells", "k": 4, "fields": ["score", "id"]}).json()["hits"]
    assert len(hits) == 4 and all(set(hit) == {"id", "score"} for hit in hits)
    batch = client.post("/search/batch", json={"queries": ["cells"], "k": 4, "fields": ["id", "score"]}).json()
    assert batch["results"][0]["hits"] == hits
    assert client.get("/search", params={"query": "cells", "k": 4, "fields": "id,score"}).json()["hits"] == hits
    for bad in (["id", "body"], [], "", [1]):
        response = client.post("/search", json={"query": "cells", "fields": bad})
        assert response.status_code == 400 and "field" in response.json()["error"]


def test_responses_above_the_size_limit_are_refused(long_client, scifact_passages):
    client, _ = long_client
    query = " ".join(scifact_passages[120].text.split()[:12])
    big = client.post("/search", json={"query": query, "k": 1, "max_chars": 200_000})
    assert big.status_code == 200 and len(big.content) < 120_000
    refused = client.post("/search/batch", json={"queries": [query] * 4, "k": 50, "max_chars": 200_000})
    assert refused.status_code == 400 and "larger than 120,000 bytes" in refused.json()["error"]
    small = client.post("/search/batch", json={"queries": [query] * 4, "k": 50, "fields": ["id", "score"]})
    assert small.status_code == 200 and len(small.content) < 20_000
