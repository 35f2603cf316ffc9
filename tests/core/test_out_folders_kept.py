"""A training command's --out never replaces a folder of other files, nor the model it starts from: before, `cos train
--out ~` replaced the home folder whole with the model (it ran without the check the other trainers run), `cos train
--model X --out X` and `quest train --backbone X --out X` overwrote their own input, and `quest train --backbone` of a
trained classifier wrote a model nothing could load."""

from __future__ import annotations

import pytest

from sleuth.errors import ConfigError
from sleuth.io import atomic_directory
from sleuth.models.adapters import MODEL_MARKERS
from tests.cli_support import one_line_error

SHIPPED_CLASSIFIER = "sleuth/systems/quest/weights/quest-classifier"


@pytest.fixture
def home_like(tmp_path):
    """A folder of a user's own files."""
    folder = tmp_path / "home"
    (folder / ".pyenv").mkdir(parents=True)
    (folder / ".bashrc").write_text("export PATH\n", encoding="utf-8")
    return folder


def test_a_save_never_replaces_a_folder_of_other_files(home_like, tmp_path):
    with pytest.raises(ConfigError, match="a folder of other files"):
        with atomic_directory(home_like, MODEL_MARKERS) as staged:
            (staged / "model.safetensors").write_bytes(b"weights")
    assert (home_like / ".bashrc").is_file() and (home_like / ".pyenv").is_dir()
    assert [p.name for p in tmp_path.iterdir()] == ["home"]  # no staged folder left beside it
    model = tmp_path / "model"
    for weights in (b"one", b"two"):  # a new folder, then an earlier model: both written
        with atomic_directory(model, MODEL_MARKERS) as staged:
            (staged / "config.json").write_text("{}", encoding="utf-8")
            (staged / "model.safetensors").write_bytes(weights)
    assert (model / "model.safetensors").read_bytes() == b"two"


def test_cos_train_refuses_a_folder_of_other_files_and_its_own_model(sleuth, data_dir, home_like, tmp_path):
    hotpot = data_dir / "hotpotqa" / "hotpot_train_100.json"
    tiny = ["--hotpotqa", str(hotpot), "--variant", "lora", "--max-steps", "1", "--batch-size", "2"]
    one_line_error(sleuth("cos", "train", *tiny, "--out", home_like),
                   f"--out {home_like}: a folder of other files, not a saved model")
    assert (home_like / ".bashrc").is_file()
    shipped = "sleuth/systems/chain_of_skills/weights/cos-minilm-lora"
    one_line_error(sleuth("cos", "train", "--hotpotqa", str(hotpot), "--model", shipped, "--max-steps", "1",
                          "--out", shipped), f"--out {shipped}: refusing to write over the input {shipped}")


def test_quest_train_refuses_its_own_backbone_and_a_trained_adapter_as_one(sleuth, data_dir, tmp_path):
    val = data_dir / "quest" / "val.jsonl"
    common = ["--examples", str(val), "--documents", str(val), "--max-steps", "1"]
    one_line_error(sleuth("quest", "train", *common, "--backbone", SHIPPED_CLASSIFIER, "--out", tmp_path / "m"),
                   f"--backbone {SHIPPED_CLASSIFIER}: a trained adapter (sleuth-adapter.json), not a model to train "
                   "one on; give its backbone ('minilm') or a full model folder")
    backbone = tmp_path / "backbone"
    backbone.mkdir()
    (backbone / "config.json").write_text("{}", encoding="utf-8")
    one_line_error(sleuth("quest", "train", *common, "--backbone", backbone, "--out", backbone),
                   f"--out {backbone}: refusing to write over the input {backbone}")
