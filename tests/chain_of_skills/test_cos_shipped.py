"""The trained Chain-of-Skills model shipped in the package: an adapter of at most 5 MB over the packaged MiniLM with
its span head and model card, in the wheel's package data, loaded by default by the cos stages and commands (and
different from the untrained model, which "minilm" still gives)."""

from __future__ import annotations

import re
import tomllib

import numpy as np
import pytest

from sleuth.models.adapters import adapter_bytes, adapter_info, is_adapter
from sleuth.systems.chain_of_skills.model import (
    ADAPTER_FILE,
    SHIPPED_MODEL,
    MultiExpertEncoder,
    load_model,
    model_path,
    shipped_model_dir,
)
from sleuth.systems.chain_of_skills.span_head import SPAN_HEAD_FILE, load_span_head

TEXTS = ["Which magazine was started first, Arthur's Magazine or First for Women?",
         "Arthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia."]


def test_shipped_model_is_a_small_adapter_with_a_model_card():
    path = shipped_model_dir()
    assert path.name == SHIPPED_MODEL and is_adapter(path)
    assert adapter_info(path)["backbone"] == "minilm"
    assert (path / ADAPTER_FILE).is_file() and (path / SPAN_HEAD_FILE).is_file()
    assert adapter_bytes(path) <= 5_000_000
    card = (path / "README.md").read_text(encoding="utf-8")
    for section in ("## Data", "## Training", "## Reproduce", "## Measured"):
        assert section in card, section
    assert re.search(r"sleuth cos train .*--variant lora", card)


def test_package_data_ships_the_weights():
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["sleuth"]
    assert "systems/chain_of_skills/weights/*/*" in patterns


def test_default_model_is_the_shipped_one_and_differs_from_untrained():
    assert model_path(None) == model_path(SHIPPED_MODEL) == str(shipped_model_dir())
    assert model_path("minilm") == "minilm"
    shipped = load_model(None)
    assert shipped.config.variant == "lora" and any(
        float(v.abs().max()) > 0 for k, v in shipped.adapter_state().items() if ".lora_b." in k)
    untrained = load_model("minilm")
    assert untrained.config.variant == "attention"
    assert not np.allclose(shipped.encode(TEXTS, "retrieval"), untrained.encode(TEXTS, "retrieval"), atol=1e-3)
    head = load_span_head(shipped_model_dir(), shipped.dim)
    assert head is not None
    merged = shipped.for_inference()  # what the pipelines and `sleuth cos eval` run: deltas merged per expert
    for skill in ("retrieval", "expanded", "linking", "span"):
        np.testing.assert_allclose(merged.encode(TEXTS, skill), shipped.encode(TEXTS, skill), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_default_cos_pipeline_loads_the_shipped_weights(data_dir, tmp_path):
    import json

    import torch

    from sleuth.corpus.hotpotqa import hotpotqa_context_documents
    from sleuth.pipelines.config import load_pipeline
    from sleuth.pipelines.workspace import CorpusSource, Workspace

    docs = list(hotpotqa_context_documents(data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"))[:10]
    (tmp_path / "corpus.json").write_text(json.dumps({d.id: d.metadata["sentences"] for d in docs}))
    ws = Workspace(CorpusSource(tmp_path / "corpus.json", format="hotpotqa"), home=tmp_path, show_progress=False)
    pipeline = load_pipeline("cos-hotpotqa", ws)
    stage = pipeline.stages[0]  # the one cos_chain stage, wrapped under the pipeline's name
    model = stage.retrieve.model
    reference = MultiExpertEncoder.load(shipped_model_dir())
    assert model.inference_only and not reference.inference_only  # the pipeline runs the merged inference copy
    for skill in ("retrieval", "expanded", "reranking", "linking", "span"):
        np.testing.assert_allclose(model.encode(TEXTS, skill), reference.encode(TEXTS, skill), rtol=1e-4, atol=1e-5)
    head = load_span_head(shipped_model_dir(), model.dim)
    assert all(torch.equal(v, stage.link.span_head.state_dict()[k]) for k, v in head.state_dict().items())


def test_shipped_retrieval_and_linking_read_passages_through_the_same_weights():
    """Experts 1 (retrieval's context side) and 3 (linking's) carry no LoRA deltas in the shipped model: both are
    the frozen backbone, so one index serves both skills (``shares_context``); an untrained model's attention
    experts are separate copies, so it keeps two."""
    from sleuth.systems.chain_of_skills.model import model_config

    shipped = load_model(None)
    assert model_config(None).shares_context("linking", "retrieval") and shipped.config == model_config(None)
    assert not model_config("minilm").shares_context("linking", "retrieval")
    assert not model_config(None).shares_context("reranking", "retrieval")
    for model in (shipped, shipped.for_inference()):
        np.testing.assert_array_equal(model.encode(TEXTS, "retrieval", "context"),
                                      model.encode(TEXTS, "linking", "context"))
