"""Where sleuth finds shared evaluation data and keeps its own files."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    """The evaluation data folder: $SLEUTH_DATA, else ../shared/data relative to the repository root."""
    env = os.environ.get("SLEUTH_DATA")
    return Path(env) if env else (REPO_ROOT.parent / "shared" / "data")


def home_dir() -> Path:
    """sleuth's working folder for cached indexes and models: $SLEUTH_HOME, else ~/.cache/sleuth."""
    env = os.environ.get("SLEUTH_HOME")
    return Path(env) if env else Path.home() / ".cache" / "sleuth"
