"""Shard actors on a real two-node Ray cluster started here (``ray.cluster_utils.Cluster``: two raylets of 1 CPU
and a 100 MB object store each): shards pinned to different nodes rank exactly like the unsharded index, a shard
actor killed while queries are in flight is restarted and the answer is the same, and a shard that stays down is
an error naming it (HTTP 503 from the service)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from sleuth.errors import ShardUnavailableError
from sleuth.index.bm25 import BM25Index
from sleuth.index.sharded import ShardedBM25Index
from sleuth.pipelines.workspace import CorpusSource

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'sleuth[ray]')")

@pytest.fixture(scope="module")
def passages(bundled_passages):
    return bundled_passages[:600]


@pytest.fixture(scope="module")
def claims(bundled_claims) -> list[str]:
    return bundled_claims[:200]


@pytest.fixture(scope="module")
def sharded_dir(tmp_path_factory, passages):
    path = tmp_path_factory.mktemp("shards") / "bm25"
    ShardedBM25Index.build(passages, path, shards=2, show_progress=False)
    return path


def test_shard_actors_on_two_nodes_rank_like_the_unsharded_index(two_nodes, sharded_dir, passages, claims):
    from sleuth.scale.shard_actors import RayShardedBM25Index, ShardActorOptions
    from sleuth.stages.retrieve import BM25Retrieve

    remote = RayShardedBM25Index(sharded_dir, ShardActorOptions(actor_cpus=0.5))
    try:
        nodes = remote.actors.node_ids()
        assert len(set(nodes)) == 2, nodes  # SPREAD: one shard per node
        assert set(nodes) == {n["NodeID"] for n in ray.nodes() if n["Alive"]}
        whole = BM25Index.build(passages, show_progress=False)
        in_process = ShardedBM25Index.load(sharded_dir)
        pos_r, sc_r = remote.search(claims, k=50)
        pos_p, sc_p = in_process.search(claims, k=50)
        np.testing.assert_array_equal(pos_r, pos_p)  # the one merge: identical rows and scores
        np.testing.assert_array_equal(sc_r, sc_p)
        pos_w, sc_w = whole.search(claims, k=50)
        np.testing.assert_array_equal(sc_r, sc_w)  # global statistics: the unsharded scores, bit for bit
        assert (sc_w[:, 0] > 0).sum() > 150
        # the stage over the remote index: same hits (ids, texts fetched from the actors) as over the whole index
        stage_r, stage_w = BM25Retrieve(remote, k=10), BM25Retrieve(whole, k=10)
        for claim in claims[:20]:
            assert [(h.id, h.score, h.text) for h in stage_r.search(claim, 10)] == \
                   [(h.id, h.score, h.text) for h in stage_w.search(claim, 10)]
        rows = list(range(0, len(passages), 7))
        np.testing.assert_array_equal(remote.score(claims[0], rows), whole.score(claims[0], rows))
        assert remote.docstore.positions([passages[450].id, "nope"]) == [450, None]
    finally:
        remote.close()


def test_a_killed_shard_actor_restarts_and_answers_the_same(two_nodes, sharded_dir, claims):
    from sleuth.scale.shard_actors import RayShardedBM25Index, ShardActorOptions

    remote = RayShardedBM25Index(sharded_dir, ShardActorOptions(actor_cpus=0.5, max_restarts=2, max_task_retries=2))
    try:
        before = remote.search(claims, k=20)
        pid_before = remote.actors.facts[1]["pid"]
        answers: list = []

        def load() -> None:  # queries in flight while the shard actor is killed
            for _ in range(10):
                answers.append(remote.search(claims, k=20))

        worker = threading.Thread(target=load)
        worker.start()
        while not answers and worker.is_alive():  # kill once the load is under way
            time.sleep(0.01)
        ray.kill(remote.actors.actors[1], no_restart=False)
        worker.join(timeout=120)
        assert not worker.is_alive() and len(answers) == 10
        for positions, scores in answers:
            np.testing.assert_array_equal(positions, before[0])
            np.testing.assert_array_equal(scores, before[1])
        facts = ray.get(remote.actors.actors[1].facts.remote())
        assert facts["pid"] != pid_before  # a new process: the actor was restarted and reloaded its shard
        np.testing.assert_array_equal(remote.search(claims, k=20)[1], before[1])

        ray.kill(remote.actors.actors[0], no_restart=True)  # stays down
        with pytest.raises(ShardUnavailableError, match=r"shard 1 of 2 \(.*shard-000\) is down"):
            remote.search(claims, k=20)
    finally:
        remote.close()


def test_the_service_answers_from_shard_actors_and_503_names_a_shard_that_stays_down(two_nodes, sharded_dir, claims):
    from fastapi.testclient import TestClient

    from sleuth.index.sharded import set_remote_loader
    from sleuth.pipelines.index_stage import stage_for_index
    from sleuth.scale.shard_actors import RayShardedBM25Index, ShardActorOptions, serve_shards_on_ray
    from sleuth.service.app import create_app

    expected = stage_for_index(sharded_dir, 100, "cpu").search(claims[3], k=5)
    serve_shards_on_ray(ShardActorOptions(actor_cpus=0.5, max_restarts=0, timeout_s=20))
    try:
        stage = stage_for_index(sharded_dir, 100, "cpu")  # as `sleuth serve --index DIR --ray-address` loads it
    finally:
        set_remote_loader(None)
    index = stage.index
    assert isinstance(index, RayShardedBM25Index)
    try:
        with TestClient(create_app({"bm25": stage})) as client:
            body = client.get("/search", params={"query": claims[3], "k": 5}).json()
            assert [(h["id"], h["score"]) for h in body["hits"]] == [(h.id, pytest.approx(h.score)) for h in expected]
            whole = client.get("/search", params={"query": claims[3], "k": 5, "partial": True}).json()
            assert whole["hits"] == body["hits"] and whole["shards"]["complete"]
            ray.kill(index.actors.actors[1], no_restart=True)
            down = client.get("/search", params={"query": claims[3], "k": 5})
            assert down.status_code == 503
            assert "shard 2 of 2" in down.json()["error"] and "shard-001" in down.json()["error"]
            # asked for: the ranking of the shard that answered, and which shard is down
            first = ShardedBM25Index.load(sharded_dir).shards[0]  # shard 1 holds global rows 0 .. 299
            rows, scores = first.search([claims[3]], k=5)
            part = client.get("/search", params={"query": claims[3], "k": 5, "partial": "true"})
            assert part.status_code == 200, part.text
            assert [(h["id"], h["score"]) for h in part.json()["hits"]] == \
                   [(first.docstore.ids[r], pytest.approx(float(s))) for r, s in zip(rows[0], scores[0])]
            shards = part.json()["shards"]
            assert not shards["complete"] and [s.split(" (")[0] for s in shards["answered"]] == ["shard 1 of 2"]
            assert [d["shard"].split(" (")[0] for d in shards["down"]] == ["shard 2 of 2"]
            assert "ActorDiedError" in shards["down"][0]["error"]
            batch = client.post("/search/batch", json={"queries": claims[:2], "k": 3, "partial": True}).json()
            assert [r["shards"]["complete"] for r in batch["results"]] == [False, False]
            assert client.post("/search", json={"query": "x", "partial": "yes"}).status_code == 400
    finally:
        index.close()


def test_partial_results_in_the_library(two_nodes, sharded_dir, claims):
    from sleuth.index.partial import partial_results
    from sleuth.scale.shard_actors import RayShardedBM25Index, ShardActorOptions

    remote = RayShardedBM25Index(sharded_dir, ShardActorOptions(actor_cpus=0.5, max_restarts=0, timeout_s=20))
    try:
        ray.kill(remote.actors.actors[0], no_restart=True)
        with pytest.raises(ShardUnavailableError, match="shard 1 of 2"):
            remote.search(claims[:5], k=10)  # the default: no ranking without a shard
        with partial_results() as report:
            positions, scores = remote.search(claims[:5], k=10)
        second = ShardedBM25Index.load(sharded_dir).shards[1]  # shard 2: global rows 300 .. 599
        rows, expected = second.search(claims[:5], k=10)
        np.testing.assert_array_equal(positions, rows + 300)
        np.testing.assert_array_equal(scores, expected)
        assert [remote.docstore.ids[int(p)] for p in positions[0]] == [second.docstore.ids[int(r)] for r in rows[0]]
        assert report.answered == [remote.actors.describe(1)] and list(report.down) == [remote.actors.describe(0)]
        ray.kill(remote.actors.actors[1], no_restart=True)
        with partial_results(), pytest.raises(ShardUnavailableError, match="no shard answered"):
            remote.search(claims[:5], k=10)
    finally:
        remote.close()


def test_dense_shard_actors_rank_like_one_flat_index(two_nodes, tmp_path, passages):
    from sleuth.index.prebuilt import PREBUILT_DIR, PrebuiltVectors
    from sleuth.index.sharded import ShardedDenseIndex
    from sleuth.scale.shard_actors import RayShardedDenseIndex, ShardActorOptions

    shipped = PrebuiltVectors.load(PREBUILT_DIR / "minilm-onnx.npz")  # real MiniLM vectors of SciFact abstracts
    vectors = shipped.vectors[:600].astype(np.float32)
    queries = shipped.vectors[600:680].astype(np.float32)
    ShardedDenseIndex.build(passages, path=tmp_path / "dense", shards=2, vectors=vectors, encoder_spec=shipped.spec)
    one = ShardedDenseIndex.build(passages, shards=1, vectors=vectors, encoder_spec=shipped.spec)
    # rows_with_search_k=0: passages fetched after the merge (the path of large k), not sent with the search
    remote = RayShardedDenseIndex(tmp_path / "dense", ShardActorOptions(actor_cpus=0.5, rows_with_search_k=0))
    try:
        assert len(set(remote.actors.node_ids())) == 2
        assert remote.dim == 384 and remote.encoder_spec == shipped.spec
        pos_r, sc_r = remote.search(queries, k=30)
        pos_o, sc_o = one.search(queries, k=30)
        np.testing.assert_array_equal(sc_r, sc_o)
        np.testing.assert_array_equal(pos_r, pos_o)  # no ties among float scores of distinct abstracts here
        np.testing.assert_array_equal(remote.vectors([5, 599, 300]), vectors[[5, 599, 300]])
        assert [remote.docstore.ids[p] for p in pos_r[0, :3]] == [passages[p].id for p in pos_o[0, :3]]
        assert remote.docstore.texts[int(pos_r[5, 0])] == passages[int(pos_o[5, 0])].text
    finally:
        remote.close()


def test_shard_actors_serve_the_updated_generation(two_nodes, tmp_path, passages, claims):
    from sleuth.index.updates import add_documents, delete_documents
    from sleuth.scale.shard_actors import RayShardedBM25Index, ShardActorOptions

    target = tmp_path / "bm25"
    ShardedBM25Index.build(passages[:500], target, shards=2, show_progress=False)
    add_documents(target, passages[500:600])
    delete_documents(target, [passages[10].id, passages[300].id])
    remote = RayShardedBM25Index(target, ShardActorOptions(actor_cpus=0.5))
    try:
        assert [int(c) for c in remote.actors.counts] == [349, 249]  # the added ones to the first of equals
        pos_r, sc_r = remote.search(claims, k=20)
        pos_p, sc_p = ShardedBM25Index.load(target).search(claims, k=20)
        np.testing.assert_array_equal(pos_r, pos_p)
        np.testing.assert_array_equal(sc_r, sc_p)
    finally:
        remote.close()


@pytest.mark.slow
def test_reading_on_ray_data_writes_the_in_process_shards(two_nodes, tmp_path, passages, claims, capfd):
    import json

    from sleuth.scale.ray_build import RayOptions
    from sleuth.scale.ray_read import build_bm25_reading_on_ray

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": p.id, "title": p.full_title(), "text": p.text}) + "\n"
                              for p in passages))
    source = CorpusSource(corpus, "jsonl")
    build_bm25_reading_on_ray(source, tmp_path / "ray", 3, options=RayOptions(actor_cpus=0.25))
    # Ray Data's INFO lines (its execution plan, "Starting execution") kept off, as the docs say (before: printed,
    # Ray Data setting its logger to INFO when first imported, after the session had quieted it)
    assert "INFO streaming_executor" not in capfd.readouterr().err
    on_ray = ShardedBM25Index.load(tmp_path / "ray")
    here = ShardedBM25Index.build(source.passages(), shards=3, show_progress=False)
    assert on_ray.manifest.params == here.manifest.params
    for a, b in zip(on_ray.shards, here.shards):
        assert a.docstore.ids == b.docstore.ids and a.docstore.texts == b.docstore.texts
        for name in ("data", "indices", "indptr"):
            np.testing.assert_array_equal(a.model.scores[name], b.model.scores[name])
    np.testing.assert_array_equal(on_ray.search(claims, k=20)[1], here.search(claims, k=20)[1])

    corpus.write_text(corpus.read_text() + json.dumps({"_id": passages[7].id, "text": "again"}) + "\n")
    from sleuth.errors import ConfigError

    with pytest.raises(ConfigError, match=f"duplicate passage id '{passages[7].id}'"):
        build_bm25_reading_on_ray(source, tmp_path / "dup", 3, options=RayOptions(actor_cpus=0.25))
    assert not (tmp_path / "dup").exists()


def test_an_admin_update_reloads_onto_new_shard_actors(two_nodes, tmp_path, passages):
    import gc

    from fastapi.testclient import TestClient

    from sleuth.index.sharded import set_remote_loader
    from sleuth.pipelines.index_stage import stage_for_index
    from sleuth.scale.shard_actors import ShardActorOptions, serve_shards_on_ray
    from sleuth.service.app import create_app

    target = tmp_path / "bm25"
    ShardedBM25Index.build(passages[:300], target, shards=2, show_progress=False)
    serve_shards_on_ray(ShardActorOptions(actor_cpus=0.5))
    try:
        app = create_app({"bm25": stage_for_index(target, 100, "cpu")}, api_key="k" * 32,
                         loader=lambda: {"bm25": stage_for_index(target, 100, "cpu")}, index_dirs={"bm25": target})
        first_group = app.state.service.pipelines["bm25"].index.actors.group.id
        with TestClient(app) as client:
            document = {"id": "new-1", "title": "Zebrafish fins", "text": "zebrafish fin regeneration blastema"}
            added = client.post("/admin/documents", json={"documents": [document]}, headers={"X-API-Key": "k" * 32})
            assert added.status_code == 200 and added.json()["count"] == 301
            hits = client.get("/search", params={"query": "zebrafish fin regeneration", "k": 3}).json()["hits"]
            assert hits[0]["id"] == "new-1" and hits[0]["text"] == document["text"]
            gc.collect()
            table = ray.util.placement_group_table()
            assert table[first_group.hex()]["state"] == "REMOVED"  # the old actors' group went with the old index
            app.state.service.pipelines["bm25"].index.close()
    finally:
        set_remote_loader(None)


@pytest.mark.slow
def test_dense_reading_on_ray_data_writes_the_in_process_shards(two_nodes, tmp_path, passages):
    """Dense shards read, split, encoded and written by Ray workers (MiniLM ONNX, the shipped prebuilt vectors of
    SciFact): the in-process sharded build's stores, vectors bit for bit, and rankings."""
    import json

    from sleuth.index.prebuilt import PREBUILT_DIR, PrebuiltVectors
    from sleuth.index.sharded import ShardedDenseIndex
    from sleuth.models.registry import load_encoder
    from sleuth.scale.ray_build import RayOptions
    from sleuth.scale.ray_read import build_dense_reading_on_ray

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": p.id, "title": p.full_title(), "text": p.text}) + "\n"
                              for p in passages[:300]))
    source = CorpusSource(corpus, "jsonl")
    build_dense_reading_on_ray(source, tmp_path / "ray", 3, encoder="minilm-onnx",
                               options=RayOptions(actor_cpus=0.25))
    on_ray = ShardedDenseIndex.load(tmp_path / "ray")
    here = ShardedDenseIndex.build(source.passages(), load_encoder("minilm-onnx"), shards=3, show_progress=False)
    assert on_ray.manifest.params == here.manifest.params and on_ray.encoder_spec == here.encoder_spec
    for a, b in zip(on_ray.shards, here.shards):
        assert a.docstore.ids == b.docstore.ids and a.docstore.texts == b.docstore.texts
        rows = np.arange(len(a))
        np.testing.assert_array_equal(a.vectors(rows), b.vectors(rows))
    queries = PrebuiltVectors.load(PREBUILT_DIR / "minilm-onnx.npz").vectors[1000:1040].astype(np.float32)
    for got, expected in zip(on_ray.search(queries, k=20), here.search(queries, k=20)):
        np.testing.assert_array_equal(got, expected)


def test_a_corrupt_shard_is_one_line_naming_it_not_a_restart_storm(two_nodes, tmp_path, passages, capfd):
    """Before: the shard actor died loading a truncated shard, was restarted three times, and Ray printed each
    failure's traceback ('Task ShardActor.facts failed. There are 3 retries remaining') before the error."""
    from sleuth.errors import IndexError_
    from sleuth.scale.shard_actors import RayShardedBM25Index, ShardActorOptions

    path = tmp_path / "bm25"
    ShardedBM25Index.build(passages, path, shards=2, show_progress=False)
    broken = next((path / "shard-001").rglob("data.csc.index.npy"))
    broken.write_bytes(broken.read_bytes()[:100])
    capfd.readouterr()
    with pytest.raises(IndexError_, match=r"^shard 2 of 2 \(.*shard-001\) unusable: .*data\.csc\.index\.npy: size 100 "
                                          r"differs from the manifest's"):
        RayShardedBM25Index(path, ShardActorOptions(actor_cpus=0.5))
    time.sleep(1)  # what Ray would print of the actor's failures reaches the driver's output within this
    printed = capfd.readouterr()
    assert "Traceback" not in printed.err + printed.out and "retries remaining" not in printed.err + printed.out


def test_a_cli_ray_build_beside_a_running_cluster_starts_its_own_and_prints_its_summary(two_nodes, sleuth_process,
                                                                                      tmp_path, scifact_jsonl):
    """`--ray-address local` beside a running Ray (this module's two-node cluster): before, ray.init() joined the
    cluster /tmp/ray/ray_current_cluster names and failed ("When connecting to an existing cluster, num_cpus and
    num_gpus must not be provided"). And off a terminal sleuth turns Ray Data's progress bars off, which Ray Data said
    in a WARNING line on every build ("Progress bars disabled. To enable, set ...")."""
    result = sleuth_process("index", scifact_jsonl, "--kind", "bm25", "--shards", 2, "--ray-address", "local",
                            "--out", tmp_path / "sharded", env={"SLEUTH_HOME": str(tmp_path / "home")})
    assert result.returncode == 0, result.stderr
    assert "in 2 shards" in result.stdout + result.stderr and "built on Ray (local)" in result.stdout + result.stderr
    assert "WARNING" not in result.stderr and "Progress bars" not in result.stderr, result.stderr
