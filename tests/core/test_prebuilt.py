"""Prebuilt passage vectors: looked up by content, used only for the same encoder spec, and the shipped SciFact file
matches what the encoder computes."""

from __future__ import annotations

import numpy as np
import pytest

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.index.docstore import DocStore
from sleuth.index.prebuilt import PREBUILT_DIR, PrebuiltVectors, encode_passages, prebuilt_for, write_prebuilt
from sleuth.models.registry import load_encoder
from sleuth.pipelines.workspace import CorpusSource


@pytest.fixture(scope="module")
def onnx():
    return load_encoder("minilm-onnx")


def test_known_passages_come_from_the_file_and_new_ones_are_encoded(onnx, scifact_passages, tmp_path):
    texts = DocStore.from_passages(scifact_passages[:12]).contents()
    fresh = onnx.encode_passages(texts)
    path = write_prebuilt(texts[:8], fresh[:8] * 3.0, onnx.spec(), tmp_path / "minilm-onnx.npz")  # scaled: visible
    table = PrebuiltVectors.load(path)
    mixed = encode_passages(onnx, texts[4:12], prebuilt=table)
    # rows 4-7 were looked up (float16, normalised again), rows 8-11 encoded
    assert np.allclose(mixed, fresh[4:12], atol=2e-3)
    assert prebuilt_for(onnx, tmp_path) is not None
    assert prebuilt_for(load_encoder("minilm-onnx-128"), tmp_path) is None  # other spec: never used


def test_shipped_scifact_vectors_cover_the_bundled_corpus_and_equal_the_encoder(onnx):
    assert (PREBUILT_DIR / "minilm-onnx.npz").is_file()
    table = prebuilt_for(onnx)
    assert table is not None
    passages = list(CorpusSource(bundled_dataset_dir(), "beir").passages())
    texts = DocStore.from_passages(passages).contents()
    found, vectors = table.lookup(texts)
    assert len(found) == len(texts) == 5183
    sample = np.array([0, 1234, 2500, 4000, 5182])
    cosine = np.sum(vectors[sample] * onnx.encode_passages([texts[i] for i in sample]), axis=1)
    assert np.all(cosine > 0.995), cosine



def test_encoding_says_when_the_vectors_ship_for_another_encoder():
    """`ws.pipeline("dense")` (torch MiniLM) over the bundled SciFact encoded for about 10 minutes, saying nothing of
    the minilm-onnx vectors that ship for it (seconds)."""
    from sleuth.index.prebuilt import shipped_for_another

    texts = DocStore.from_passages(list(CorpusSource(bundled_dataset_dir(), "beir").passages())).contents()
    torch_minilm = load_encoder("minilm")
    note = shipped_for_another(torch_minilm, texts)
    assert note is not None and "ship for encoder 'minilm-onnx'" in note and "5,183 passages" in note
    assert shipped_for_another(torch_minilm, ["a text no corpus holds"] * 10) is None
    assert shipped_for_another(load_encoder("minilm-onnx"), texts) is None  # its own: taken, nothing to say
