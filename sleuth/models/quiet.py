"""Third-party noise silenced at its source: transformers' load reports ("UNEXPECTED" keys), weight-loading bars and
deprecation FutureWarnings while a model is loaded or wrapped in a LoRA, peft's and huggingface_hub's remarks on the
model card and the backbone's config while an adapter is saved, and torch's deprecation warning of quantised tensors
while a model is quantised. Only inside these blocks, and only these warnings: anything else still shows."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager


@contextmanager
def ignoring(category: type[Warning], message: str = "", module: str = "") -> Iterator[None]:
    """Warnings of ``category`` whose text matches ``message`` (a regex, from the start) raised from a module
    matching ``module`` ignored inside the block; the warning filters are restored afterwards."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=category, message=message, module=module)
        yield


@contextmanager
def quiet_model_load() -> Iterator[None]:
    """Load a transformers model without its load report, progress bars or FutureWarnings (restored afterwards)."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()  # the load report: keys a task head leaves unused (a backbone's pooler)
    hf_logging.disable_progress_bar()
    try:
        with ignoring(FutureWarning, module=r"(transformers|peft)(\.|$)"):
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def quiet_quantisation() -> AbstractContextManager[None]:
    """Quantise without torch's "quantized tensor creation functions ... are deprecated" warning (torch 2.10+ warns
    on every ``quantize_dynamic``; sleuth's int8 paths are measured and kept until torchao replaces them)."""
    return ignoring(UserWarning, message=r"torch\.quantize_per_tensor.*deprecated")


@contextmanager
def quiet_adapter_save() -> Iterator[None]:
    """Save a peft adapter without "Repo card metadata block was not found" (huggingface_hub: sleuth writes its own
    card), "Could not find a config file in <backbone>" (peft: the backbone is named by its sleuth name) and
    transformers' "Writing model shards" bar."""
    from transformers.utils import logging as hf_logging

    card_logger = logging.getLogger("huggingface_hub.repocard")
    level, bars = card_logger.level, hf_logging.is_progress_bar_enabled()
    card_logger.setLevel(logging.ERROR)
    hf_logging.disable_progress_bar()  # transformers' "Writing model shards" bar (before: in every training log)
    try:
        with ignoring(UserWarning, message=r"Could not find a config file in "):
            yield
    finally:
        card_logger.setLevel(level)
        if bars:
            hf_logging.enable_progress_bar()
