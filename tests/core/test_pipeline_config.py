"""Pipelines from YAML: built-ins, composition, and one clear error for every kind of bad config."""

from __future__ import annotations

import pytest

from sleuth.errors import ConfigError, InputError
from sleuth.index.bm25 import BM25Index
from sleuth.pipelines.config import builtin_pipelines, load_pipeline, validate_pipeline
from sleuth.pipelines.workspace import Workspace
from sleuth.stages.base import Sequential
from sleuth.stages.fusion import Fuse


def write(tmp_path, text: str):
    path = tmp_path / "pipeline.yaml"
    path.write_text(text)
    return path


def test_builtins_are_valid():
    assert {"bm25", "dense", "hybrid"} <= set(builtin_pipelines())
    for name in builtin_pipelines():
        assert validate_pipeline(name)["name"] == name


def test_pipeline_over_an_index_path_with_cutoff(tmp_path, scifact_passages):
    BM25Index.build(scifact_passages, tmp_path / "ix", show_progress=False)
    path = write(tmp_path, f"""
name: bm25-top5
stages:
  - bm25: {{index: {tmp_path / 'ix'}, k: 50}}
  - cutoff: {{k: 5}}
""")
    pipeline = load_pipeline(path, Workspace())
    assert isinstance(pipeline, Sequential) and pipeline.name == "bm25-top5"
    hits = pipeline.search(scifact_passages[3].title, k=10)
    assert len(hits) == 5 and hits[0].id == scifact_passages[3].id


def test_fuse_of_two_bm25_variants(tmp_path, scifact_passages):
    BM25Index.build(scifact_passages, tmp_path / "ix", show_progress=False)
    path = write(tmp_path, f"""
stages:
  - fuse:
      method: weighted
      weights: [0.7, 0.3]
      branches:
        - bm25: {{index: {tmp_path / 'ix'}}}
        - [bm25: {{index: {tmp_path / 'ix'}}}, cutoff: {{k: 3}}]
""")
    pipeline = load_pipeline(path, Workspace())  # a one-stage pipeline wraps its stage under the config's name
    assert pipeline.name == "pipeline" and isinstance(pipeline.stages[0], Fuse)
    assert pipeline.stages[0].name == "weighted(bm25, bm25 >> cutoff(3))"
    assert pipeline.search(scifact_passages[0].title, k=1)[0].id == scifact_passages[0].id


@pytest.mark.parametrize("text,message", [
    ("stages:\n  - bm25: {kk: 3}\n", "stage 1: stage 'bm25': unknown key 'kk'"),
    ("stages:\n  - bm26\n", "unknown stage 'bm26'"),
    ("stagez:\n  - bm25\n", "unknown key 'stagez'"),
    ("stages: []\n", "'stages' must be a non-empty list"),
    ("stages:\n  - cutoff\n", "missing key 'k'"),
    ("stages:\n  - bm25: {k: [1\n", "invalid YAML"),
    ("stages:\n  - fuse: {branches: [bm25, {dense: {nope: 1}}]}\n", "branch 2, stage 1: stage 'dense': unknown key"),
    # before: PyYAML kept the last of two equal keys, so k: 3 (or the dense stages) ran without a word
    ("stages:\n  - bm25: {k: 10, k: 3}\n", ":2: invalid YAML .key 'k' given twice, first on line 2"),
    ("stages:\n  - bm25\nname: x\nstages:\n  - dense\n", ":4: invalid YAML .key 'stages' given twice, first on line 1"),

    # session 28: a recursive alias was a RecursionError traceback; a list as name a TypeError in eval's table;
    # a pipeline starting with cutoff gave every query no hits; normalise with rrf had no effect
    ("stages: &a\n  - fuse: {branches: [*a, *a]}\n", "a YAML alias refers to a mapping or list that holds it"),
    ("name: [1, 2]\nstages:\n  - bm25\n", "'name' must be a non-empty string, got [1, 2]"),
    ("description: {a: 1}\nstages:\n  - bm25\n", "'description' must be a non-empty string"),
    ("stages:\n  - cutoff: {k: 2}\n", "stage 1 'cutoff': cuts the ranking of an earlier stage, so it cannot come first"),
    ("stages:\n  - fuse: {branches: [[cutoff: {k: 2}], bm25]}\n", "branch 1, stage 1 'cutoff': cuts the ranking"),
    ("stages:\n  - fuse: {normalise: zscore, branches: [bm25, dense]}\n", "normalise applies to method weighted"),
    # session 35: a reranker or classifier first failed only when run, after its model and indexes were loaded
    ("stages:\n  - path_passages\n", "stage 1 'path_passages': works on the ranking of an earlier stage"),
    ("stages:\n  - classify\n  - cutoff: {k: 5}\n", "stage 1 'classify': works on the ranking of an earlier stage"),
    ("stages:\n  - fuse: {branches: [bm25, cos_rerank]}\n", "branch 2, stage 1 'cos_rerank': works on the ranking"),
])
def test_bad_configs_name_the_problem(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("(", r"\(")) as info:
        validate_pipeline(path)
    assert str(path) in str(info.value)


def test_a_config_that_is_not_utf8_is_one_error_line(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\u00e9\nstages:\n  - bm25\n".encode("latin-1"))  # was a UnicodeDecodeError traceback
    with pytest.raises(InputError, match=r"latin1\.yaml: not UTF-8 text"):
        validate_pipeline(path)


def test_unknown_pipeline_name():
    with pytest.raises(ConfigError, match="unknown pipeline 'hybird'.*bm25"):
        validate_pipeline("hybird")


def test_pipeline_needing_a_corpus_says_so():
    with pytest.raises(ConfigError, match="needs an index"):
        load_pipeline("bm25", Workspace())


def test_vector_search_keys_are_declared_once_and_accepted_alike(tmp_path, scifact_passages):
    """factory / ef_search / nprobe come from one dataclass (VectorSearch) and every dense-index stage takes them."""
    from sleuth.index.dense import DenseIndex, VectorSearch
    from sleuth.models.registry import load_encoder
    from sleuth.pipelines.registry import load_stage_modules, stage_keys

    load_stage_modules()
    fields = {"factory", "ef_search", "nprobe"}
    for name in ("dense", "dhr", "dhr_documents", "dhr_passages", "dhr_p", "cos_retrieve", "cos_chain"):
        assert fields <= set(stage_keys(name)), name
    index_dir = tmp_path / "hnsw"
    DenseIndex.build(scifact_passages[:40], load_encoder("minilm-onnx"), index_dir, "HNSW16", show_progress=False)
    config = tmp_path / "p.yaml"
    config.write_text(f"stages:\n  - dense: {{index: {index_dir}, ef_search: 7, k: 5}}\n", encoding="utf-8")
    stage = load_pipeline(config, Workspace()).stages[0]
    import faiss

    assert faiss.downcast_index(stage.index.index).hnsw.efSearch == 7
    assert len(stage.search("vitamin d deficiency", k=5)) == 5
    config.write_text(f"stages:\n  - dense: {{index: {index_dir}, nprobe: 0}}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="stage 1: stage 'dense': key 'nprobe': must be at least 1"):
        load_pipeline(config, Workspace())
    assert VectorSearch().factory == "Flat"


def test_keys_that_would_change_nothing_are_refused(tmp_path, scifact_passages):
    """BM25's build settings beside an index folder, a dense index's factory or another encoder, efSearch on an
    index without HNSW, nprobe on one without IVF: each was accepted and ignored (a k1 sweep over an index folder
    gave one figure for every value); now a one-line error before anything is encoded."""
    from sleuth.index.dense import DenseIndex
    from sleuth.models.registry import load_encoder

    BM25Index.build(scifact_passages[:40], tmp_path / "bm25", show_progress=False)
    DenseIndex.build(scifact_passages[:40], load_encoder("minilm-onnx"), tmp_path / "hnsw", "HNSW16",
                     show_progress=False)
    ws = Workspace()
    refused = [
        (("bm25", {"index": str(tmp_path / "bm25"), "k1": 1.2}), "k1 is fixed when an index is built"),
        (("bm25", {"index": str(tmp_path / "bm25"), "b": 0.7, "stemmer": None}), "b, stemmer are fixed"),
        (("dense", {"index": str(tmp_path / "hnsw"), "factory": "Flat"}), "factory is fixed when an index is built"),
        (("dense", {"index": str(tmp_path / "hnsw"), "nprobe": 4}), "nprobe applies to IVF indexes (factory IVF1024"),
        (("dense", {"index": str(tmp_path / "hnsw"), "encoder": "minilm"}), "holds vectors of encoder 'minilm-onnx'"),
        (("dense", {"nprobe": 8}), "nprobe applies to IVF indexes .* this index is IndexFlat"),  # Flat by default
        (("dense", {"factory": "IVF16,Flat", "ef_search": 8}), "ef_search applies to HNSW indexes"),
    ]
    for (name, keys), message in refused:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
            load_pipeline(name, ws, **keys)
    same = load_pipeline("dense", ws, index=str(tmp_path / "hnsw"), encoder="minilm-onnx", ef_search=9, k=3)
    assert len(same.search("vitamin d deficiency", k=3)) == 3  # the index's own encoder may be named
    assert len(load_pipeline("bm25", ws, index=str(tmp_path / "bm25"), k=3).search(scifact_passages[0].text)) == 3


def test_a_cutoff_after_a_stage_may_open_a_branch(tmp_path, scifact_passages):
    """A fusion branch after a first stage sees its candidates, so a cutoff may open it (what the checks allow)."""
    BM25Index.build(scifact_passages[:80], tmp_path / "ix", show_progress=False)
    path = write(tmp_path, f"""
stages:
  - bm25: {{index: {tmp_path / 'ix'}, k: 20}}
  - fuse: {{method: weighted, branches: [[cutoff: {{k: 2}}], [cutoff: {{k: 5}}]]}}
""")
    hits = load_pipeline(path, Workspace()).search(scifact_passages[3].title, k=10)
    assert len(hits) == 5 and hits[0].id == scifact_passages[3].id


def test_fused_components_keep_every_branch_where_names_repeat(tmp_path, scifact_passages):
    """Before: two branches named bm25 shared one components key, so the second's score (None where it missed
    the hit) replaced the first's."""
    BM25Index.build(scifact_passages[:80], tmp_path / "ix", show_progress=False)
    path = write(tmp_path, f"""
stages:
  - fuse:
      method: weighted
      branches: [bm25: {{index: {tmp_path / 'ix'}}}, bm25: {{index: {tmp_path / 'ix'}, k: 1}}]
""")
    hits = load_pipeline(path, Workspace()).search(scifact_passages[3].title, k=3)
    assert set(hits[0].extras["components"]) == {"bm25#1", "bm25#2"}
    second = hits[1].extras["components"]
    assert second["bm25#1"] is not None and second["bm25#2"] is None  # the k=1 branch has the top hit only


def test_a_name_key_names_the_pipeline(tmp_path, scifact_passages):
    """`ws.pipeline("bm25", name="lex")` kept the name 'bm25' (only its inner stage was 'lex'), so two variants of one
    built-in clashed in an Experiment and a fusion's components read bm25#1 / bm25#2."""
    from sleuth.stages.fusion import Fuse

    BM25Index.build(scifact_passages[:40], tmp_path / "ix", show_progress=False)
    ws = Workspace()
    lex = ws.pipeline("bm25", index=str(tmp_path / "ix"), name="lex")
    top = ws.pipeline("bm25", index=str(tmp_path / "ix"), k=5, name="top5")
    assert (lex.name, top.name, ws.pipeline("bm25", index=str(tmp_path / "ix")).name) == ("lex", "top5", "bm25")
    hit = Fuse([lex, top]).search(scifact_passages[0].text, k=1)[0]
    assert set(hit.extras["components"]) == {"lex", "top5"}
