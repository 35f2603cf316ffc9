"""Expert sub-layers inside a HF BertModel: K parallel copies of a module, one chosen per forward call.

``install_experts`` replaces, in the chosen layers, either the self-attention (variant "attention": each expert
has its own Q/K/V projections; the attention output projection, its LayerNorm and the FFN stay shared, as
"own Q/K/V projections" in the paper's description of the experts reads) or the FFN sub-layer (variant "ffn": each expert has its own
intermediate and output dense layers and the output LayerNorm). Every copy starts as an exact copy of the
pretrained module. Routing is hard: ``set_expert`` selects one expert for the whole batch (one skill per batch).
"""

from __future__ import annotations

import copy
from typing import Any

from torch import nn

from sleuth.errors import ConfigError

VARIANTS = ("attention", "ffn", "none")


class ExpertSwitch(nn.Module):
    """K copies of a module; ``forward`` runs the copy at index ``active`` with the caller's arguments."""

    def __init__(self, module: nn.Module, num_experts: int):
        super().__init__()
        self.experts = nn.ModuleList(copy.deepcopy(module) for _ in range(num_experts))
        self.active = 0

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.experts[self.active](*args, **kwargs)


def install_experts(bert: nn.Module, variant: str, num_experts: int, layers: list[int]) -> list[ExpertSwitch]:
    """Replace sub-layers of ``bert.encoder.layer[i]`` for ``i`` in ``layers`` by switches; return the switches."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown expert variant '{variant}': use one of {', '.join(VARIANTS)}")
    encoder: Any = bert.encoder
    blocks = encoder.layer  # a ModuleList of transformers' BertLayer
    switches: list[ExpertSwitch] = []
    if variant == "none":
        return switches
    for index in layers:
        if not 0 <= index < len(blocks):
            raise ConfigError(f"expert layer {index} is out of range: the backbone has {len(blocks)} layers")
        block: Any = blocks[index]
        if variant == "attention":
            block.attention.self = ExpertSwitch(block.attention.self, num_experts)
            switches.append(block.attention.self)
        else:
            block.intermediate = ExpertSwitch(block.intermediate, num_experts)
            block.output = ExpertSwitch(block.output, num_experts)
            switches += [block.intermediate, block.output]
    return switches


def set_expert(switches: list[ExpertSwitch], expert: int) -> None:
    """Route the next forward call through expert ``expert`` in every expert layer."""
    for switch in switches:
        if not 0 <= expert < len(switch.experts):
            raise ConfigError(f"expert id {expert} is out of range: the model has {len(switch.experts)} experts")
        switch.active = expert
