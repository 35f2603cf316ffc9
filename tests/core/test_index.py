"""BM25 and dense indexes on real SciFact abstracts: build, save, load, search, rescoring, manifests, atomic builds."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError, IndexError_, InputError
from sleuth.index.bm25 import BM25Index, BM25Params
from sleuth.index.dense import DenseIndex
from sleuth.index.manifest import read_manifest
from sleuth.index.tokenize import Analyzer


def test_bm25_finds_a_document_by_its_title(tmp_path, scifact_passages):
    index = BM25Index.build(scifact_passages, tmp_path / "bm25", show_progress=False)
    loaded = BM25Index.load(tmp_path / "bm25")
    target = scifact_passages[17]
    positions, scores = loaded.search([target.title], k=5)
    assert loaded.docstore.ids[positions[0][0]] == target.id
    assert scores[0][0] > scores[0][1] > 0
    assert loaded.manifest.count == len(scifact_passages) == len(index)
    assert loaded.manifest.params["bm25"] == {"method": "lucene", "k1": 0.9, "b": 0.4, "delta": 0.5}


def test_bm25_scores_equal_raw_bm25s_on_the_same_tokens(scifact_passages):
    analyzer = Analyzer()
    index = BM25Index.build(scifact_passages, params=BM25Params(k1=1.2, b=0.75), analyzer=analyzer,
                            show_progress=False)
    raw = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    raw.index(analyzer.tokenize(index.docstore.contents()), show_progress=False)
    query = "cerebral white matter diffusion in newborns"
    ours = index.score(query, range(len(index)))
    theirs = raw.get_scores(analyzer.tokenize([query])[0])
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_bm25_rescoring_matches_retrieval(scifact_passages):
    index = BM25Index.build(scifact_passages, show_progress=False)
    positions, scores = index.search(["stem cells regeneration"], k=10)
    np.testing.assert_allclose(index.score("stem cells regeneration", positions[0]), scores[0], rtol=1e-6)


def test_bm25_search_of_no_queries_is_empty(scifact_passages):
    positions, scores = BM25Index.build(scifact_passages[:50]).search([], k=10)
    assert positions.shape == scores.shape == (0, 10)


def test_duplicate_ids_are_rejected(scifact_passages):
    with pytest.raises(ConfigError, match="duplicate passage id"):
        BM25Index.build(scifact_passages[:3] + scifact_passages[:1], show_progress=False)


def test_unknown_bm25_method_and_stemmer():
    with pytest.raises(ConfigError, match="unknown method"):
        BM25Params(method="bm99")
    with pytest.raises(ConfigError, match="unknown stemmer"):
        Analyzer(stemmer="klingon").tokenize(["text"])


# --- manifests ---------------------------------------------------------------------------------------------------

def test_missing_index_and_manifest(tmp_path):
    with pytest.raises(IndexError_, match="no index at"):
        BM25Index.load(tmp_path / "nowhere")
    (tmp_path / "half").mkdir()
    with pytest.raises(IndexError_, match="manifest missing; the directory is not a complete sleuth index$"):
        BM25Index.load(tmp_path / "half")


def test_a_folder_of_indexes_names_them(tmp_path, scifact_passages):
    """`sleuth index --kind all --out DIR` writes DIR/bm25 and DIR/dense: DIR itself is not an index."""
    BM25Index.build(scifact_passages[:20], tmp_path / "both" / "bm25", show_progress=False)
    with pytest.raises(IndexError_, match=r"it holds the indexes bm25 .*: pass .*both/bm25$"):
        BM25Index.load(tmp_path / "both")


@pytest.mark.parametrize("corruption,message", [
    (lambda text: text[: len(text) // 2], "corrupt manifest"),
    (lambda text: text.replace('"format_version": 2', '"format_version": 99'), "format version 99"),
    (lambda text: text.replace('"kind": "bm25"', '"kind": "dense"'), "corrupt manifest .its checksum"),
    (lambda text: text.replace('"count"', '"cuont"'), "unknown manifest field"),
])
def test_corrupt_manifest_gives_a_clear_error(tmp_path, scifact_passages, corruption, message):
    BM25Index.build(scifact_passages[:50], tmp_path / "ix", show_progress=False)
    manifest = tmp_path / "ix" / "manifest.json"
    manifest.write_text(corruption(manifest.read_text()))
    with pytest.raises(IndexError_, match=message) as info:
        BM25Index.load(tmp_path / "ix")
    assert "\n" not in str(info.value)


def test_truncated_index_file_is_detected(tmp_path, scifact_passages):
    BM25Index.build(scifact_passages[:50], tmp_path / "ix", show_progress=False)
    store = tmp_path / "ix" / "docstore.parquet"
    store.write_bytes(store.read_bytes()[:-10])
    with pytest.raises(IndexError_, match="differs from the manifest"):
        BM25Index.load(tmp_path / "ix")


def test_checksum_verification_detects_changed_bytes(tmp_path, scifact_passages):
    BM25Index.build(scifact_passages[:50], tmp_path / "ix", show_progress=False)
    store = tmp_path / "ix" / "docstore.parquet"
    data = bytearray(store.read_bytes())
    data[len(data) // 2] ^= 0xFF
    store.write_bytes(bytes(data))
    assert read_manifest(tmp_path / "ix", verify=False).count == 50  # sizes match: the quick check passes
    with pytest.raises(IndexError_, match="SHA-256 differs"):
        read_manifest(tmp_path / "ix")


def test_failed_rebuild_keeps_the_old_index(tmp_path, scifact_passages):
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:100], target, show_progress=False)
    before = BM25Index.load(target).search(["stem cells"], k=5)

    def corpus_with_bad_line():
        yield from scifact_passages[:200]
        raise InputError("malformed JSON", path="corpus.jsonl", line=201)

    with pytest.raises(InputError, match="corpus.jsonl:201"):
        BM25Index.build(corpus_with_bad_line(), target, show_progress=False)
    after = BM25Index.load(target)
    assert after.manifest.count == 100
    np.testing.assert_array_equal(after.search(["stem cells"], k=5)[0], before[0])
    assert [p.name for p in tmp_path.iterdir()] == ["ix"]  # no temporary directory left behind


def test_killed_rebuild_keeps_the_old_index(tmp_path, scifact_rows, killed_build):
    """kill -9 in the middle of a build: the previous index still loads and serves."""
    target = tmp_path / "ix"
    rows = [Passage(r["_id"], r["_id"], r["text"], (r["title"],)) for r in scifact_rows[:50]]
    BM25Index.build(rows, target, show_progress=False)
    killed_build(target)
    assert BM25Index.load(target).manifest.count == 50


# --- dense ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def onnx_encoder():
    from sleuth.models.registry import load_encoder

    return load_encoder("minilm-onnx")


def test_dense_flat_index_finds_documents_by_title(tmp_path, scifact_passages, onnx_encoder):
    passages = scifact_passages[:120]
    DenseIndex.build(passages, onnx_encoder, tmp_path / "dense", show_progress=False)
    index = DenseIndex.load(tmp_path / "dense")
    assert index.manifest.dimensions == 384 and index.manifest.encoder["name"] == "minilm-onnx"
    titles = [p.title for p in passages[:20]]
    positions, scores = index.search(onnx_encoder.encode_queries(titles), k=5)
    found = sum(passages[i].id in {index.docstore.ids[p] for p in row} for i, row in enumerate(positions))
    assert found >= 18
    assert np.all(np.diff(scores, axis=1) <= 1e-6)
    np.testing.assert_allclose(index.vectors(positions[0]) @ onnx_encoder.encode_queries(titles[:1])[0], scores[0],
                               rtol=1e-4)


def test_dense_hnsw_factory_and_bad_factory(scifact_passages, onnx_encoder):
    passages = scifact_passages[:60]
    flat = DenseIndex.build(passages, onnx_encoder, factory="Flat", show_progress=False)
    hnsw = DenseIndex.build(passages, onnx_encoder, factory="HNSW32", show_progress=False)
    queries = onnx_encoder.encode_queries([p.title for p in passages[:10]])
    assert (flat.search(queries, 1)[0] == hnsw.search(queries, 1)[0]).mean() >= 0.9
    with pytest.raises(ConfigError, match="invalid FAISS factory"):
        DenseIndex.build(passages, onnx_encoder, factory="NoSuchIndex", show_progress=False)


@pytest.mark.slow
def test_torch_and_onnx_backends_agree(scifact_passages, onnx_encoder):
    from sleuth.models.registry import load_encoder

    texts = [p.text for p in scifact_passages[:16]]
    torch_vectors = load_encoder("minilm").encode_passages(texts)
    onnx_vectors = onnx_encoder.encode_passages(texts)
    assert torch_vectors.shape == onnx_vectors.shape == (16, 384)
    assert float((torch_vectors * onnx_vectors).sum(axis=1).min()) > 0.99


@pytest.mark.parametrize("factory", ["PQ8", "IVF16,PQ8", "OPQ8,IVF16,PQ8"])
def test_pq_indexes_skip_polysemous_training(factory):
    import faiss

    from sleuth.index.dense import add_vectors, make_faiss_index

    index = make_faiss_index(factory, 32)
    try:
        pq_part = faiss.downcast_index(faiss.extract_index_ivf(index))
    except RuntimeError:
        pq_part = faiss.downcast_index(index)
    assert pq_part.do_polysemous_training is False
    vectors = np.random.default_rng(0).standard_normal((2000, 32)).astype(np.float32)
    add_vectors(index, vectors)  # trains (without the polysemous step) and adds
    scores, rows = index.search(vectors[:5], 1)
    assert index.ntotal == 2000 and rows.shape == (5, 1) and (rows >= 0).all()
