"""Expert sub-layers inside a HF BertModel: K parallel copies of a module (or K low-rank deltas over one frozen
module), one chosen per forward call.

``install_experts`` replaces, in the chosen layers, either the self-attention (variant "attention": each expert
has its own Q/K/V projections; the attention output projection, its LayerNorm and the FFN stay shared, as
"own Q/K/V projections" in the paper's description of the experts reads) or the FFN sub-layer (variant "ffn": each expert has its own
intermediate and output dense layers and the output LayerNorm). Every copy starts as an exact copy of the
pretrained module. Routing is hard: ``set_expert`` selects one expert for the whole batch (one skill per batch).

Variant "lora" (a mixture of LoRA experts): the backbone stays frozen and shared by every expert; each linear layer
named in :class:`LoraSpec` ``targets`` of the chosen layers gets, per expert, its own low-rank delta
``scaling * B_e A_e`` (Hu et al., ICLR 2022: A random, B zero, so a fresh expert equals the backbone). Experts listed
in ``frozen_experts`` get no delta: they read the backbone unchanged, so their outputs never change during training
and may be cached (the context side of the bi-encoder skills). Only the deltas are trained and saved (a few MB).
A rank-r delta costs only r (d_in + d_out) / (d_in d_out) of the layer's multiply-adds (4 % at rank 8 on MiniLM),
but on the CPU its two skinny products and the extra adds took 27 % of an int8 chain's time at the paper's limits
(they run in float32 beside the int8 layer). So inference models merge them: :func:`merge_lora_experts` swaps each
:class:`LoraExperts` for a :class:`MergedLoraExperts` of plain linear layers ``W + scaling B_e A_e`` (one per adapted
expert; the frozen layer itself for the others), which int8 quantisation then covers too. Training keeps the
deltas (only they are trained and saved).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch import nn

from sleuth.errors import ConfigError

VARIANTS = ("attention", "ffn", "none", "lora")
#: the linear layers of a BERT layer a LoRA expert may adapt, by short name -> path inside ``BertLayer``
LORA_MODULES = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
                "attention_output": "attention.output.dense", "intermediate": "intermediate.dense",
                "output": "output.dense"}


@dataclass(frozen=True)
class LoraSpec:
    """Rank, scaling and placement of the LoRA experts: ``targets`` (keys of :data:`LORA_MODULES`) in every expert
    layer; ``frozen_experts`` are expert ids without a delta (they read the backbone unchanged)."""

    rank: int = 8
    alpha: float = 16.0
    targets: tuple[str, ...] = ("query", "key", "value", "attention_output")
    frozen_experts: tuple[int, ...] = ()

    def check(self, num_experts: int) -> None:
        if not isinstance(self.rank, int) or isinstance(self.rank, bool) or self.rank < 1:
            raise ConfigError(f"lora rank must be an integer >= 1, got {self.rank!r}")
        if not isinstance(self.alpha, (int, float)) or isinstance(self.alpha, bool) or self.alpha <= 0:
            raise ConfigError(f"lora alpha must be a number > 0, got {self.alpha!r}")
        unknown = [t for t in self.targets if t not in LORA_MODULES]
        if unknown or not self.targets:
            raise ConfigError(f"lora targets must be among {', '.join(LORA_MODULES)}, got {list(self.targets)}")
        for expert in self.frozen_experts:
            if not isinstance(expert, int) or isinstance(expert, bool) or not 0 <= expert < num_experts:
                raise ConfigError(f"lora frozen expert {expert!r} is out of range: the model has {num_experts} experts")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {**data, "targets": list(self.targets), "frozen_experts": list(self.frozen_experts)}

    @classmethod
    def from_dict(cls, data: Any) -> LoraSpec:
        if not isinstance(data, dict) or set(data) - {"rank", "alpha", "targets", "frozen_experts"}:
            raise ConfigError("lora: expected an object with rank, alpha, targets and frozen_experts")
        return cls(rank=data.get("rank", 8), alpha=data.get("alpha", 16.0),
                   targets=tuple(data.get("targets", cls.targets)),
                   frozen_experts=tuple(data.get("frozen_experts", ())))


class ExpertSwitch(nn.Module):
    """K copies of a module; ``forward`` runs the copy at index ``active`` with the caller's arguments."""

    def __init__(self, module: nn.Module, num_experts: int):
        super().__init__()
        self.experts = nn.ModuleList(copy.deepcopy(module) for _ in range(num_experts))
        self.active = 0

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.experts[self.active](*args, **kwargs)


class LoraExperts(ExpertSwitch):
    """A frozen ``nn.Linear`` plus one low-rank delta per adapted expert; ``active`` picks the expert of the next
    forward call (an expert without a delta gets the frozen layer's output). A kind of :class:`ExpertSwitch` (code
    that collects a model's switches finds both), holding deltas instead of copies."""

    def __init__(self, base: nn.Linear, num_experts: int, rank: int, alpha: float,
                 frozen_experts: Sequence[int] = ()):
        nn.Module.__init__(self)  # no copies of ``base``: one frozen layer, K deltas
        self.base = base
        for param in base.parameters():
            param.requires_grad_(False)
        self.num_experts, self.scaling, self.active = num_experts, alpha / rank, 0
        adapted = [str(e) for e in range(num_experts) if e not in set(frozen_experts)]
        self.lora_a = nn.ParameterDict({e: nn.Parameter(torch.empty(rank, base.in_features)) for e in adapted})
        self.lora_b = nn.ParameterDict({e: nn.Parameter(torch.zeros(base.out_features, rank)) for e in adapted})
        for a in self.lora_a.values():
            nn.init.kaiming_uniform_(a, a=math.sqrt(5))  # as peft and the LoRA paper's code

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.base(x)
        key = str(self.active)
        if key not in self.lora_a:
            return out
        return out + (x @ self.lora_a[key].T) @ self.lora_b[key].T * self.scaling

    def delta(self, expert: int) -> torch.Tensor | None:
        """The expert's weight delta ``scaling * B A`` (out, in), None for an expert without one."""
        key = str(expert)
        return self.lora_b[key] @ self.lora_a[key] * self.scaling if key in self.lora_a else None

    def merged(self, expert: int) -> nn.Linear:
        """The expert as one plain linear layer, weight ``W + scaling B A`` (the frozen layer itself when the
        expert has no delta)."""
        delta = self.delta(expert)
        if delta is None:
            return self.base
        layer = copy.deepcopy(self.base)
        with torch.no_grad():
            layer.weight.copy_(self.base.weight + delta)
        return layer.requires_grad_(False)


def install_experts(bert: nn.Module, variant: str, num_experts: int, layers: list[int],
                    lora: LoraSpec | None = None) -> list[Any]:
    """Replace sub-layers of ``bert.encoder.layer[i]`` for ``i`` in ``layers`` by switches (:class:`ExpertSwitch`,
    or :class:`LoraExperts` for the "lora" variant, whose backbone is then frozen); return the switches."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown expert variant '{variant}': use one of {', '.join(VARIANTS)}")
    encoder: Any = bert.encoder
    blocks = encoder.layer  # a ModuleList of transformers' BertLayer
    switches: list[Any] = []
    if variant == "none":
        return switches
    for index in layers:
        if not 0 <= index < len(blocks):
            raise ConfigError(f"expert layer {index} is out of range: the backbone has {len(blocks)} layers")
        block: Any = blocks[index]
        if variant == "lora":
            continue
        if variant == "attention":
            block.attention.self = ExpertSwitch(block.attention.self, num_experts)
            switches.append(block.attention.self)
        else:
            block.intermediate = ExpertSwitch(block.intermediate, num_experts)
            block.output = ExpertSwitch(block.output, num_experts)
            switches += [block.intermediate, block.output]
    if variant == "lora":
        spec = lora or LoraSpec()
        spec.check(num_experts)
        for param in bert.parameters():
            param.requires_grad_(False)
        for index in layers:
            for target in spec.targets:
                parent_path, _, name = LORA_MODULES[target].rpartition(".")
                parent = blocks[index].get_submodule(parent_path)
                switch = LoraExperts(getattr(parent, name), num_experts, spec.rank, spec.alpha, spec.frozen_experts)
                setattr(parent, name, switch)
                switches.append(switch)
    return switches


class MergedLoraExperts(ExpertSwitch):
    """The inference form of :class:`LoraExperts`: the frozen layer plus one merged layer ``W + scaling B_e A_e``
    per adapted expert, each held once (``layers``); ``route[e]`` is expert e's layer, ``active`` picks as for any
    switch."""

    def __init__(self, lora: LoraExperts):
        nn.Module.__init__(self)  # no copies per expert: the experts without a delta share the frozen layer
        adapted = sorted(lora.lora_a, key=int)
        self.layers = nn.ModuleList([lora.base] + [lora.merged(int(e)) for e in adapted])
        self.route = [adapted.index(str(e)) + 1 if str(e) in lora.lora_a else 0 for e in range(lora.num_experts)]
        self.num_experts, self.active = lora.num_experts, 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers[self.route[self.active]](x)


def merge_lora_experts(bert: nn.Module) -> list[ExpertSwitch]:
    """Replace, in place, every :class:`LoraExperts` of ``bert`` by a :class:`MergedLoraExperts` of linear layers
    (:meth:`LoraExperts.merged`): the same outputs up to float rounding, faster, for inference only (the deltas are
    gone). Returns the model's switches, in module order, for :func:`set_expert`."""
    for name, module in list(bert.named_modules()):
        if isinstance(module, LoraExperts):
            parent_name, _, attribute = name.rpartition(".")
            setattr(bert.get_submodule(parent_name), attribute, MergedLoraExperts(module))
    return [m for m in bert.modules() if isinstance(m, ExpertSwitch)]


def expert_count(switch: Any) -> int:
    """Number of experts of a switch (:class:`ExpertSwitch`, :class:`LoraExperts` or :class:`MergedLoraExperts`)."""
    return switch.num_experts if isinstance(switch, (LoraExperts, MergedLoraExperts)) else len(switch.experts)


def set_expert(switches: Sequence[Any], expert: int) -> None:
    """Route the next forward call through expert ``expert`` in every expert layer."""
    for switch in switches:
        if not 0 <= expert < expert_count(switch):
            raise ConfigError(f"expert id {expert} is out of range: the model has {expert_count(switch)} experts")
        switch.active = expert
