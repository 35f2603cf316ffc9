"""LoRA experts (the "lora" variant): a fresh model equals its backbone, each expert's deltas change only that
expert, frozen experts read the backbone, and the adapter format (deltas only, marker, card) round-trips exactly."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel

from sleuth.errors import ConfigError, SleuthError
from sleuth.models.adapters import adapter_bytes, adapter_info, is_adapter
from sleuth.systems.chain_of_skills.experts import LoraExperts, LoraSpec
from sleuth.systems.chain_of_skills.model import (
    ADAPTER_FILE,
    CONFIG_FILE,
    WEIGHTS_FILE,
    MultiExpertConfig,
    MultiExpertEncoder,
)

TEXTS = ["Who wrote the novel Dune?", "Deep learning is a branch of machine learning based on neural networks.",
         "Paris"]
TINY = Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model"
SIDES = [("retrieval", "query"), ("retrieval", "context"), ("linking", "query"), ("linking", "context"),
         ("expanded", "query"), ("span", "query")]


def lora_model(backbone=TINY, frozen=(1, 3), targets: tuple[str, ...] | None = None, **options) -> MultiExpertEncoder:
    spec = LoraSpec(frozen_experts=frozen) if targets is None else LoraSpec(frozen_experts=frozen, targets=targets)
    config = MultiExpertConfig(variant="lora", lora=spec, pooling="mean", **options)
    return MultiExpertEncoder.from_backbone(backbone, config)


def perturb(model: MultiExpertEncoder, expert: int | None = None, seed: int = 0) -> None:
    """Random B matrices (a fresh LoRA has B = 0) for one expert, or all."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.bert.named_parameters():
            if ".lora_b." in name and (expert is None or name.endswith(f".lora_b.{expert}")):
                param.copy_(0.05 * torch.randn(param.shape, generator=generator))


def test_fresh_lora_model_equals_the_backbone_and_trains_only_the_deltas():
    model = lora_model()
    base = AutoModel.from_pretrained(TINY, add_pooling_layer=False).eval()
    batch = model.tokenize(TEXTS)
    with torch.no_grad():
        states = base(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    reference = ((states * mask).sum(1) / mask.sum(1)).numpy()
    for skill, side in SIDES:
        np.testing.assert_allclose(model.encode(TEXTS, skill, side), reference, rtol=1e-5, atol=1e-6)
    trainable = [name for name, p in model.bert.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_" in name for name in trainable)
    # 2 layers x 4 targets, deltas for the 4 experts that are not frozen (1 and 3 read the backbone)
    switches = [m for m in model.bert.modules() if isinstance(m, LoraExperts)]
    assert len(switches) == 8 and all(sorted(s.lora_a) == ["0", "2", "4", "5"] for s in switches)
    assert model.frozen_side("retrieval", "context") and model.frozen_side("linking", "context")
    assert not model.frozen_side("retrieval", "query") and not model.frozen_side("span", "query")


def test_one_experts_deltas_change_only_that_expert():
    model = lora_model()
    fresh = {key: model.encode(TEXTS, *key) for key in SIDES}
    perturb(model, expert=2)
    for skill, side in SIDES:
        changed = not np.array_equal(model.encode(TEXTS, skill, side), fresh[(skill, side)])
        assert changed == (model.expert_for(skill, side) == 2), (skill, side)


def test_adapter_save_load_round_trips_exactly(tmp_path):
    model = lora_model(expert_layers=(1,))
    perturb(model)
    model.save(tmp_path / "cos", card="# card\n")
    files = sorted(p.name for p in (tmp_path / "cos").iterdir())
    assert files == sorted([CONFIG_FILE, ADAPTER_FILE, "sleuth-adapter.json", "README.md"])
    assert is_adapter(tmp_path / "cos") and not (tmp_path / "cos" / WEIGHTS_FILE).exists()
    assert adapter_info(tmp_path / "cos")["backbone"] == str(TINY.resolve())
    loaded = MultiExpertEncoder.load(tmp_path / "cos")
    assert loaded.config == model.config and loaded.config.expert_layers == (1,)
    for skill, side in SIDES + [("reranking", "query")]:
        assert np.array_equal(loaded.encode(TEXTS, skill, side), model.encode(TEXTS, skill, side)), (skill, side)
    # saving again over the same directory swaps it atomically and gives the same bytes
    before = (tmp_path / "cos" / ADAPTER_FILE).read_bytes()
    loaded.save(tmp_path / "cos")
    assert (tmp_path / "cos" / ADAPTER_FILE).read_bytes() == before


def test_adapter_of_minilm_is_small_and_names_the_packaged_backbone(tmp_path):
    model = lora_model("minilm", expert_layers=(2, 3, 4, 5))
    model.save(tmp_path / "cos")
    assert adapter_info(tmp_path / "cos")["backbone"] == "minilm"
    # 4 layers x (Q, K, V, attention output) x 4 experts x rank 8 x (384 + 384) float32
    assert (tmp_path / "cos" / ADAPTER_FILE).stat().st_size == pytest.approx(4 * 4 * 4 * 8 * 768 * 4, rel=0.01)
    assert adapter_bytes(tmp_path / "cos") < 2_000_000


def test_bad_adapters_give_one_line_errors(tmp_path):
    model = lora_model()
    model.save(tmp_path / "a")
    config = json.loads((tmp_path / "a" / CONFIG_FILE).read_text())
    config["lora"]["rank"] = 4
    (tmp_path / "a" / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(SleuthError, match="tensor .* has shape") as caught:
        MultiExpertEncoder.load(tmp_path / "a")
    assert "\n" not in str(caught.value)
    config["lora"] = {"rank": 8, "frozen_experts": [9]}
    (tmp_path / "a" / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(ConfigError, match="frozen expert 9 is out of range"):
        MultiExpertEncoder.load(tmp_path / "a")
    model.save(tmp_path / "b")
    (tmp_path / "b" / ADAPTER_FILE).write_bytes(b"garbage")
    with pytest.raises(SleuthError, match="unreadable weights"):
        MultiExpertEncoder.load(tmp_path / "b")
    with pytest.raises(ConfigError, match="lora targets"):
        lora_model(frozen=()).config.lora.__class__(targets=("pooler",)).check(6)
    with pytest.raises(ConfigError, match="needs the 'lora' variant"):
        MultiExpertEncoder.from_backbone(TINY, MultiExpertConfig(variant="attention", lora=LoraSpec()))


def test_inference_copy_merges_the_deltas_and_gives_the_same_vectors(tmp_path):
    model = lora_model(targets=("query", "value", "intermediate", "output"))
    perturb(model)
    merged = model.for_inference()
    assert merged is not model and merged.bert is not model.bert and merged.tokenizer is model.tokenizer
    assert not any(isinstance(m, LoraExperts) for m in merged.bert.modules())
    assert len(merged.switches) == len(model.switches) == 8  # 2 layers x 4 targets, now plain linear layers
    for skill, side in SIDES + [("reranking", "query")]:
        expected = model.encode(TEXTS, skill, side)
        actual = merged.encode(TEXTS, skill, side)
        np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)
        if model.expert_for(skill, side) not in (1, 3):  # the deltas really were folded in, not dropped
            assert not np.allclose(actual, lora_model().encode(TEXTS, skill, side), atol=1e-3), (skill, side)
    assert any(isinstance(m, LoraExperts) for m in model.bert.modules())  # the model itself keeps its deltas
    with pytest.raises(SleuthError, match="inference copy .* cannot be saved"):
        merged.save(tmp_path / "merged")
    model.save(tmp_path / "kept")  # the model it was made from still saves its adapter
    assert merged.for_inference() is merged and MultiExpertEncoder.from_backbone(TINY).for_inference() is not None


def test_int8_copy_of_a_lora_model_quantises_the_merged_experts():
    from torch.ao.nn.quantized.dynamic import Linear as QuantisedLinear

    from sleuth.systems.chain_of_skills.quantise import quantise

    model = lora_model()
    perturb(model)
    merged, unmerged = quantise(model), quantise(model, merge=False)
    for int8 in (merged, unmerged):
        for skill, side in SIDES:
            reference, quantised = model.encode(TEXTS, skill, side), int8.encode(TEXTS, skill, side)
            cosines = (reference * quantised).sum(1) / np.linalg.norm(reference, axis=1) / np.linalg.norm(
                quantised, axis=1)
            assert cosines.min() > 0.95, (skill, side, cosines)
    # merged: the expert switches hold quantised layers; unmerged: the deltas stay float32 beside the frozen layer
    assert all(isinstance(layer, QuantisedLinear) for s in merged.switches for layer in s.layers)
    assert all(isinstance(s, LoraExperts) and isinstance(s.base, QuantisedLinear) for s in unmerged.switches)
