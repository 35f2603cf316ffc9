"""Updates of sharded indexes (sleuth.index.sharded_updates) on SciFact: add and delete through the generation swap,
documents routed to their shard (new ones to the smallest), BM25 scores equal to a fresh sharded build of the same
documents, dense vectors of kept documents unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from sleuth.errors import ConfigError, IndexError_, InputError
from sleuth.index.manifest import current_generation, read_manifest
from sleuth.index.sharded import ShardedBM25Index, ShardedDenseIndex, index_kind
from sleuth.index.updates import add_documents, delete_documents, generations


@pytest.fixture(scope="module")
def passages(bundled_passages):
    return bundled_passages[:460]


@pytest.fixture(scope="module")
def claims(bundled_claims) -> list[str]:
    return bundled_claims[:40]


def scores_by_id(index, text: str) -> dict[str, float]:
    return dict(zip(index.docstore.ids, index.score(text, range(len(index))).tolist()))


def test_sharded_bm25_updates_keep_global_statistics(tmp_path, passages, claims):
    target = tmp_path / "bm25"
    ShardedBM25Index.build(passages[:400], target, shards=3, show_progress=False)  # shards of 134, 133, 133
    added = passages[400:460]
    manifest = add_documents(target, added)
    assert manifest.kind == "sharded-bm25" and manifest.count == 460
    assert [s["count"] for s in manifest.params["shards"]] == [134, 193, 133]  # to the smallest shard (the 2nd)
    gone = [passages[i].id for i in (0, 5, 150, 260, 399, 420)]  # in shards 1, 1, 2, 2, 3 and 2 (an added one)
    manifest = delete_documents(target, gone)
    assert [s["count"] for s in manifest.params["shards"]] == [132, 190, 132]
    assert len(generations(target)) == 2 and index_kind(target) == "sharded-bm25"

    updated = ShardedBM25Index.load(target)
    kept = [p for p in passages if p.id not in set(gone)]
    assert sorted(updated.docstore.ids) == sorted(p.id for p in kept)
    assert updated.shards[1].docstore.ids[-1] == passages[459].id
    fresh = ShardedBM25Index.build(kept, shards=3, show_progress=False)  # another partition of the same documents
    assert updated.manifest.params["global_stats"] == fresh.manifest.params["global_stats"]
    for text in claims:
        a, b = scores_by_id(updated, text), scores_by_id(fresh, text)
        assert a.keys() == b.keys()
        np.testing.assert_allclose([a[k] for k in a], [b[k] for k in a], rtol=0, atol=1e-5)
    pos_u, sc_u = updated.search(claims, k=20)
    pos_f, sc_f = fresh.search(claims, k=20)
    np.testing.assert_allclose(sc_u, sc_f, rtol=0, atol=1e-5)
    assert (sc_u[:, 0] > 0).sum() > 30


SHARD_MANIFESTS = ["shard-000/manifest.json", "shard-001/manifest.json"]


def test_an_updated_sharded_index_hashes_each_shard_file_once(tmp_path, passages):
    """An update's root manifest lists the shards' manifests only, as a build's does: every shard file is checked
    by its shard's own manifest alone, so loading hashes it once; a flipped byte in a shard file of the served
    generation is still a one-line error naming the file."""
    target = tmp_path / "bm25"
    ShardedBM25Index.build(passages[:60], target, shards=2, show_progress=False)
    assert sorted(read_manifest(target).files) == SHARD_MANIFESTS
    add_documents(target, passages[60:70])
    served = current_generation(target)
    assert served != target and sorted(read_manifest(served).files) == SHARD_MANIFESTS
    data = served / "shard-001" / "bm25s" / "data.csc.index.npy"
    flipped = bytearray(data.read_bytes())
    flipped[-5] ^= 0x20
    data.write_bytes(bytes(flipped))
    with pytest.raises(IndexError_, match=rf"shard 2 of 2 .* unusable: {data}: corrupt index file") as caught:
        ShardedBM25Index.load(target)
    assert "\n" not in str(caught.value)


def test_sharded_update_errors_change_nothing(tmp_path, passages):
    target = tmp_path / "bm25"
    ShardedBM25Index.build(passages[:50], target, shards=2, show_progress=False)
    with pytest.raises(ConfigError, match=f"duplicate passage id '{passages[3].id}'"):
        add_documents(target, [passages[3]])
    with pytest.raises(InputError, match="unknown passage id 'nope'"):
        delete_documents(target, ["nope"])
    with pytest.raises(InputError, match="empty index"):
        delete_documents(target, [p.id for p in passages[:50]])
    assert generations(target) == []
    emptied = delete_documents(target, [p.id for p in passages[25:50]])  # a shard left empty is dropped
    assert [s["count"] for s in emptied.params["shards"]] == [25]
    assert len(ShardedBM25Index.load(target)) == 25


def test_sharded_dense_updates_append_to_the_smallest_shard(tmp_path, passages):
    from sleuth.index.prebuilt import PREBUILT_DIR, PrebuiltVectors
    from sleuth.models.registry import encoder_from_spec

    shipped = PrebuiltVectors.load(PREBUILT_DIR / "minilm-onnx.npz")
    vectors = shipped.vectors[:301].astype(np.float32)
    target = tmp_path / "dense"
    ShardedDenseIndex.build(passages[:301], path=target, shards=2, vectors=vectors, encoder_spec=shipped.spec)
    encoder = encoder_from_spec(shipped.spec)
    new = passages[301:304]
    manifest = add_documents(target, new, encoder=encoder)
    assert [s["count"] for s in manifest.params["shards"]] == [151, 153]
    delete_documents(target, [passages[0].id, passages[200].id])
    assert sorted(read_manifest(current_generation(target)).files) == SHARD_MANIFESTS
    updated = ShardedDenseIndex.load(target)
    assert [len(s) for s in updated.shards] == [150, 152]
    kept = [i for i in range(301) if i not in (0, 200)]
    rows = [updated.docstore.position(passages[i].id) for i in kept]
    np.testing.assert_array_equal(updated.vectors(rows), vectors[kept])  # kept vectors unchanged
    added_rows = [updated.docstore.position(p.id) for p in new]
    expected = encoder.encode_passages([f"{p.full_title(', ')} {p.text}" if p.title else p.text for p in new])
    np.testing.assert_allclose(updated.vectors(added_rows), expected, rtol=0, atol=1e-6)
    all_vectors = updated.vectors(range(len(updated)))
    queries = shipped.vectors[400:420].astype(np.float32)
    positions, scores = updated.search(queries, k=10)
    exact = np.sort(queries @ all_vectors.T, axis=1)[:, ::-1][:, :10]
    np.testing.assert_allclose(scores, exact, rtol=0, atol=1e-5)
