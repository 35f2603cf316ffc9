"""Outputs are checked before the work that produces them: a command whose ``--out`` (or ``--json``,
``--runs-dir``) cannot be written fails at once in one line, not after hours of training or evaluation."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.errors import ConfigError
from sleuth.overwrite import check_writable
from tests.cli_support import one_line_error


def test_check_writable_refuses_a_path_under_a_file_or_an_unwritable_folder_and_writes_nothing(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    with pytest.raises(ConfigError, match="a-file is a file, not a folder"):
        check_writable(blocker / "model")
    if Path("/proc/self").is_dir():  # Linux: nobody, root included, can make a file in /proc
        with pytest.raises(ConfigError, match="cannot write in /proc"):
            check_writable("/proc/no-such-folder/model")
    check_writable(tmp_path / "new" / "deeper" / "model")  # made later, under a writable folder
    check_writable(blocker)  # an existing file is replaced beside itself
    with pytest.raises(ConfigError, match="a-file: is a file; give a folder"):
        check_writable(blocker, folder=True)  # ... but not where a folder of outputs is wanted
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # no probe file, no folder left behind


def test_long_commands_refuse_an_unwritable_output_before_any_work(sleuth, data_dir, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    hotpot, nq = data_dir / "hotpotqa", data_dir / "nq"
    for args in (
        ("cos", "train", "--hotpotqa", hotpot / "hotpot_train_100.json", "--out", blocker / "model"),
        ("cos", "eval", "--questions", hotpot / "hotpot_dev_distractor_100.json", "--json", blocker / "rows.json"),
        ("dhr", "train", "--corpus", nq / "corpus.jsonl", "--questions", nq / "questions.jsonl", "--out",
         blocker / "dhr"),
        ("dhr", "compare", "--corpus", nq / "corpus.jsonl", "--questions", nq / "questions.jsonl", "--json",
         blocker / "rows.json"),
        ("privacy", "eval", "--max-queries", "1", "--out", blocker / "tables"),
    ):
        one_line_error(sleuth(*args), "a-file is a file, not a folder")
    for args in (  # a folder of outputs given as an existing file
        ("cos", "train", "--hotpotqa", hotpot / "hotpot_train_100.json", "--out", blocker),
        ("quest", "train-dense", "--examples", data_dir / "quest" / "val.jsonl", "--documents",
         data_dir / "quest" / "val.jsonl", "--out", blocker),
    ):
        one_line_error(sleuth(*args), "a-file: is a file; give a folder")
