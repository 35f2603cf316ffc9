"""What the service did with requests that were wrong in their form rather than their fields (session 28's probe):
each answered 200 from the wrong place, ignored part of the request, or failed with a 500. TestClient over a real
BM25 index of SciFact rows, served under two names that answer differently."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from sleuth.errors import SleuthError
from sleuth.index.bm25 import BM25Index
from sleuth.pipelines.index_stage import stage_for_index
from sleuth.service.app import create_app
from sleuth.systems.private_search.service import ObfuscateEndpoint
from tests.core.test_service_api import KEY, error, glove_obfuscator


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, scifact_passages):
    path = tmp_path_factory.mktemp("checks") / "scifact"
    BM25Index.build(scifact_passages[:60], path, show_progress=False)
    return path


@pytest.fixture(scope="module")
def client(index_dir):
    def load():
        stage = stage_for_index(index_dir, 50, "cpu")
        return {index_dir.name: stage, "top1": stage % 1}

    app = create_app(load(), api_key=KEY, loader=load, index_dirs={index_dir.name: index_dir},
                     extensions=[ObfuscateEndpoint(glove_obfuscator)])
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.mark.parametrize("body", [{"k": "²"}, {"k": "9" * 5000}, {"max_chars": "³"}, {"k": "٥"}, {"k": "５"}])
def test_counts_that_are_not_ascii_integers_are_400s(client, body):
    """Before: "²" passed ``str.isdigit`` and failed ``int()`` (a 500), as did 5,000 nines; "٥" and "５" were read
    as 5."""
    field = next(iter(body))
    assert error(client.post("/search", json={"query": "cells", **body}), 400).startswith(f"'{field}' must be an "
                                                                                          "integer")


@pytest.mark.parametrize("k", ["2.0", "1_0"])
def test_get_reads_k_as_post_does(client, k):
    """Before: GET took "2.0" and "1_0" (pydantic's reading) where POST refused them."""
    assert error(client.get("/search", params={"query": "cells", "k": k}), 400) == f"'k' must be an integer, got '{k}'"
    assert len(client.get("/search", params={"query": "cells", "k": " 3 "}).json()["hits"]) == 3


@pytest.mark.parametrize("choice", [{"pipeline": ""}, {"pipeline": False}, {"pipeline": 0}, {"pipeline": []},
                                    {"index": ""}])
def test_an_empty_or_false_pipeline_is_refused_not_defaulted(client, choice):
    """Before: ``"pipeline": ""`` (or false, 0, []) answered from the default pipeline."""
    field = next(iter(choice))
    assert error(client.post("/search", json={"query": "cells", **choice}), 400) == (f"'{field}' must be a non-empty "
                                                                                     "string")
    assert error(client.post("/search/batch", json={"queries": ["cells"], **choice}), 400)


def test_pipeline_and_index_together_are_refused(client, index_dir):
    """Before: ``{"pipeline": "top1", "index": <the other>}`` answered from top1 and ignored ``index``."""
    body = {"query": "cells", "pipeline": "top1", "index": index_dir.name}
    assert "not both" in error(client.post("/search", json=body), 400)
    assert "not both" in error(client.get("/search", params=body), 400)
    assert len(client.post("/search", json={"query": "cells", "index": "top1"}).json()["hits"]) == 1


def test_url_parameters_on_a_post_are_refused(client):
    """Before: ``POST /search?k=1&pipeline=top1`` answered 10 hits from the default pipeline."""
    message = error(client.post("/search?k=1&pipeline=top1", json={"query": "cells"}), 400)
    assert message == "POST /search takes its fields in the JSON body, not as URL parameters (got '?k=1&pipeline=top1')"
    assert error(client.post("/search/batch?k=1", json={"queries": ["cells"]}), 400)


def test_a_query_string_that_is_not_utf8_is_refused(client):
    """Before: ``GET /search?query=%FF%FEcancer`` searched for "\ufffd\ufffdcancer"."""
    assert "not valid UTF-8" in error(client.get("/search?query=%FF%FEcancer&k=1"), 400)
    assert client.get("/search?query=caf%C3%A9&k=1").json()["query"] == "café"


def test_a_body_that_is_not_sent_as_json_is_named_by_its_type(client):
    """Before: JSON sent as text/plain (or curl's default form type) was "the request body must be a JSON object"."""
    for kind in ("text/plain", "application/x-www-form-urlencoded"):
        response = client.post("/search", content=b'{"query": "cells"}', headers={"content-type": kind})
        assert error(response, 415) == f"send the body as JSON with 'Content-Type: application/json' (got '{kind}')"
    assert client.post("/search", content=b'{"query": "cells"}').status_code == 200  # no type: read as JSON


def test_head_options_and_the_allow_header(client):
    """Before: HEAD and OPTIONS were 405s and ``PUT /search`` said ``allow: GET`` (POST too is allowed)."""
    head, get = client.head("/health"), client.get("/health")
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == str(len(get.content))
    response = client.put("/search", json={"query": "cells"})
    assert error(response, 405) == "method PUT is not allowed on /search (allowed: GET, HEAD, POST)"
    assert response.headers["allow"] == "GET, HEAD, POST"
    options = client.options("/search")
    assert options.status_code == 204 and options.headers["allow"] == "GET, HEAD, POST"
    assert client.put("/health").headers["allow"] == "GET, HEAD"


def test_epsilon_too_large_for_a_float_and_an_empty_mechanism_are_400s(client):
    """Before: an integer epsilon of 401 digits was a 500 (OverflowError); ``"mechanism": ""`` or false used the
    default mechanism."""
    assert error(client.post("/obfuscate", json={"query": "cells", "epsilon": 10 ** 400}), 400).startswith(
        "'epsilon' must be a positive number")
    for mechanism in ("", False, 0):
        assert error(client.post("/obfuscate", json={"query": "cells", "mechanism": mechanism}), 400) == (
            "'mechanism' must be a non-empty string")


@pytest.mark.parametrize("document, message", [
    ({"id": "n1", "text": "a", "titel": "T"}, "document 1: unknown field(s) ['titel']"),
    ({"id": "n1", "_id": "n2", "text": "a"}, "document 1: 'id' and '_id' are both given"),
    ({"id": "n1", "text": "a", "title": 0}, "document 1: 'title' must be a string, got int"),
    ({"id": "n1", "text": "a", "doc_id": {"a": 1}}, "document 1: 'doc_id' must be a non-empty string or a number"),
    ({"id": "n1", "text": "a", "doc_id": False}, "document 1: 'doc_id' must be a non-empty string or a number"),
])
def test_malformed_documents_are_refused(client, index_dir, document, message):
    """Before: each was added (200): the misspelt title dropped, ``_id`` dropped, title 0 stored as "", a doc_id of
    ``{"a": 1}`` stored as the text "{'a': 1}", a doc_id of false replaced by the id."""
    response = client.post("/admin/documents", json={"documents": [document]}, headers={"X-API-Key": KEY})
    assert error(response, 400).startswith(message)


def test_admin_documents_without_documents_names_the_field(client):
    """Before: "'ids' must be a non-empty list", a field this endpoint refuses."""
    for body in ({"index": "scifact"}, {"documents": None}):
        response = client.post("/admin/documents", json=body, headers={"X-API-Key": KEY})
        assert error(response, 400) == "'documents' is required"


def test_too_many_documents_in_one_admin_update_is_a_400_naming_the_cap(client):
    """Before: a 413 (the status of a body too large) for 1,025 small documents, the cap undocumented."""
    documents = [{"id": f"bulk{i}", "text": "bulk document"} for i in range(1025)]
    response = client.post("/admin/documents", json={"documents": documents}, headers={"X-API-Key": KEY})
    assert error(response, 400).startswith("at most 1024 documents or ids per request (16 x --max-batch), got 1025")


def test_an_empty_allowed_host_is_refused_when_the_app_is_made(index_dir):
    """Before: ``sleuth serve --allowed-host ""`` started, then refused every request."""
    with pytest.raises(SleuthError, match=r"allowed host '' is empty"):
        create_app({"a": stage_for_index(index_dir, 10, "cpu")}, allowed_hosts=[""])


@pytest.mark.parametrize("raw, key", [('{"query": "cells", "k": 1, "k": 40}', "k"),
                                      ('{"queries": ["cells"], "fields": ["id"], "fields": ["id", "text"]}', "fields")])
def test_a_json_body_giving_a_key_twice_is_refused(client, raw, key):
    """Before: the JSON parser kept the last of the two (here 40 hits, where the first said 1) without a word."""
    path = "/search" if '"query"' in raw else "/search/batch"
    for headers in ({"content-type": "application/json"}, {}):  # a body without a content type is read as JSON
        answer = client.post(path, content=raw.encode(), headers=headers)
        assert error(answer, 400) == f"the JSON body gives the key '{key}' twice in one object; give it once"
    assert len(client.post("/search", content=b'{"query": "cells", "k": 2}').json()["hits"]) == 2
