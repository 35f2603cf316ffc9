"""Int8 inference copy of a multi-expert encoder: torch dynamic quantisation of the ``nn.Linear`` layers (int8
weights, activations quantised per batch on the fly), CPU only. The FFN output projection (1536 -> 384, whose GELU
inputs have the widest range) stays float32, as do embeddings, LayerNorm, softmax and the span head (why, measured:
docs/cos/README.md, section "Latency ... before and after the chain speed-ups", item "int8"). The original model is
left untouched; the copy shares its tokenizer and routing table.
"""

from __future__ import annotations

import copy
from typing import Any

from sleuth.errors import SleuthError


def quantise(model: Any, merge: bool = True) -> Any:
    """An int8 copy of ``model`` (a ``MultiExpertEncoder`` on the CPU) for inference: same API, same experts.
    LoRA deltas are first merged into per-expert layers (``MultiExpertEncoder.for_inference``), which are then
    quantised too; ``merge=False`` keeps them as float32 products beside the quantised frozen layer (slower)."""
    import torch

    from sleuth.models.quiet import quiet_quantisation
    from sleuth.systems.chain_of_skills.experts import ExpertSwitch

    if str(model.device) != "cpu":
        raise SleuthError(f"int8 dynamic quantisation runs on the CPU only, the model is on {model.device}")
    if merge:
        model = model.for_inference()
    bert = copy.deepcopy(model.bert)
    with quiet_quantisation():
        bert = torch.ao.quantization.quantize_dynamic(bert, quantised_linears(bert), dtype=torch.qint8)
    quantised = copy.copy(model)
    quantised.bert = bert.eval()
    quantised.switches = [m for m in bert.modules() if isinstance(m, ExpertSwitch)]
    return quantised


def quantised_linears(bert: Any) -> set[str]:
    """Names of the linear layers to quantise: all but the FFN output projections (``BertOutput.dense``, inside
    expert copies too). Where LoRA experts adapt that projection (the shipped model's layers 2-5), it is an expert
    switch, not a plain layer, and its layers are quantised (as its frozen layer was before merging)."""
    from torch import nn

    kept = {id(m.dense) for m in bert.modules() if type(m).__name__ == "BertOutput"}
    return {name for name, m in bert.named_modules() if isinstance(m, nn.Linear) and id(m) not in kept}


def is_quantised(model: Any) -> bool:
    """True when the model's linear layers are dynamically quantised."""
    from torch.ao.nn.quantized.dynamic import Linear

    return any(isinstance(m, Linear) for m in model.bert.modules())
