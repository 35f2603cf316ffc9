"""Checks the training commands run on their options before any data or model is read: a token limit the backbone
can read (beyond its position embeddings the first long text ended the run in a torch traceback), and an ``--out``
that saving a model may replace (an adapter or QUEST classifier is swapped in as a whole folder, which deleted
whatever else the folder held)."""

from __future__ import annotations

import json
from pathlib import Path

from sleuth.errors import ConfigError
from sleuth.models.adapters import MARKER, adapter_info, is_adapter
from sleuth.models.registry import backbone_dir

MODEL_FILES = ("config.json", "modules.json", MARKER)  # what a saved model, encoder or adapter folder holds


def token_limit(model: str | Path) -> int | None:
    """The most tokens ``model`` (a backbone name, a model folder, or a sleuth adapter: its backbone's) reads: the
    smaller of its config's ``max_position_embeddings`` and its tokenizer's ``model_max_length``; None when
    neither says."""
    path = Path(backbone_dir(model))
    if is_adapter(path):
        path = Path(backbone_dir(adapter_info(path)["backbone"]))
    limits = [read_int(path / "config.json", "max_position_embeddings"),
              read_int(path / "tokenizer_config.json", "model_max_length")]
    known = [limit for limit in limits if limit is not None and 0 < limit < 1_000_000]  # tokenizers say 1e30: none
    return min(known) if known else None


def read_int(file: Path, key: str) -> int | None:
    """The integer ``key`` of a JSON file, or None (no file, no such key, not an integer)."""
    try:
        value = json.loads(file.read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_max_length(max_length: int | None, models: dict[str, str | Path], option: str = "--max-length") -> None:
    """Refuse a token limit above what a model reads (``models``: the option that named it -> the model)."""
    if max_length is None:
        return
    for what, model in models.items():
        limit = token_limit(model)
        if limit is not None and max_length > limit:
            raise ConfigError(f"{option} {max_length}: {what} '{model}' reads at most {limit} tokens; give "
                              f"{option} {limit} or less")


def refuse_other_files(out: str | Path, option: str = "--out") -> None:
    """Refuse an ``out`` that is a folder of other files (not empty, and not a saved model: no ``config.json``,
    ``modules.json`` or sleuth adapter marker): saving replaces the folder or mixes the model into it. A new
    folder, an empty one or an earlier model is fine (that model is replaced)."""
    path = Path(out)
    if path.is_dir() and any(path.iterdir()) and not any((path / name).is_file() for name in MODEL_FILES):
        raise ConfigError(f"{option} {out}: a folder of other files, not a saved model; refusing to save a model over it "
                          f"(choose another {option}, or empty it)")
