"""The private-search client's fast local rerank: local BM25 picks the candidates the encoder reads, the rest follow;
the encoders' token limit is part of their spec."""

from __future__ import annotations

import numpy as np
import pytest

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.models.registry import encoder_from_spec, load_encoder
from sleuth.stages.run import Hit, Run
from sleuth.systems.private_search.rescore import TextRescore, bm25_order, hit_text


@pytest.fixture(scope="module")
def encoder():
    return load_encoder("minilm-onnx-128")


@pytest.fixture
def hits(scifact_rows) -> list[Hit]:
    """30 real SciFact abstracts as an engine would return them (engine order = file order)."""
    return [Hit(r["_id"], 30.0 - i, r["_id"], r["title"], r["text"]) for i, r in enumerate(scifact_rows[:30])]


def test_bm25_order_ranks_the_candidate_with_the_query_words_first(hits):
    target = hits[17]
    order = bm25_order(target.title, hits)
    assert sorted(order) == list(range(len(hits))) and order[0] == 17
    assert bm25_order("zzzz qqqq", hits) == list(range(len(hits)))  # no query word anywhere: engine order kept


def test_depth_encodes_only_the_top_candidates_and_keeps_the_rest_below(hits, encoder):
    query = Query("q", hits[17].title)
    rescore = TextRescore(encoder, depth=5)
    ranked = rescore.transform([query], Run({"q": hits}))["q"]
    assert len(ranked) == len(hits) and {h.id for h in ranked} == {h.id for h in hits}
    assert len(rescore._cache) == 5  # the other 25 were never encoded
    head, tail = ranked[:5], ranked[5:]
    assert ranked[0].id == hits[17].id
    assert min(h.score for h in head) > max(h.score for h in tail)
    order = bm25_order(query.text, hits)
    assert {h.id for h in head} == {hits[i].id for i in order[:5]}
    assert [h.id for h in tail] == [hits[i].id for i in order[5:]]
    vector = encoder.encode_queries([query.text])[0]
    expected = encoder.encode_passages([hit_text(h) for h in head]) @ vector
    np.testing.assert_allclose([h.score for h in head], expected, rtol=1e-4, atol=1e-5)


def test_without_depth_every_candidate_is_rescored(hits, encoder):
    query = Query("q", hits[3].title)
    ranked = TextRescore(encoder).transform([query], Run({"q": hits[:12]}))["q"]
    vector = encoder.encode_queries([query.text])[0]
    scores = encoder.encode_passages([hit_text(h) for h in hits[:12]]) @ vector
    assert [h.id for h in ranked] == [hits[i].id for i in np.argsort(-scores, kind="stable")]


def test_depth_must_be_positive(encoder):
    with pytest.raises(ConfigError, match="depth"):
        TextRescore(encoder, depth=0)


def test_the_token_limit_is_recorded_and_restored(scifact_rows):
    short = load_encoder("minilm-onnx-128")
    assert short.max_length == 128 and short.spec()["max_length"] == 128
    assert load_encoder("minilm-onnx").spec()["max_length"] == 256
    restored = encoder_from_spec(short.spec())
    assert restored.name == "minilm-onnx-128" and restored.max_length == 128
    long_text = " ".join(r["text"] for r in scifact_rows[:3])  # far beyond 256 tokens
    short_text = scifact_rows[0]["title"]  # well within 128
    full = load_encoder("minilm-onnx")
    np.testing.assert_allclose(short.encode_passages([short_text]), full.encode_passages([short_text]), atol=1e-6)
    assert float(short.encode_passages([long_text])[0] @ full.encode_passages([long_text])[0]) < 0.999
