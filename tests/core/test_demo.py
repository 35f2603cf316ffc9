"""`sleuth demo`'s pipelines: dense and hybrid use the int8 ONNX MiniLM, with its own cached index."""

from __future__ import annotations

from sleuth.cli.demo_cmd import DEMO_ENCODER, demo_pipelines
from sleuth.pipelines.config import read_config
from sleuth.pipelines.workspace import CorpusSource, Workspace


def test_demo_pipelines_share_one_onnx_index_with_its_own_cache_key(tmp_path, scifact_jsonl, scifact_rows):
    small = tmp_path / "small.jsonl"
    small.write_text("".join(scifact_jsonl.read_text().splitlines(keepends=True)[:40]))
    ws = Workspace(CorpusSource(small, "jsonl"), home=tmp_path / "home", show_progress=False)
    stages = demo_pipelines(ws)
    assert list(stages) == ["bm25", "dense", "hybrid"] and [s.name for s in stages.values()] == list(stages)
    cached = ws.index_dir(Workspace.dense_key(DEMO_ENCODER))
    manifest = ws.dense(DEMO_ENCODER).manifest
    assert (cached / "manifest.json").is_file() and manifest.encoder["name"] == DEMO_ENCODER
    assert manifest.encoder["max_length"] == 256
    assert not ws.index_dir(Workspace.dense_key("minilm")).exists()  # the torch index is neither built nor reused
    for name in ("bm25", "dense", "hybrid"):  # the shipped YAML pipelines, with the demo's depth and encoder
        assert stages[name].description == read_config(name)["description"]
    for name in ("dense", "hybrid"):
        assert stages[name].search(scifact_rows[7]["title"], k=3)[0].id == scifact_rows[7]["_id"]


def test_demo_names_a_bad_encoder_as_its_option(sleuth):
    """Before: "<site-packages>/sleuth/pipelines/builtin/dense.yaml, stage 1 'dense': unknown encoder 'nosuch'", a
    file the user never wrote, after BM25 had been built and searched."""
    result = sleuth("demo", "--encoder", "nosuch")
    assert result.returncode == 2 and result.stderr.strip() == (
        "error: --encoder: unknown encoder 'nosuch': use one of minilm, minilm-onnx, minilm-onnx-128 or a model path")
