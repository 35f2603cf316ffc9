"""Sharded hierarchical (DHR) indexes: a real hierarchical index of 8 Wikipedia articles (MiniLM) cut into shards
of whole documents ranks exactly like the unsharded index, in this process and on shard actors spread over a real
two-node Ray cluster (parallel DHR with every document score, both combinations and the gated length prior; DHR-P)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sleuth.corpus.mediawiki import read_mediawiki
from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.models.registry import load_encoder
from sleuth.systems.dhr.index import HierarchicalIndex
from sleuth.systems.dhr.sharded import ShardedHierarchicalIndex, load_hierarchical, shard_hierarchical
from sleuth.systems.dhr.stages import ParallelDHR, PassageRetrieve, dhr
from sleuth.systems.dhr.structure import split_documents

WIKI = "wikipedia/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
SMALL = ("Actrius", "Animalia (book)", "International Atomic Time", "Alain Connes", "Allan Dwan",
         "Agricultural science", "Alien", "Austin (disambiguation)")
QUESTIONS = [Query(f"q{i}", text) for i, text in enumerate([
    "Which film did Ventura Pons direct?", "how is atomic time measured", "silent film director from Canada",
    "science of farming and soil", "French mathematician noncommutative geometry", "alphabet book of animals",
    "Austin Texas", "extraterrestrial life", "leap seconds and UTC", "crop rotation and irrigation"])]
#: parallel DHR settings: every document score, both combinations, the length prior with and without its gate
SETTINGS = [dict(document="max", combine="add", length_prior=0.03, length_prior_below="median"),
            dict(document="summary", combine="gate", lam=0.5),
            dict(document="centroid", combine="add", length_prior=0.05)]


@pytest.fixture(scope="module")
def encoder():
    return load_encoder("minilm")


@pytest.fixture(scope="module")
def whole(data_dir, encoder, tmp_path_factory):
    docs = [d for d in itertools.islice(read_mediawiki(data_dir / WIKI), 30) if d.title in SMALL]
    path = tmp_path_factory.mktemp("dhr") / "whole"
    HierarchicalIndex.build(list(split_documents(docs)), encoder, encoder, path, show_progress=False)
    index = HierarchicalIndex.load(path)
    index.manifest_path = path  # type: ignore[attr-defined]
    return index


@pytest.fixture(scope="module")
def sharded_dir(whole, tmp_path_factory):
    return shard_hierarchical(whole, tmp_path_factory.mktemp("dhr") / "s3", shards=3)


def with_gate(whole: HierarchicalIndex, encoder, setting: dict) -> dict:
    """The setting, its gate at the median best passage score of the questions (so it adds the prior to some)."""
    if setting.get("length_prior_below") != "median":
        return setting
    best = whole.max_passage_scores(encoder.encode_queries([q.text for q in QUESTIONS])).max(axis=1)
    return {**setting, "length_prior_below": float(np.median(best))}


def hits(stage) -> tuple[list[list[tuple]], np.ndarray]:
    """Per question, the hits' (id, doc id, text, extras keys), and every hit's score and extras values."""
    run = stage.transform(QUESTIONS)
    ranked = [[(h.id, h.doc_id, h.text, sorted(h.extras)) for h in run[q.id]] for q in QUESTIONS]
    return ranked, np.array([[h.score, *h.extras.values()] for q in QUESTIONS for h in run[q.id]])


def assert_same_rankings(sharded, whole, encoder) -> None:
    """The same hits in the same order; scores equal up to float32 rounding: BLAS sums the products of a query and a
    passage in another order for another matrix shape, so a shard's score can differ from the whole's in the last
    bit (measured: up to 1.8e-7)."""
    for setting in SETTINGS:
        setting = with_gate(whole, encoder, setting)
        expected, expected_scores = hits(ParallelDHR(whole, encoder, encoder, k=20, **setting))
        ranked, scores = hits(ParallelDHR(sharded, encoder, encoder, k=20, **setting))
        assert ranked == expected, setting
        np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-6)
        if "length_prior_below" in setting:  # the gate adds the prior to some questions and not to others
            run = ParallelDHR(whole, encoder, encoder, k=20, **setting).transform(QUESTIONS)
            added = [run[q.id][0].extras["document_prior"] > 0 for q in QUESTIONS]
            assert any(added) and not all(added)
    expected, expected_scores = hits(PassageRetrieve(whole, encoder, k=15))
    ranked, scores = hits(PassageRetrieve(sharded, encoder, k=15))
    assert ranked == expected
    np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-6)


def test_shards_hold_whole_documents(whole, sharded_dir):
    listed = ShardedHierarchicalIndex.load(sharded_dir).manifest.params["shards"]
    assert [s["documents"] for s in listed] and sum(s["documents"] for s in listed) == whole.num_documents
    for info in listed:
        shard = HierarchicalIndex.load(sharded_dir / info["path"])
        first = info["document_offset"]
        assert shard.documents.ids == whole.documents.ids[first:first + info["documents"]]
        assert shard.passages.ids == whole.passages.ids[info["offset"]:info["offset"] + info["count"]]
        assert set(shard.passages.doc_ids) <= set(shard.documents.ids)  # a document's passages stay in its shard
    with pytest.raises(ConfigError, match="between 1 and the index's 8 documents"):
        shard_hierarchical(whole, sharded_dir.parent / "too-many", shards=9)


def test_sharded_in_process_ranks_like_the_whole_index(whole, sharded_dir, encoder):
    sharded = load_hierarchical(sharded_dir)
    assert isinstance(sharded, ShardedHierarchicalIndex) and len(sharded) == len(whole)
    assert_same_rankings(sharded, whole, encoder)
    with pytest.raises(ConfigError, match="serves mode parallel and dhr_p"):
        dhr(sharded, mode="serial", document_encoder=encoder, passage_encoder=encoder)


def test_cli_shards_and_the_pipeline_index_key_serves_them(sleuth, whole, encoder, tmp_path):
    """`sleuth dhr shard`, then the default `dhr` stage with `index:` on the sharded folder: the whole index's hits."""
    from sleuth.pipelines.config import load_pipeline
    from sleuth.pipelines.workspace import Workspace

    result = sleuth("dhr", "shard", whole.manifest_path, "--shards", "2", "--out", tmp_path / "s2")
    assert result.returncode == 0, result.stderr
    config = tmp_path / "p.yaml"
    question = QUESTIONS[0].text
    found = []
    for where in (whole.manifest_path, tmp_path / "s2"):
        config.write_text(f"stages:\n  - dhr: {{index: {where}}}\n")
        found.append([(h.id, round(h.score, 5)) for h in load_pipeline(config, Workspace()).search(question, 5)])
    assert found[0] == found[1] and found[0][0][0].startswith("Actrius")
    bad = sleuth("dhr", "shard", whole.manifest_path, "--shards", "50", "--out", tmp_path / "s50")
    assert bad.returncode == 2 and "between 1 and the index's 8 documents" in bad.stderr
    assert not (tmp_path / "s50").exists()


def test_shard_actors_on_two_nodes_rank_like_the_whole_index(two_nodes, whole, sharded_dir, encoder):
    from sleuth.index.sharded import set_remote_loader
    from sleuth.scale.shard_actors import ShardActorOptions, serve_shards_on_ray
    from sleuth.systems.dhr.sharded import RayShardedHierarchicalIndex

    two = shard_hierarchical(whole, sharded_dir.parent / "s2", shards=2)
    serve_shards_on_ray(ShardActorOptions(actor_cpus=0.5))
    try:
        remote = load_hierarchical(two)  # through the core's remote loader and this system's shards hook
    finally:
        set_remote_loader(None)
    assert isinstance(remote, RayShardedHierarchicalIndex)
    try:
        assert len(set(remote.actors.node_ids())) == 2  # SPREAD: one shard actor per node
        assert_same_rankings(remote, whole, encoder)
    finally:
        remote.close()
