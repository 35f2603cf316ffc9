"""The Chain-of-Skills multi-expert encoder: expert initialisation, hard routing, variants, save/load, errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModel

from sleuth.errors import ConfigError, SleuthError
from sleuth.models.registry import minilm_path
from sleuth.systems.chain_of_skills.experts import set_expert
from sleuth.systems.chain_of_skills.model import CONFIG_FILE, WEIGHTS_FILE, MultiExpertConfig, MultiExpertEncoder
from sleuth.systems.chain_of_skills.skills import DEFAULT_ROUTES, SkillRouting

TEXTS = ["Who wrote the novel Dune?", "Deep learning is a branch of machine learning based on neural networks.",
         "Paris"]
TINY = Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model"


def base_states(path: Path, model: MultiExpertEncoder, texts=TEXTS) -> torch.Tensor:
    """Last hidden states of the plain pretrained BertModel on the same tokenised batch."""
    base = AutoModel.from_pretrained(path, add_pooling_layer=False).eval()
    batch = model.tokenize(texts)
    with torch.no_grad():
        return base(**batch).last_hidden_state


def states(model: MultiExpertEncoder, expert: int, texts=TEXTS, layer: int | None = None) -> torch.Tensor:
    """Output of ``model`` routed to ``expert``: the last layer, or hidden state ``layer`` (0 = embeddings)."""
    batch = model.tokenize(texts)
    set_expert(model.switches, expert)
    with torch.no_grad():
        output = model.bert(**batch, output_hidden_states=True)
    return output.last_hidden_state if layer is None else output.hidden_states[layer]


def perturb(model: MultiExpertEncoder, expert: int, seed: int = 0) -> None:
    """Add noise to every weight of one expert in every expert layer."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for switch in model.switches:
            for param in switch.experts[expert].parameters():
                param.add_(0.05 * torch.randn(param.shape, generator=generator))


def param_count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_fresh_experts_equal_pretrained_minilm():
    model = MultiExpertEncoder.from_backbone("minilm")
    assert model.config.expert_layers == (1, 3, 5) and model.config.num_experts == 6
    reference = base_states(minilm_path(), model)
    for expert in range(6):
        assert torch.equal(states(model, expert), reference), expert


@pytest.mark.parametrize("variant", ["attention", "ffn"])
def test_perturbing_one_expert_changes_only_that_expert(variant):
    model = MultiExpertEncoder.from_backbone(TINY, MultiExpertConfig(variant=variant))
    reference = base_states(TINY, model)
    before_layer1 = states(model, 0, layer=1)
    perturb(model, 2)
    for expert in range(6):
        changed = not torch.equal(states(model, expert), reference)
        assert changed == (expert == 2), (variant, expert)
        # layer 0 is shared: its output is the same whichever expert is routed
        assert torch.equal(states(model, expert, layer=1), before_layer1)


def test_routing_picks_the_expert_of_each_skill_and_side():
    model = MultiExpertEncoder.from_backbone(TINY)
    expected = {("retrieval", "query"): 0, ("retrieval", "context"): 1, ("expanded", "query"): 4,
                ("expanded", "context"): 1, ("linking", "query"): 2, ("linking", "context"): 3,
                ("reranking", "query"): 4, ("span", "query"): 5}
    for (skill, side), expert in expected.items():
        assert model.expert_for(skill, side) == expert
    fresh = {(skill, side): model.encode(TEXTS, skill, side) for skill, side in expected}
    perturb(model, 4)
    for (skill, side), expert in expected.items():
        same = np.array_equal(model.encode(TEXTS, skill, side), fresh[(skill, side)])
        assert same == (expert != 4), (skill, side)
    with pytest.raises(ConfigError, match="unknown skill 'nope'"):
        model.encode(TEXTS, "nope")
    with pytest.raises(ConfigError, match="unknown side"):
        model.expert_for("retrieval", "passage")


def test_routing_table_is_configurable_and_serialisable():
    default = SkillRouting()
    assert default.routes == DEFAULT_ROUTES and default.max_expert == 5
    assert SkillRouting.from_dict(json.loads(json.dumps(default.to_dict()))) == default
    custom = SkillRouting({"retrieval": (0, 0), "naive_expanded": [0, 1]})
    assert custom.expert("naive_expanded", "context") == 1 and custom.skills == ["retrieval", "naive_expanded"]
    for bad in ({}, {"retrieval": (0,)}, {"retrieval": (0, -1)}, {"": (0, 1)}, {"retrieval": (0, True)}):
        with pytest.raises(ConfigError, match="routing table"):
            SkillRouting(bad)
    with pytest.raises(ConfigError, match="needs exactly the keys"):
        SkillRouting.from_dict({"retrieval": {"query": 0}})
    with pytest.raises(ConfigError, match="skill .expanded. uses expert 4 but the model has only 3 experts"):
        MultiExpertEncoder.from_backbone(TINY, MultiExpertConfig(num_experts=3))


def test_no_expert_variant_equals_the_base_model():
    model = MultiExpertEncoder.from_backbone(TINY, MultiExpertConfig.no_expert())
    base = AutoModel.from_pretrained(TINY, add_pooling_layer=False)
    assert model.switches == [] and param_count(model.bert) == param_count(base)
    reference = base_states(TINY, model)
    for skill, side in [("retrieval", "query"), ("linking", "context"), ("span", "query")]:
        assert model.expert_for(skill, side) == 0
        assert np.array_equal(model.encode(TEXTS, skill, side), reference[:, 0].numpy())
    with pytest.raises(ConfigError, match="'none'"):
        MultiExpertEncoder.from_backbone(TINY, MultiExpertConfig(variant="none"))


@pytest.mark.parametrize("variant", ["attention", "ffn"])
def test_expert_layers_add_exactly_k_minus_1_copies(variant):
    model = MultiExpertEncoder.from_backbone("minilm", MultiExpertConfig(variant=variant))
    base = AutoModel.from_pretrained(minilm_path(), add_pooling_layer=False)
    d, inner = 384, 1536  # all-MiniLM-L6-v2: hidden 384, intermediate 1536, 6 layers
    attention = 3 * (d * d + d)  # Q, K, V projections with biases
    ffn = (d * inner + inner) + (inner * d + d) + 2 * d  # intermediate, output dense, output LayerNorm
    per_copy = attention if variant == "attention" else ffn
    assert param_count(model.bert) - param_count(base) == 3 * 5 * per_copy


def test_pooling_and_token_states():
    model = MultiExpertEncoder.from_backbone(TINY, MultiExpertConfig(pooling="mean"))
    reference = base_states(TINY, model)
    mask = model.tokenize(TEXTS)["attention_mask"].unsqueeze(-1).float()
    expected = ((reference * mask).sum(1) / mask.sum(1)).numpy()
    vectors = model.encode(TEXTS, "retrieval", batch_size=2)
    assert vectors.shape == (3, 128) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)
    assert model.encode([], "retrieval").shape == (0, 128)
    rows = model.token_states(TEXTS, "span")
    assert [len(r.tokens) for r in rows] == mask.sum(1).squeeze(-1).int().tolist()
    first = rows[0]
    assert first.tokens[0] == "[CLS]" and first.tokens[-1] == "[SEP]" and first.states.shape == (len(first.tokens), 128)
    start, end = first.offsets[first.tokens.index("dune")]
    assert TEXTS[0][start:end] == "Dune"
    np.testing.assert_array_equal(first.states, reference[0, :len(first.tokens)].numpy())
    pair = model.token_states([("who wrote dune", "Dune is a novel")], "reranking")[0]
    assert pair.tokens.count("[SEP]") == 2
    with pytest.raises(SleuthError, match="all single texts or all"):
        model.encode(["a", ("b", "c")], "reranking")


@pytest.mark.parametrize("variant", ["attention", "ffn"])
def test_save_load_round_trip(tmp_path, variant):
    routing = SkillRouting({**DEFAULT_ROUTES, "naive_expanded": (0, 1)})
    model = MultiExpertEncoder.from_backbone(TINY, MultiExpertConfig(variant=variant, routing=routing))
    perturb(model, 3)
    model.save(tmp_path / "cos")
    for name in (CONFIG_FILE, WEIGHTS_FILE, "config.json", "tokenizer.json"):
        assert (tmp_path / "cos" / name).is_file()
    loaded = MultiExpertEncoder.load(tmp_path / "cos", device="cpu")
    assert loaded.config == model.config
    for skill, side in [("linking", "context"), ("retrieval", "query"), ("naive_expanded", "query")]:
        assert np.array_equal(loaded.encode(TEXTS, skill, side), model.encode(TEXTS, skill, side))


def _corrupt(directory: Path, **changes) -> None:
    data = json.loads((directory / CONFIG_FILE).read_text())
    data.update(changes)
    (directory / CONFIG_FILE).write_text(json.dumps(data))


@pytest.mark.parametrize("changes, message", [
    ({"variant": "moe"}, "unknown expert variant 'moe'"),
    ({"expert_layers": [7]}, "expert layer 7 is out of range: the backbone has 2 layers"),
    ({"expert_layers": [0]}, "does not match cos_config.json"),
    ({"num_experts": 4}, "skill 'expanded' uses expert 4 but the model has only 4 experts"),
    ({"pooling": "max"}, "unknown pooling 'max'"),
    ({"gate": "soft"}, "unknown keys ['gate']"),
    ({"format": "other/1"}, "format is 'other/1'"),
    ({"routing": {"retrieval": [0, 1]}}, "needs exactly the keys 'query' and 'context'"),
])
def test_bad_saved_config_gives_one_line_error(tmp_path, changes, message):
    MultiExpertEncoder.from_backbone(TINY).save(tmp_path)
    _corrupt(tmp_path, **changes)
    with pytest.raises(SleuthError) as caught:
        MultiExpertEncoder.load(tmp_path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_missing_or_unreadable_files_give_one_line_errors(tmp_path):
    with pytest.raises(SleuthError, match="cos_config.json is missing"):
        MultiExpertEncoder.load(tmp_path)
    MultiExpertEncoder.from_backbone(TINY).save(tmp_path)
    (tmp_path / CONFIG_FILE).write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        MultiExpertEncoder.load(tmp_path)
    MultiExpertEncoder.from_backbone(TINY).save(tmp_path)
    (tmp_path / WEIGHTS_FILE).write_bytes(b"garbage")
    with pytest.raises(SleuthError, match="unreadable weights") as caught:
        MultiExpertEncoder.load(tmp_path)
    assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="neither minilm .* nor a model folder"):
        MultiExpertEncoder.from_backbone(tmp_path / "absent")
