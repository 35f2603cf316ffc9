"""`cos train --seed` repeats a run from a fresh model: the LoRA experts' initialisation is seeded (before, it ran
before the seed was set, so two runs of one seed differed by up to .10 in the adapter's weights)."""

from __future__ import annotations

from dataclasses import fields

import torch

from sleuth.systems.chain_of_skills.train_cli import ModelOptions, initial_model


def lora_weights(model) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in model.bert.state_dict().items() if "lora" in name}


def test_a_fresh_models_experts_start_alike_for_one_seed():
    defaults = {field.name: field.default.default for field in fields(ModelOptions)}  # the typer defaults
    options = ModelOptions(**{**defaults, "variant": "lora"})
    first, _ = initial_model(options, "cpu", 13)
    torch.rand(10)  # whatever ran before
    second, _ = initial_model(options, "cpu", 13)
    other, _ = initial_model(options, "cpu", 14)
    a, b, c = lora_weights(first), lora_weights(second), lora_weights(other)
    assert a and a.keys() == b.keys()
    assert all(torch.equal(a[name], b[name]) for name in a)
    assert any(not torch.equal(a[name], c[name]) for name in a)
