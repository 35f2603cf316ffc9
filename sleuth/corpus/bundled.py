"""The corpus shipped inside the package: BEIR SciFact (train split), used when no corpus is given."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

BUNDLED_NAME = "scifact"


def bundled_dataset_dir() -> Path:
    """The BEIR-layout folder of the bundled SciFact data (corpus.jsonl.gz, queries.jsonl.gz, qrels/train.tsv)."""
    return Path(str(resources.files("sleuth") / "data" / BUNDLED_NAME))
