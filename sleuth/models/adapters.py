"""Low-rank adapters (LoRA, through ``peft``) over a packaged backbone, so that a trained model ships as a few MB
inside the package instead of a full copy of the backbone's weights.

An adapter directory holds peft's ``adapter_config.json`` and ``adapter_model.safetensors`` plus ``sleuth-adapter
.json`` naming the backbone by sleuth name ("minilm" = the packaged all-MiniLM-L6-v2), so the adapter loads on any
machine whatever the path of the backbone there; a model card (README.md) sits beside them. Loading merges the
adapter into the backbone, so inference (and int8 quantisation) costs the same as an ordinary model.
Generic: any transformers model with a LoRA over its linear layers (a cross-encoder classifier, a bi-encoder).
Models whose deltas peft cannot express (the hard-routed LoRA experts of Chain-of-Skills, one delta per expert)
write their own weight files through :func:`write_adapter`, which gives them the same marker, card and atomic swap.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from sleuth.errors import ConfigError, MissingExtraError, SleuthError
from sleuth.io import atomic_directory

MARKER = "sleuth-adapter.json"
#: what a saved model, encoder or adapter folder holds: a folder with none of them is not replaced by a save
MODEL_MARKERS = ("config.json", "modules.json", MARKER)
PEFT_CONFIG = "adapter_config.json"
BERT_LINEAR = ("query", "key", "value", "output.dense", "intermediate.dense")  # every encoder linear, no pooler


@dataclass(frozen=True)
class LoraSettings:
    """Rank, scaling and placement of a LoRA: ``layers`` limits it to those encoder layers (the others then need
    no gradients at all, which makes training faster); ``modules_to_save`` are trained in full (a fresh head)."""

    rank: int = 16
    alpha: int = 32
    dropout: float = 0.1
    target_modules: tuple[str, ...] = BERT_LINEAR
    layers: tuple[int, ...] | None = None
    modules_to_save: tuple[str, ...] = ("classifier", "pooler")


def is_adapter(path: str | Path) -> bool:
    """Whether ``path`` is an adapter directory written by :func:`save_adapter`."""
    return (Path(path) / MARKER).is_file()


def _peft():
    try:
        import peft
    except ImportError:
        raise MissingExtraError("peft", "peft", "low-rank adapters") from None
    return peft


def add_lora(model, settings: LoraSettings = LoraSettings()):
    """Wrap ``model`` in a trainable LoRA; the backbone's own weights are frozen."""
    peft = _peft()
    depth = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    outside = [layer for layer in settings.layers or () if depth is not None and not 0 <= layer < depth]
    if outside and depth is not None:
        raise ConfigError(f"LoRA layer {outside[0]} is out of range: the backbone has {depth} layers (0-{depth - 1})")
    config = peft.LoraConfig(r=settings.rank, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                             target_modules=list(settings.target_modules),
                             layers_to_transform=list(settings.layers) if settings.layers is not None else None,
                             modules_to_save=list(settings.modules_to_save) or None)
    from sleuth.models.quiet import quiet_model_load

    with quiet_model_load():  # transformers' is_gradient_checkpointing FutureWarning, which peft triggers
        return peft.get_peft_model(model, config)


def lora_config(path: str | Path) -> dict:
    """The peft configuration (``adapter_config.json``) of the LoRA adapter at ``path``; a SleuthError if none."""
    file = Path(path) / PEFT_CONFIG
    if not file.is_file():
        raise SleuthError(f"{path}: no {PEFT_CONFIG}; not a LoRA adapter directory")
    return json.loads(file.read_text(encoding="utf-8"))


def continue_lora(model, path: str | Path, settings: LoraSettings):
    """``model`` (the adapter's backbone) with the LoRA adapter at ``path`` loaded trainable, to train it further;
    its rank must be ``settings.rank`` (a different rank would be a new adapter, not a continuation)."""
    peft = _peft()
    rank = lora_config(path).get("r")
    if rank != settings.rank:
        raise ConfigError(f"{path}: a LoRA adapter of rank {rank} cannot go on training at rank {settings.rank}")
    from sleuth.models.quiet import quiet_model_load

    with quiet_model_load():
        return peft.PeftModel.from_pretrained(model, str(path), is_trainable=True)


def save_adapter(model, path: str | Path, backbone: str, settings: LoraSettings, card: str | None = None,
                 extra: dict | None = None) -> Path:
    """Write a LoRA-wrapped ``model``'s adapter (not the backbone) to ``path`` atomically, with the backbone's
    sleuth name, the settings, ``extra`` metadata and an optional model card."""
    from sleuth.io import atomic_write_text
    from sleuth.models.quiet import quiet_adapter_save

    def write(tmp: Path) -> None:
        # peft fills an existing README.md instead of rendering its own card (which needs Jinja2)
        atomic_write_text(tmp / "README.md", card or "# Adapter\n")
        with quiet_adapter_save():
            model.save_pretrained(str(tmp))
        config = json.loads((tmp / PEFT_CONFIG).read_text(encoding="utf-8"))
        config["base_model_name_or_path"] = backbone  # the sleuth name, not this machine's path of the backbone
        atomic_write_text(tmp / PEFT_CONFIG, json.dumps(config, indent=2) + "\n")

    return write_adapter(path, backbone, write, card=card, extra={"lora": asdict(settings), **(extra or {})})


def write_adapter(path: str | Path, backbone: str, write: Callable[[Path], None], card: str | None = None,
                  extra: dict | None = None) -> Path:
    """Write an adapter directory atomically: ``write(tmp)`` puts the weights (and any other files) into the
    temporary directory, then the marker (the backbone's sleuth name and ``extra``) and the model card are added and
    the directory swapped into place (an existing one stays untouched until then)."""
    from sleuth.io import atomic_write_text

    with atomic_directory(path, MODEL_MARKERS) as tmp:
        write(Path(tmp))
        atomic_write_text(Path(tmp) / MARKER, json.dumps({"backbone": backbone, **(extra or {})}, indent=2) + "\n")
        if card is not None:
            atomic_write_text(Path(tmp) / "README.md", card)
    return Path(path)


def adapter_info(path: str | Path) -> dict:
    """The ``sleuth-adapter.json`` of an adapter directory."""
    file = Path(path) / MARKER
    if not file.is_file():
        raise SleuthError(f"{path} is not a sleuth adapter (no {MARKER})")
    return json.loads(file.read_text(encoding="utf-8"))


def load_adapter(base_model, path: str | Path, merge: bool = True):
    """``base_model`` with the adapter at ``path`` applied; merged into plain weights unless ``merge`` is False.
    Quiet: without the FutureWarning transformers gives where peft reads ``is_gradient_checkpointing``."""
    from sleuth.models.quiet import quiet_model_load

    peft = _peft()
    lora_config(path)  # a one-line error where the folder holds no LoRA adapter
    with quiet_model_load():
        model = peft.PeftModel.from_pretrained(base_model, str(path))
        return model.merge_and_unload() if merge else model


def adapter_bytes(path: str | Path) -> int:
    """Size on disk of an adapter directory's files."""
    return sum(f.stat().st_size for f in Path(path).iterdir() if f.is_file())
