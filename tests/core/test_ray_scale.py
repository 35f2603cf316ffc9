"""Ray scale-out on a local Ray started (bounded: 2 CPUs, small object store) and stopped by these tests: a sharded
build of SciFact on Ray equals the single-machine build, and a Ray-distributed evaluation writes the same run file."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sleuth.corpus.beir import load_beir
from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex
from sleuth.index.sharded import ShardedBM25Index, ShardedDenseIndex
from sleuth.pipelines.workspace import CorpusSource

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'sleuth[ray]')")


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray of 2 CPUs for this module, always shut down at the end."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=512 * 1024 * 1024,
             log_to_driver=False, logging_level=logging.WARNING)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def source() -> CorpusSource:
    return CorpusSource(bundled_dataset_dir(), "beir")


@pytest.fixture(scope="module")
def beir():
    return load_beir(bundled_dataset_dir(), "train")


def same_ranking(whole, sharded, queries, k):
    """Exact equality of scores; ids equal up to permutation among equal scores (not at the cut-off)."""
    pos_a, sc_a = whole
    pos_b, sc_b = sharded
    np.testing.assert_array_equal(sc_a[:, :k], sc_b[:, :k])
    for i in range(len(queries)):
        last = sc_a[i, k - 1]
        a = {p for p, s in zip(pos_a[i, :k], sc_a[i, :k]) if s != last}
        b = {p for p, s in zip(pos_b[i, :k], sc_b[i, :k]) if s != last}
        assert a == b


@pytest.mark.slow
def test_ray_build_equals_the_single_machine_build(local_ray, tmp_path, source, beir):
    from sleuth.models.registry import load_encoder
    from sleuth.scale.ray_build import RayOptions, build_bm25_on_ray, build_dense_on_ray

    passages = list(source.passages())
    claims = [q.text for q in beir.queries[:200]]
    options = RayOptions(workers=2, actor_cpus=0.5)

    # BM25: the whole of SciFact, 3 shards tokenised in Ray tasks
    on_ray = build_bm25_on_ray(passages, tmp_path / "bm25-ray", 3, options=options)
    here = ShardedBM25Index.build(passages, shards=3, show_progress=False)
    whole = BM25Index.build(passages, show_progress=False)
    assert on_ray.manifest.params["global_stats"] == here.manifest.params["global_stats"]
    loaded = ShardedBM25Index.load(tmp_path / "bm25-ray")
    ray_result, here_result = loaded.search(claims, k=100), here.search(claims, k=100)
    np.testing.assert_array_equal(ray_result[0], here_result[0])  # the very same shards: the very same merge
    np.testing.assert_array_equal(ray_result[1], here_result[1])
    same_ranking(whole.search(claims, k=100), ray_result, claims, 100)

    # exact dense: 40 abstracts encoded by 2 encoder actors (0.5 CPU each) vs the in-process encoder
    subset = passages[:40]
    dense_ray = build_dense_on_ray(subset, tmp_path / "dense-ray", 2, options=options)
    encoder = load_encoder("minilm")
    dense_here = DenseIndex.build(subset, encoder, show_progress=False)
    assert isinstance(ShardedDenseIndex.load(tmp_path / "dense-ray"), ShardedDenseIndex)
    np.testing.assert_array_equal(dense_ray.vectors(range(40)), dense_here.vectors(range(40)))
    vectors = encoder.encode_queries(claims[:50])
    same_ranking(dense_here.search(vectors, k=20), dense_ray.search(vectors, k=20), claims[:50], 20)


def test_ray_evaluation_writes_the_single_process_run(local_ray, tmp_path, source, beir):
    from sleuth.eval.experiment import Experiment
    from sleuth.pipelines.config import load_pipeline
    from sleuth.pipelines.workspace import Workspace
    from sleuth.scale.ray_eval import RayPipeline, pipeline_builder

    queries = beir.queries[:150]
    home = tmp_path / "home"
    plain = Experiment({"bm25": load_pipeline("bm25", Workspace(source, home=home, show_progress=False))}, queries,
                       qrels=beir.qrels).run()
    distributed = RayPipeline(pipeline_builder("bm25", source, home), workers=2, actor_cpus=0.5)
    try:
        assert len(distributed.actors) == 2
        spread = Experiment({"bm25": distributed}, queries, qrels=beir.qrels).run()
    finally:
        distributed.close()
    plain_file = plain.save_runs(tmp_path / "plain")["bm25"]
    spread_file = spread.save_runs(tmp_path / "ray")["bm25"]
    assert plain_file.read_bytes() == spread_file.read_bytes()
    assert len(plain_file.read_text().splitlines()) > 100 * len(queries)
    assert spread.aggregate == plain.aggregate


@pytest.mark.slow
def test_ray_serve_replica_answers_like_the_sharded_index(local_ray, tmp_path, source):
    import json
    import socket
    import urllib.parse
    import urllib.request

    from ray import serve

    from sleuth.pipelines.index_stage import stage_for_index
    from sleuth.scale.ray_serve import ServeSettings, start

    ShardedBM25Index.build(list(source.passages())[:300], tmp_path / "bm25", shards=2, show_progress=False)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    query = "vitamin d deficiency and tuberculosis"
    from sleuth.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^--replicas 5 x --replica-cpus 1 = 5 CPUs, and the Ray cluster has 2"):
        start(ServeSettings(index=[str(tmp_path / "bm25")]), replicas=5, replica_cpus=1, port=port)  # before: waited
    try:
        start(ServeSettings(index=[str(tmp_path / "bm25")]), replicas=1, replica_cpus=0.5, port=port)
        url = f"http://127.0.0.1:{port}/search?" + urllib.parse.urlencode({"query": query, "k": 5})
        with urllib.request.urlopen(url, timeout=60) as response:
            body = json.loads(response.read())
    finally:
        serve.shutdown()
    expected = stage_for_index(tmp_path / "bm25", 1000, "cpu").search(query, k=5)
    assert [(h["id"], h["score"]) for h in body["hits"]] == [(h.id, pytest.approx(h.score)) for h in expected]
    assert len(expected) == 5


def test_a_ray_build_of_more_shard_writers_than_the_cluster_holds_is_refused(local_ray):
    """Before: `sleuth index --shards 5 --ray-address local` (5 writers of 0.5 CPU, 2 CPUs) waited for ever."""
    from sleuth.cli.index_cmd import check_ray_shards
    from sleuth.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--shards 5 x --actor-cpus 0.5 = 2.5 CPUs for the shard writers, built at "
                                          r"once, and the Ray cluster has 2: give fewer shards or --actor-cpus 0.4"):
        check_ray_shards(5, 0.5)
    check_ray_shards(4, 0.5)
    check_ray_shards(5, 0.4)


def test_the_address_check_lets_a_real_ray_head_through(local_ray):
    """The check that refuses a server that is not Ray (an HTTP/2 preface gets no SETTINGS frame) passes Ray's own
    head: its GCS answers gRPC."""
    from sleuth.scale.session import check_reachable

    check_reachable(local_ray.get_runtime_context().gcs_address)
