"""Incremental updates on real SciFact abstracts: add and delete documents of bm25 and dense index folders as
generations swapped in atomically; kill -9 mid-update, a concurrent reader, the CLI and the admin API."""

from __future__ import annotations

import json
import re
import threading

import numpy as np
import pytest
from fastapi.testclient import TestClient

from sleuth.errors import ConfigError, IndexError_, InputError
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex
from sleuth.index.manifest import current_generation, load_generation, read_manifest
from sleuth.index.updates import add_documents, delete_documents, generations, passages_from_records
from sleuth.pipelines.index_stage import stage_for_index
from sleuth.service.app import create_app
from sleuth.service.limits import Limits
from tests.cli_support import one_line_error
from tests.model_support import shuffled_minilm

KEY = "update-key-51ab"


def top_id(index: BM25Index, query: str) -> str:
    positions, _ = index.search([query], k=1)
    return index.docstore.ids[positions[0][0]]


def bm25_scores(index: BM25Index, query: str) -> dict[str, float]:
    positions, scores = index.search([query], k=len(index))
    return {index.docstore.ids[p]: float(s) for p, s in zip(positions[0], scores[0]) if s > 0}


# --- bm25 -----------------------------------------------------------------------------------------------------------

def test_bm25_add_then_delete_equals_fresh_builds(tmp_path, scifact_passages):
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:200], target, show_progress=False)
    new = scifact_passages[200:210]
    assert top_id(BM25Index.load(target), new[3].title) != new[3].id

    manifest = add_documents(target, new)
    assert manifest.count == 210 and generations(target) == ["gen-000001"]
    added = BM25Index.load(target)
    assert len(added) == 210 and top_id(added, new[3].title) == new[3].id
    # global statistics changed, so scores are those of a fresh build of the 210 passages (not the old ones)
    fresh = BM25Index.build(scifact_passages[:210], show_progress=False)
    query = "stem cells in bone marrow"
    got, want = bm25_scores(added, query), bm25_scores(fresh, query)
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[i] for i in want], list(want.values()), rtol=1e-6)

    gone = [new[3].id, scifact_passages[0].id]
    assert delete_documents(target, gone).count == 208
    deleted = BM25Index.load(target)
    assert not set(gone) & set(deleted.docstore.ids) and top_id(deleted, new[3].title) != new[3].id
    fresh = BM25Index.build([p for p in scifact_passages[:210] if p.id not in gone], show_progress=False)
    got, want = bm25_scores(deleted, query), bm25_scores(fresh, query)
    np.testing.assert_allclose([got[i] for i in want], list(want.values()), rtol=1e-6)
    # garbage collection keeps the served generation and the one before it
    assert generations(target) == ["gen-000001", "gen-000002"]
    add_documents(target, [scifact_passages[300]])
    assert generations(target) == ["gen-000002", "gen-000003"]
    assert current_generation(target) == target / "generations" / "gen-000003"
    read_manifest(current_generation(target), verify=True)


def test_bm25_update_errors_change_nothing(tmp_path, scifact_passages):
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:50], target, show_progress=False)
    with pytest.raises(ConfigError, match=f"duplicate passage id '{scifact_passages[5].id}'"):
        add_documents(target, [scifact_passages[60], scifact_passages[5]])
    with pytest.raises(ConfigError, match=f"duplicate passage id '{scifact_passages[60].id}' in the documents"):
        add_documents(target, [scifact_passages[60], scifact_passages[60]])
    with pytest.raises(InputError, match="unknown passage id 'no-such-id'") as caught:
        delete_documents(target, [scifact_passages[1].id, "no-such-id"])
    assert "\n" not in str(caught.value)
    with pytest.raises(InputError, match="empty index"):
        delete_documents(target, [p.id for p in scifact_passages[:50]])
    assert not (target / "CURRENT").exists() and BM25Index.load(target).manifest.count == 50
    with pytest.raises(InputError, match="'id' missing: each record needs 'id' or '_id'"):
        passages_from_records([{"text": "no id"}])


def test_an_updated_index_of_another_kind_is_named_by_its_folder(tmp_path, scifact_passages):
    """Before: "<folder>/generations/gen-000001 is a 'bm25' index, not a 'hierarchical' index" (`sleuth dhr shard`
    on an updated BM25 folder): the folder the user gave is named."""
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:20], target, show_progress=False)
    add_documents(target, [scifact_passages[30]])
    with pytest.raises(IndexError_, match=rf"^{re.escape(str(target))} is a 'bm25' index, not a 'hierarchical'"):
        read_manifest(current_generation(target), kind="hierarchical")


def test_killed_update_keeps_the_previous_generation(tmp_path, scifact_passages, killed_update):
    """kill -9 while the new generation is being written: the previous one still loads and serves, and the next
    update removes the leftover and succeeds."""
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:100], target, show_progress=False)
    add_documents(target, scifact_passages[100:110])
    records = [{"id": p.id, "title": p.title, "text": p.text} for p in scifact_passages[110:120]]
    killed_update(target, records)
    served = BM25Index.load(target)
    assert served.manifest.count == 110 and scifact_passages[115].id not in served.docstore.ids
    assert generations(target) == ["gen-000001"]
    add_documents(target, scifact_passages[110:120])
    assert BM25Index.load(target).manifest.count == 120
    assert not any(p.name.startswith(".tmp-") for p in (target / "generations").iterdir())


def test_concurrent_reader_sees_whole_generations(tmp_path, scifact_passages):
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:150], target, show_progress=False)
    counts, errors, done = [], [], threading.Event()

    def reader():
        while not done.is_set():
            try:
                index = BM25Index.load(target)
                n = index.manifest.count
                # a consistent generation: docstore, BM25 matrix and manifest agree, and the last added doc is in
                assert len(index.docstore) == n == index.model.scores["num_docs"]
                assert index.docstore.ids[-1] == scifact_passages[n - 1].id
                counts.append(n)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(repr(exc))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for start in range(150, 190, 8):
            add_documents(target, scifact_passages[start:start + 8])
    finally:
        done.set()
        thread.join(timeout=30)
    assert not errors, errors[:3]
    assert counts and set(counts) <= {150, 158, 166, 174, 182, 190}
    assert counts == sorted(counts)  # never back to an older generation
    assert BM25Index.load(target).manifest.count == 190


def test_a_reader_whose_generation_is_collected_loads_the_newer_one(tmp_path, scifact_passages):
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:40], target, show_progress=False)
    add_documents(target, [scifact_passages[40]])
    seen = []

    def slow_load(generation):
        seen.append(generation.name)
        if len(seen) == 1:  # two updates land while this reader is between reading CURRENT and the files
            add_documents(target, [scifact_passages[41]])
            add_documents(target, [scifact_passages[42]])
            assert not generation.exists()
        return BM25Index._load(generation, mmap=False)

    loaded = load_generation(target, slow_load)
    assert seen == ["gen-000001", "gen-000003"] and len(loaded) == 43


# --- dense ----------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def onnx_encoder():
    from sleuth.models.registry import load_encoder

    return load_encoder("minilm-onnx")


def test_an_encoder_for_a_bm25_index_is_refused(tmp_path, scifact_passages, onnx_encoder):
    """Before: add_documents(bm25_index, ..., encoder=...) added the documents and ignored the encoder unsaid."""
    from sleuth.index.sharded import ShardedBM25Index

    flat, sharded = tmp_path / "bm25", tmp_path / "sharded"
    BM25Index.build(scifact_passages[:30], flat, show_progress=False)
    ShardedBM25Index.build(scifact_passages[:30], sharded, shards=2, show_progress=False)
    for target, kind in ((flat, "bm25"), (sharded, "sharded-bm25")):
        with pytest.raises(ConfigError, match=f"is a {kind} index \\(it encodes nothing\\)"):
            add_documents(target, scifact_passages[30:32], encoder=onnx_encoder)
        assert generations(target) == [] and read_manifest(current_generation(target)).count == 30


def dense_scores(index: DenseIndex, query_vector: np.ndarray) -> dict[str, float]:
    positions, scores = index.search(query_vector[None, :], k=len(index))
    return {index.docstore.ids[p]: float(s) for p, s in zip(positions[0], scores[0]) if p >= 0}


def test_dense_add_and_delete_keep_untouched_scores(tmp_path, scifact_passages, onnx_encoder):
    target = tmp_path / "dense"
    DenseIndex.build(scifact_passages[:80], onnx_encoder, target, show_progress=False)
    query = onnx_encoder.encode_queries([scifact_passages[85].title])[0]
    before = dense_scores(DenseIndex.load(target), query)

    add_documents(target, scifact_passages[80:90], encoder=onnx_encoder)
    added = DenseIndex.load(target)
    assert len(added) == added.manifest.count == 90 and added.manifest.encoder["name"] == "minilm-onnx"
    after = dense_scores(added, query)
    assert max(after, key=after.get) == scifact_passages[85].id
    np.testing.assert_allclose([after[i] for i in before], list(before.values()), rtol=1e-6)
    with pytest.raises(ConfigError, match="duplicate passage id"):
        add_documents(target, [scifact_passages[3]], encoder=onnx_encoder)

    gone = [scifact_passages[85].id, scifact_passages[2].id]
    delete_documents(target, gone)
    deleted = DenseIndex.load(target)
    assert len(deleted) == 88
    left = dense_scores(deleted, query)
    assert not set(gone) & set(left)
    np.testing.assert_allclose([left[i] for i in left], [after[i] for i in left], rtol=1e-6)


def test_an_encoder_of_another_vector_space_is_refused(tmp_path, scifact_passages, onnx_encoder):
    """Before: only the dimension was checked, so new passages encoded by another 384-d model (here MiniLM's
    weights with its word embeddings shuffled) were added to a MiniLM index and searched as if comparable. The same
    model on another backend (torch for an index built by ONNX) is taken, for an unsharded and a sharded index
    alike."""
    from sleuth.index.sharded import ShardedDenseIndex
    from sleuth.models.registry import load_encoder

    other = shuffled_minilm(tmp_path / "other-model")
    passages, new = scifact_passages[:20], scifact_passages[20:22]
    DenseIndex.build(passages, onnx_encoder, tmp_path / "dense", show_progress=False)
    ShardedDenseIndex.build(passages, onnx_encoder, tmp_path / "sharded", shards=2, show_progress=False)
    for target, kind in ((tmp_path / "dense", DenseIndex), (tmp_path / "sharded", ShardedDenseIndex)):
        with pytest.raises(ConfigError, match=r"does not give the vectors of .*: of 16 of its passages re-encoded, "
                                              r"\d+ land nearest their own stored vector .* built with 'minilm-onnx'"):
            add_documents(target, new, encoder=other)
        assert len(kind.load(target)) == 20
        add_documents(target, new, encoder=load_encoder("minilm"))
        assert len(kind.load(target)) == 22


def short_dense_indexes(tmp_path, passages) -> list[tuple]:
    """A dense and a sharded dense index of ``passages`` made by MiniLM (ONNX) at a maximum length of 16 tokens,
    recorded in their manifests: ``[(folder, index class), ...]``."""
    from sleuth.index.sharded import ShardedDenseIndex
    from sleuth.models.registry import load_encoder

    short = load_encoder("minilm-onnx", max_length=16)
    DenseIndex.build(passages, short, tmp_path / "dense", show_progress=False)
    ShardedDenseIndex.build(passages, short, tmp_path / "sharded", shards=2, show_progress=False)
    return [(tmp_path / "dense", DenseIndex), (tmp_path / "sharded", ShardedDenseIndex)]


def test_dense_and_sharded_updates_load_the_recorded_encoder_alike(tmp_path, scifact_passages):
    """With no encoder given, an update encodes new passages with the encoder its manifest records, options included
    (here a maximum length of 16 tokens), for an unsharded and a sharded dense index alike."""
    from sleuth.index.docstore import DocStore
    from sleuth.models.registry import load_encoder

    indexes = short_dense_indexes(tmp_path, scifact_passages[:20])
    new = scifact_passages[20:24]
    expected = load_encoder("minilm-onnx", max_length=16).encode_passages(DocStore.from_passages(new).contents(),
                                                                          show_progress=False)
    for target, kind in indexes:
        add_documents(target, new)
        index = kind.load(target)
        assert index.manifest.encoder["max_length"] == 16
        np.testing.assert_allclose(index.vectors([index.docstore.position(p.id) for p in new]), expected, atol=1e-6)


def test_updates_load_the_recorded_encoder_on_the_given_device(tmp_path, scifact_passages):
    """The device of an update reaches the encoder the manifest records, for an unsharded and a sharded dense index
    (checked through the device check: a device name no machine has is a one-line ConfigError, nothing written)."""
    for target, kind in short_dense_indexes(tmp_path, scifact_passages[:10]):
        with pytest.raises(ConfigError, match="unknown device 'tpu'"):
            add_documents(target, scifact_passages[10:12], device="tpu")
        assert len(kind.load(target)) == 10


# --- CLI and service ------------------------------------------------------------------------------------------------

def test_update_command_adds_and_deletes(sleuth, tmp_path, scifact_passages):
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:60], target, show_progress=False)
    corpus = tmp_path / "new.jsonl"
    corpus.write_text("".join(json.dumps({"_id": p.id, "title": p.title, "text": p.text}) + "\n"
                              for p in scifact_passages[60:65]), encoding="utf-8")

    result = sleuth("update", target, "--add", corpus)
    assert result.returncode == 0, result.stderr
    assert "added 5, now 65 passages" in result.stderr
    result = sleuth("update", target, "--delete", f"{scifact_passages[61].id},nope")
    assert result.returncode == 2 and result.stderr.strip() == \
        f"error: unknown passage id 'nope': not in the index {target}"
    result = sleuth("update", target, "--delete", scifact_passages[61].id)
    assert result.returncode == 0, result.stderr
    index = BM25Index.load(target)
    assert len(index) == 64 and scifact_passages[61].id not in index.docstore.ids
    # before: the encoder was loaded (5 s) and then ignored
    one_line_error(sleuth("update", target, "--add", corpus, "--encoder", "minilm"),
                   f"an encoder is for dense indexes; {target} is a bm25 index (it encodes nothing)")
    one_line_error(sleuth("update", target, "--delete", scifact_passages[62].id, "--encoder", "minilm"),
                   "--encoder encodes added documents: it goes with --add, not with a deletion")
    assert len(BM25Index.load(target)) == 64


@pytest.mark.parametrize("lines, message", [
    ('{"_id": "n1", "text": "fine"}\n\n{"_id": "n2"}\n', "new.jsonl:3: field 'text': missing"),
    ('{"_id": "n1", "text": "fine"}\n{"_id": "n1", "text": "again"}\n',
     "new.jsonl:2: id 'n1' appears twice (first on line 1)"),
    ('{"_id": "n1", "text": ["a"]}\n', "new.jsonl:1: field 'text': must be a string, got list"),
])
def test_update_names_the_file_and_line_of_a_bad_document(sleuth, tmp_path, scifact_passages, lines, message):
    """Before: "document 'n2': 'text' and 'title' must be strings" and "duplicate passage id 'n1' in the documents to
    add": no file, no line, and a missing text called a wrong type."""
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:20], target, show_progress=False)
    (tmp_path / "new.jsonl").write_text(lines, encoding="utf-8")
    one_line_error(sleuth("update", target, "--add", tmp_path / "new.jsonl"), message)
    assert len(BM25Index.load(target)) == 20


def test_update_takes_numeric_ids_as_the_corpus_readers_do(sleuth, tmp_path, scifact_passages):
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:20], target, show_progress=False)
    (tmp_path / "new.jsonl").write_text('{"_id": 7, "title": "t", "text": "seven"}\n', encoding="utf-8")
    result = sleuth("update", target, "--add", tmp_path / "new.jsonl")
    assert result.returncode == 0, result.stderr
    assert "7" in BM25Index.load(target).docstore.ids


@pytest.fixture
def served(tmp_path, scifact_passages):
    target = tmp_path / "scifact"
    BM25Index.build(scifact_passages[:200], target, show_progress=False)

    def load():
        return {target.name: stage_for_index(target, 50, "cpu")}

    limits = Limits(max_k=50, max_batch=4, timeout_seconds=30)
    app = create_app(load(), limits=limits, api_key=KEY, loader=load, index_dirs={target.name: target})
    return TestClient(app), target


def test_admin_documents_need_the_key_and_swap_the_index(served, scifact_passages):
    client, target = served
    new = scifact_passages[250]
    document = {"id": new.id, "title": new.title, "text": new.text}

    def first(query):
        return client.post("/search", json={"query": query, "k": 3}).json()["hits"][0]["id"]

    assert first(new.title) != new.id
    for headers, status in (({}, 401), ({"X-API-Key": KEY + "x"}, 401)):
        assert client.post("/admin/documents", json={"documents": [document]}, headers=headers).status_code == status
        assert client.request("DELETE", "/admin/documents", json={"ids": [scifact_passages[0].id]},
                              headers=headers).status_code == status
    assert first(new.title) != new.id and len(BM25Index.load(target)) == 200

    added = client.post("/admin/documents", json={"documents": [document]}, headers={"X-API-Key": KEY})
    assert added.status_code == 200 and added.json() == {"index": "scifact", "added": 1, "count": 201,
                                                    "reloaded": ["scifact"]}
    assert first(new.title) == new.id
    again = client.post("/admin/documents", json={"documents": [document]}, headers={"X-API-Key": KEY})
    # the served index's name, not its folder (before: the server's path, which is none of a client's business)
    assert again.status_code == 400 and again.json()["error"] == (f"duplicate passage id '{new.id}': already in the "
                                                                    "index 'scifact'")

    unknown = client.request("DELETE", "/admin/documents", json={"ids": ["nope"]}, headers={"X-API-Key": KEY})
    assert unknown.status_code == 400 and unknown.json()["error"] == "unknown passage id 'nope': not in the index 'scifact'"
    deleted = client.request("DELETE", "/admin/documents", json={"ids": [new.id]}, headers={"X-API-Key": KEY})
    assert deleted.status_code == 200 and deleted.json()["count"] == 200
    assert first(new.title) != new.id
    bad = client.post("/admin/documents", json={"documents": [], "index": "scifact"}, headers={"X-API-Key": KEY})
    assert bad.status_code == 400
    other = client.post("/admin/documents", json={"documents": [document], "index": "other"},
                        headers={"X-API-Key": KEY})
    assert other.status_code == 400 and "unknown index 'other'" in other.json()["error"]


def test_admin_documents_disabled_without_a_key(tmp_path, scifact_passages):
    target = tmp_path / "ix"
    BM25Index.build(scifact_passages[:30], target, show_progress=False)
    app = create_app({"ix": stage_for_index(target, 10, "cpu")}, index_dirs={"ix": target})
    response = TestClient(app).post("/admin/documents", json={"documents": [{"id": "x", "text": "y"}]})
    assert response.status_code == 403 and len(BM25Index.load(target)) == 30


def test_an_add_committed_while_another_index_cannot_reload_says_so(tmp_path, scifact_passages):
    """The reload after an admin add takes what the loader gives, here every served index (eagerly loaded): with
    another one damaged, the committed add was answered 400 naming that index's folder on the server, and its retry
    refused as a duplicate."""
    team, scratch = tmp_path / "team", tmp_path / "scratch"
    BM25Index.build(scifact_passages[:40], team, show_progress=False)
    BM25Index.build(scifact_passages[40:80], scratch, show_progress=False)

    def load():
        return {"team": stage_for_index(team, 10, "cpu"), "scratch": stage_for_index(scratch, 10, "cpu")}

    client = TestClient(create_app(load(), api_key=KEY, loader=load, index_dirs={"team": team, "scratch": scratch}))
    manifest = (scratch / "manifest.json").read_text()
    (scratch / "manifest.json").write_text("{not json\n")  # the other index, damaged on disk
    added = client.post("/admin/documents", json={"documents": [{"id": "w1", "text": "wombat habitat"}],
                                                  "index": "team"}, headers={"X-API-Key": KEY})
    assert added.status_code == 500, added.text
    message = added.json()["error"]
    assert message.startswith("the addition is committed to index 'team', but reloading the served indexes failed")
    assert str(tmp_path) not in message and "'scratch'" in message
    assert "w1" in BM25Index.load(team).docstore.ids  # committed
    (scratch / "manifest.json").write_text(manifest)
    assert client.post("/admin/reload", headers={"X-API-Key": KEY}).status_code == 200
    assert client.post("/search", json={"query": "wombat habitat", "index": "team", "k": 1}).json()["hits"][0]["id"] \
        == "w1"
