"""An earlier `sleuth dhr train` run is kept until a rerun into its folder has finished: put back when the rerun
fails, is stopped or was killed (before: it was deleted first, and a failed rerun lost the encoders that worked)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from sleuth.systems.dhr.earlier_run import ASIDE_PREFIX, replacing_earlier_run


def earlier_run(out):
    (out / "round1" / "document-encoder").mkdir(parents=True)
    (out / "round1" / "document-encoder" / "adapter.bin").write_bytes(b"trained before")
    (out / "round2").mkdir()
    (out / "report.json").write_text(json.dumps({"run": "earlier"}))
    (out / "split.json").write_text("{}")


def contents(out):
    return sorted(str(p.relative_to(out)) for p in out.rglob("*"))


@pytest.mark.parametrize("stop", [RuntimeError("training failed"), KeyboardInterrupt()])
def test_a_rerun_that_fails_or_is_stopped_puts_the_earlier_run_back(tmp_path, stop):
    out = tmp_path / "run"
    earlier_run(out)
    before = contents(out)
    with pytest.raises(type(stop)):
        with replacing_earlier_run(out):
            assert not (out / "report.json").exists() and not (out / "round2").exists()  # set aside meanwhile
            (out / "round1" / "passage-encoder").mkdir(parents=True)  # the rerun's partial round
            raise stop
    assert contents(out) == before
    assert json.loads((out / "report.json").read_text()) == {"run": "earlier"}
    assert (out / "round1" / "document-encoder" / "adapter.bin").read_bytes() == b"trained before"


def test_a_rerun_that_finishes_replaces_the_earlier_run_and_leaves_nothing_aside(tmp_path):
    out = tmp_path / "run"
    earlier_run(out)
    with replacing_earlier_run(out):
        (out / "round1").mkdir()
        (out / "report.json").write_text(json.dumps({"run": "new"}))
    assert contents(out) == ["report.json", "round1"]
    assert json.loads((out / "report.json").read_text()) == {"run": "new"}


def test_a_run_killed_outright_is_undone_by_the_next_run_into_the_folder(tmp_path):
    out = tmp_path / "run"
    earlier_run(out)
    before = contents(out)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    aside = out / f"{ASIDE_PREFIX}{socket.gethostname()}-{int(gone.stdout)}"  # as a killed run left it
    aside.mkdir()
    for name in ("round1", "round2", "report.json", "split.json"):
        (out / name).rename(aside / name)
    (out / "round1").mkdir()  # the killed run's partial round
    with pytest.raises(RuntimeError):
        with replacing_earlier_run(out):
            raise RuntimeError("this rerun fails too")
    assert contents(out) == before


def test_a_first_run_that_fails_leaves_no_folder_behind(tmp_path):
    with pytest.raises(RuntimeError):
        with replacing_earlier_run(tmp_path / "run"):
            raise RuntimeError("failed before writing")
    assert not (tmp_path / "run").exists()
