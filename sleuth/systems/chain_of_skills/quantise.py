"""Int8 inference copy of a multi-expert encoder: torch dynamic quantisation of every ``nn.Linear`` (weights int8
per channel, activations quantised per batch on the fly), CPU only. The attention and FFN matrix products, ~95% of
the encoder's arithmetic, then run on int8 kernels; embeddings, LayerNorm, softmax and the span head stay float32.
The original model is left untouched; the copy shares its tokenizer and routing table.
"""

from __future__ import annotations

import copy
from typing import Any

from sleuth.errors import SleuthError


def quantise(model: Any) -> Any:
    """An int8 copy of ``model`` (a ``MultiExpertEncoder`` on the CPU) for inference: same API, same experts."""
    import torch
    from torch import nn

    from sleuth.systems.chain_of_skills.experts import ExpertSwitch

    if str(model.device) != "cpu":
        raise SleuthError(f"int8 dynamic quantisation runs on the CPU only, the model is on {model.device}")
    bert = torch.ao.quantization.quantize_dynamic(copy.deepcopy(model.bert), {nn.Linear}, dtype=torch.qint8)
    quantised = copy.copy(model)
    quantised.bert = bert.eval()
    quantised.switches = [m for m in bert.modules() if isinstance(m, ExpertSwitch)]
    return quantised


def is_quantised(model: Any) -> bool:
    """True when the model's linear layers are dynamically quantised."""
    from torch.ao.nn.quantized.dynamic import Linear

    return any(isinstance(m, Linear) for m in model.bert.modules())
