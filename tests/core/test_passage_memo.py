"""Workspace encoders remember passage vectors by text: the vectors equal fresh ones, a text is encoded once, the
memory bound holds, and two indexes over one corpus (two FAISS factories) encode each passage once."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sleuth.models.registry import load_encoder
from sleuth.pipelines.workspace import CorpusSource, Workspace


@pytest.fixture(scope="module")
def onnx_128():
    return load_encoder("minilm-onnx-128")


def test_remembered_vectors_equal_fresh_ones_and_each_text_is_encoded_once(onnx_128, scifact_passages):
    texts = [p.text for p in scifact_passages[:6]]
    fresh = onnx_128.encode_passages(texts)
    onnx_128.remember_passages()
    try:
        first = onnx_128.encode_passages(texts[:4] + texts[:2])  # a text twice in one batch
        assert len(onnx_128.passage_memo) == 4
        second = onnx_128.encode_passages(texts[2:])  # two remembered, two new
        assert len(onnx_128.passage_memo) == 6
        assert np.allclose(first, fresh[[0, 1, 2, 3, 0, 1]], atol=1e-5)
        assert np.allclose(second, fresh[2:], atol=1e-5)
        assert np.array_equal(second[:2], first[2:4])  # taken from the memo, not encoded again
        queries = onnx_128.encode_queries(texts[:1])  # the query side is never taken from the passage memo
        assert queries.shape == (1, onnx_128.dim)
    finally:
        onnx_128.remember_passages(0)
    assert onnx_128.passage_memo is None


def test_the_memo_keeps_no_more_than_its_bound(onnx_128, scifact_passages):
    texts = [p.text for p in scifact_passages[:5]]
    onnx_128.remember_passages(max_bytes=3 * onnx_128.dim * 4)  # room for three vectors
    try:
        vectors = onnx_128.encode_passages(texts)
        assert vectors.shape == (5, onnx_128.dim) and len(onnx_128.passage_memo) == 3
        assert onnx_128.passage_memo.used <= onnx_128.passage_memo.max_bytes
    finally:
        onnx_128.remember_passages(0)


def test_a_workspace_encodes_a_passage_once_for_several_indexes(scifact_rows, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:60]), encoding="utf-8")
    ws = Workspace(CorpusSource(corpus), home=tmp_path / "home", show_progress=False)
    flat = ws.dense("minilm-onnx-128", "Flat")
    memo = ws.encoder("minilm-onnx-128").passage_memo
    assert memo is not None and len(memo) == len(flat) == 60
    hnsw = ws.dense("minilm-onnx-128", "HNSW16")  # same passages, another FAISS index: nothing encoded again
    assert len(memo) == 60
    rows = np.arange(60)
    assert np.array_equal(flat.vectors(rows), hnsw.vectors(rows))  # the very same vectors, stored twice
    off = Workspace(CorpusSource(corpus), home=tmp_path / "other", show_progress=False, passage_memo_bytes=0)
    assert off.encoder("minilm-onnx-128").passage_memo is None
