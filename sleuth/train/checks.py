"""Checks the training commands run on their options before any data or model is read: a token limit the backbone
can read (beyond its position embeddings the first long text ended the run in a torch traceback), a LoRA rank no
wider than the backbone (a huge one allocated gigabytes before failing, or trained an adapter larger than the model),
and an ``--out`` that saving may replace (an adapter or QUEST classifier is swapped in as a whole folder, which
deleted whatever else the folder held; a DHR run wrote its rounds among other files)."""

from __future__ import annotations

import json
from pathlib import Path

from sleuth.errors import ConfigError
from sleuth.models.adapters import MODEL_MARKERS, adapter_info, is_adapter
from sleuth.models.registry import backbone_dir

MODEL_FILES = MODEL_MARKERS  # what a saved model, encoder or adapter folder holds


def model_folder(model: str | Path) -> Path:
    """The folder holding ``model``'s config and tokenizer: the model's own (a backbone name or a model folder), or a
    sleuth adapter's backbone's."""
    path = Path(backbone_dir(model))
    return Path(backbone_dir(adapter_info(path)["backbone"])) if is_adapter(path) else path


def token_limit(model: str | Path) -> int | None:
    """The most tokens ``model`` (a backbone name, a model folder, or a sleuth adapter: its backbone's) reads: the
    smaller of its config's ``max_position_embeddings`` and its tokenizer's ``model_max_length``; None when
    neither says."""
    path = model_folder(model)
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


def check_lora_rank(rank: int | None, models: dict[str, str | Path], option: str = "--lora-rank") -> None:
    """Refuse a LoRA rank above the hidden size of a model it adapts (``models``: the option that named it -> the
    model): such a rank adds nothing, and its adapter outweighs the matrices it adapts."""
    if rank is None:
        return
    for what, model in models.items():
        width = read_int(model_folder(model) / "config.json", "hidden_size")
        if width is not None and rank > width:
            raise ConfigError(f"{option} {rank}: {what} '{model}' has {width} hidden units, and a LoRA rank above "
                              f"them adds nothing; give {option} {width} or less (4 to 64 is usual)")


#: what a `dhr train --out` folder holds after an earlier run
DHR_RUN_FILES = ("split.json", "report.json", "round1")


def refuse_other_files(out: str | Path, option: str = "--out", markers: tuple[str, ...] = MODEL_FILES,
                       what: str = "a saved model") -> None:
    """Refuse an ``out`` that is a folder of other files (not empty, and holding none of ``markers``: by default
    not a saved model, with no ``config.json``, ``modules.json`` or sleuth adapter marker): saving replaces the
    folder or mixes its files in. A new folder, an empty one or an earlier ``what`` is fine (it is replaced)."""
    path = Path(out)
    here = Path.cwd().resolve()
    if path.resolve() == here or path.resolve() in here.parents:  # swapping it would pull the folder from under us
        raise ConfigError(f"{option} {out}: the current folder (or one holding it); choose another {option}")
    if path.is_dir() and any(path.iterdir()) and not any((path / name).exists() for name in markers):
        raise ConfigError(f"{option} {out}: a folder of other files, not {what}; refusing to write into it "
                          f"(choose another {option}, or empty it)")
