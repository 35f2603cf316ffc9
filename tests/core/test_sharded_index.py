"""Sharded BM25 and dense indexes on the bundled SciFact: the same scores and rankings as the unsharded index,
global BM25 statistics, loading through pipelines and the CLI, one-line errors for missing or corrupt shards."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from sleuth.errors import ConfigError, IndexError_
from sleuth.index.bm25 import BM25Index, BM25Params
from sleuth.index.manifest import read_manifest
from sleuth.index.sharded import ShardedBM25Index, ShardedDenseIndex, load_bm25, load_dense
from sleuth.pipelines.config import load_pipeline
from sleuth.pipelines.workspace import Workspace
from sleuth.stages.retrieve import BM25Retrieve


@pytest.fixture(scope="module")
def whole(bundled_passages):
    return BM25Index.build(bundled_passages, show_progress=False)


@pytest.fixture(scope="module")
def sharded_dir(tmp_path_factory, bundled_passages):
    path = tmp_path_factory.mktemp("sharded") / "bm25"
    ShardedBM25Index.build(bundled_passages, path, shards=3, show_progress=False)
    return path


def assert_same_ranking(ids_a, scores_a, ids_b, scores_b, tol: float = 0.0) -> None:
    """Scores equal (within ``tol``) rank by rank; ids equal up to permutation inside groups of equal scores (chains
    of neighbours within ``tol``), except the last group, which the cut-off may split differently."""
    scores_a, scores_b = np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64)
    assert len(ids_a) == len(ids_b)
    np.testing.assert_allclose(scores_a, scores_b, rtol=0, atol=tol)
    start = 0
    for i in range(1, len(ids_a) + 1):
        if i == len(ids_a) or scores_a[i - 1] - scores_a[i] > tol:
            if i < len(ids_a):
                assert set(ids_a[start:i]) == set(ids_b[start:i]), (start, i, ids_a[start:i], ids_b[start:i])
            start = i


def test_sharded_bm25_ranks_like_the_unsharded_index(whole, sharded_dir, bundled_claims):
    sharded = ShardedBM25Index.load(sharded_dir)
    assert len(sharded) == len(whole) and len(sharded.shards) == 3
    texts = bundled_claims[:300]
    pos_a, sc_a = whole.search(texts, k=100)
    pos_b, sc_b = sharded.search(texts, k=100)
    compared = 0
    for i in range(len(texts)):
        ids_a = [whole.docstore.ids[p] for p in pos_a[i]]
        ids_b = [sharded.docstore.ids[p] for p in pos_b[i]]
        assert_same_ranking(ids_a, sc_a[i], ids_b, sc_b[i])
        compared += int(sc_a[i][0] > 0)
    assert compared > 250
    for text in texts[:20]:  # every document's score, not only the top 100
        np.testing.assert_allclose(sharded.score(text, range(len(sharded))), whole.score(text, range(len(whole))),
                                   rtol=0, atol=1e-5)


@pytest.mark.parametrize("method", ["robertson", "atire", "bm25l", "bm25+"])
def test_every_bm25s_method_uses_the_global_statistics(bundled_passages, bundled_claims, method):
    subset, params = bundled_passages[:1500], BM25Params(method=method)
    whole = BM25Index.build(subset, params=params, show_progress=False)
    sharded = ShardedBM25Index.build(subset, shards=3, params=params, show_progress=False)
    for text in bundled_claims[:25]:
        np.testing.assert_array_equal(sharded.score(text, range(len(sharded))), whole.score(text, range(len(whole))))
    pos_a, sc_a = whole.search(bundled_claims[:25], k=50)
    pos_b, sc_b = sharded.search(bundled_claims[:25], k=50)
    for i in range(25):
        assert_same_ranking([whole.docstore.ids[p] for p in pos_a[i]], sc_a[i],
                            [sharded.docstore.ids[p] for p in pos_b[i]], sc_b[i])


def test_a_shard_alone_would_score_differently(bundled_passages, whole, sharded_dir, bundled_claims):
    """The global statistics matter: a shard indexed on its own (its own idf and average length) disagrees."""
    sharded = ShardedBM25Index.load(sharded_dir)
    first = sharded.shards[0]
    alone = BM25Index.build(bundled_passages[:len(first)], show_progress=False)
    text = bundled_claims[0]
    in_shard = first.score(text, range(len(first)))
    assert np.array_equal(in_shard, whole.score(text, range(len(first))))
    assert not np.allclose(alone.score(text, range(len(first))), in_shard)


def test_layout_manifest_and_shards(sharded_dir, bundled_passages, whole):
    manifest = read_manifest(sharded_dir, kind="sharded-bm25")
    shards = manifest.params["shards"]
    assert [s["path"] for s in shards] == ["shard-000", "shard-001", "shard-002"]
    assert [s["offset"] for s in shards] == [0, shards[0]["count"], shards[0]["count"] + shards[1]["count"]]
    assert sum(s["count"] for s in shards) == manifest.count == len(bundled_passages)
    stats = manifest.params["global_stats"]
    assert stats["n_docs"] == len(bundled_passages)
    lengths = [len(ids) for ids in whole.analyzer.tokenize(whole.docstore.contents())]
    assert stats["avg_doc_len"] == pytest.approx(np.mean(lengths), rel=1e-12)
    for info in shards:  # every shard is an ordinary BM25 index directory
        shard = BM25Index.load(sharded_dir / info["path"])
        assert len(shard) == info["count"]
        assert shard.docstore.ids[0] == bundled_passages[info["offset"]].id
    assert isinstance(load_bm25(sharded_dir), ShardedBM25Index)


def test_pipelines_and_rescoring_work_on_a_sharded_index(tmp_path, sharded_dir, whole, bundled_claims):
    config = tmp_path / "sharded.yaml"
    config.write_text(f"name: sharded\nstages:\n  - bm25: {{index: '{sharded_dir}', k: 50}}\n", encoding="utf-8")
    from sleuth.corpus.model import Query

    queries = [Query(f"q{i}", text) for i, text in enumerate(bundled_claims[:40])]
    ours = load_pipeline(str(config), Workspace()).transform(queries)
    theirs = BM25Retrieve(whole, k=50).transform(queries)
    for q in queries:
        assert_same_ranking(theirs.ids(q.id), [h.score for h in theirs[q.id]], ours.ids(q.id),
                            [h.score for h in ours[q.id]])
    rescored = BM25Retrieve(load_bm25(sharded_dir)).transform(queries[:5], candidates=theirs)
    for q in queries[:5]:
        assert {h.id: h.score for h in rescored[q.id]} == pytest.approx({h.id: h.score for h in theirs[q.id]})


def test_missing_and_corrupt_shards_are_one_line_index_errors(tmp_path, bundled_passages):
    path = tmp_path / "bm25"
    ShardedBM25Index.build(bundled_passages[:300], path, shards=3, show_progress=False)
    data = path / "shard-001" / "bm25s" / "data.csc.index.npy"
    original = data.read_bytes()
    data.write_bytes(b"\0" * len(original))  # same size, garbage content
    with pytest.raises(IndexError_, match=r"shard 2 of 3 .*shard-001.* corrupt") as caught:
        ShardedBM25Index.load(path)
    assert "\n" not in str(caught.value)
    data.write_bytes(original[:-10])  # truncated
    with pytest.raises(IndexError_, match=r"shard-001") as caught:
        load_bm25(path)
    assert "\n" not in str(caught.value)
    shutil.rmtree(path / "shard-002")
    with pytest.raises(IndexError_, match=r"shard-002") as caught:
        load_bm25(path)
    assert "\n" not in str(caught.value)
    result = subprocess.run([sys.executable, "-m", "sleuth", "search", "cells", "--index", str(path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ") and "shard-00" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_more_shards_than_passages_is_a_config_error(bundled_passages):
    with pytest.raises(ConfigError, match="--shards 5"):
        ShardedBM25Index.build(bundled_passages[:4], shards=5, show_progress=False)


def test_cli_builds_searches_and_evaluates_a_sharded_index(sleuth, tmp_path):

    built = sleuth("index", "--kind", "bm25", "--shards", "2", "--out", tmp_path / "s2")
    assert built.returncode == 0, built.stderr
    assert "2 shards" in built.stderr
    assert read_manifest(tmp_path / "s2").kind == "sharded-bm25"
    sharded = json.loads(sleuth("search", "vitamin d and tuberculosis", "--index", tmp_path / "s2", "--json").stdout)
    plain = json.loads(sleuth("search", "vitamin d and tuberculosis", "--json").stdout)
    assert [(h["id"], h["score"]) for h in sharded["hits"]] == [(h["id"], h["score"]) for h in plain["hits"]]
    result = sleuth("eval", "--pipeline", "bm25", "--index", tmp_path / "s2", "--max-queries", "100", "--json")
    assert result.returncode == 0, result.stderr
    measures = {p["name"]: p["measures"] for p in json.loads(result.stdout)["pipelines"]}
    assert measures["s2"]["nDCG@10"] == pytest.approx(measures["bm25"]["nDCG@10"], abs=1e-9)
    assert measures["s2"]["nDCG@10"] > 0.5


@pytest.mark.slow
def test_sharded_flat_dense_ranks_like_the_unsharded_index(tmp_path, bundled_passages, bundled_claims):
    from sleuth.index.dense import DenseIndex
    from sleuth.models.registry import load_encoder
    from sleuth.stages.retrieve import DenseRetrieve

    encoder = load_encoder("minilm")
    subset = bundled_passages[:60]  # each encoded twice (whole, sharded): ~0.15 s per abstract here
    whole = DenseIndex.build(subset, encoder, show_progress=False)
    ShardedDenseIndex.build(subset, encoder, tmp_path / "dense", shards=3, show_progress=False)
    sharded = load_dense(tmp_path / "dense")
    assert isinstance(sharded, ShardedDenseIndex) and [len(s) for s in sharded.shards] == [20, 20, 20]
    assert sharded.dim == whole.dim and sharded.encoder_spec == whole.encoder_spec
    np.testing.assert_array_equal(sharded.vectors(range(60)), whole.vectors(range(60)))
    vectors = encoder.encode_queries(bundled_claims[:60])
    pos_a, sc_a = whole.search(vectors, k=30)  # half the passages: every shard gives some of each top 30
    pos_b, sc_b = sharded.search(vectors, k=30)
    for i in range(60):
        assert_same_ranking([whole.docstore.ids[p] for p in pos_a[i]], sc_a[i],
                            [sharded.docstore.ids[p] for p in pos_b[i]], sc_b[i], tol=1e-5)
    stage = DenseRetrieve(sharded, encoder=encoder, k=10)
    hits = stage.search(bundled_claims[0], k=10)
    assert [h.id for h in hits][:3] == [whole.docstore.ids[p] for p in pos_a[0][:3]]


def test_ray_paths_name_the_missing_extra(monkeypatch):
    from sleuth.errors import MissingExtraError
    from sleuth.scale.session import ray_session, require_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # as if ray were not installed: `import ray` raises ImportError
    with pytest.raises(MissingExtraError, match=r"sleuth\[ray\]"):
        require_ray()
    with pytest.raises(MissingExtraError, match=r"sleuth\[ray\]"):
        with ray_session("local"):
            pass
