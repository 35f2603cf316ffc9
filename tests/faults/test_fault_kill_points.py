"""Fault suite, kill points: every rename and fsync of a build and of an update, each interrupted by SIGKILL in a
forked child (``os.replace`` / ``os.fsync`` wrapped there, so the count does not depend on sleuth's own hook).
Afterwards the index at the path must load and give exactly the old or the new results, and the next run must
leave no leftovers. One CLI case drives the same through the ``SLEUTH_FAULT`` switch of sleuth.io."""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
from sleuth.index.updates import add_documents, delete_documents, generations

QUERIES = ["cancer cells", "vitamin d deficiency", "protein structure", "quokka zebra"]


def fingerprint(path: Path):
    """What a search at ``path`` gives (ids and scores of every query), or None when there is no index there."""
    if not path.exists():
        return None
    index = BM25Index.load(path)
    positions, scores = index.search(QUERIES, k=10)
    return len(index), [[index.docstore.ids[p] for p in row] for row in positions], scores.round(5).tolist()


def killed_at(operation: str, nth: int, run: Callable[[], object]) -> bool:
    """Run ``run()`` in a forked child that kills itself (SIGKILL) at its ``nth`` rename (``os.replace``) or fsync;
    True when it was killed there, False when it finished first (fewer calls than ``nth``)."""
    operation = {"rename": "replace"}.get(operation, operation)
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            real, calls = getattr(os, operation), [0]

            def fault(*args, **kwargs):
                calls[0] += 1
                if calls[0] == nth:
                    os.kill(os.getpid(), signal.SIGKILL)
                return real(*args, **kwargs)

            setattr(os, operation, fault)
            run()
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, "the operation failed (see the captured output)"
    return False


def leftovers(target: Path) -> list[str]:
    """Temporary or orphaned things an interrupted build or update can leave at or beside ``target``."""
    found = [p.name for p in target.parent.glob(f".{target.name}.*")]
    if target.is_dir():
        found += [p.name for p in target.glob(".CURRENT.*")]
        found += [p.name for p in (target / "generations").glob(".tmp-*")]
        served = (target / "CURRENT").read_text().split()[0] if (target / "CURRENT").exists() else "gen-000000"
        found += [g for g in generations(target) if int(g[4:]) > int(served[4:])]
    return found


@pytest.fixture(scope="module")
def corpora(scifact_passages):
    extra = [Passage(f"new{i}", f"new{i}", f"quokka zebra note {i} on cancer cells", (f"Note {i}",)) for i in range(4)]
    return {"A": scifact_passages[:60], "B": scifact_passages[40:110], "X": extra[:2], "Y": extra[2:]}


def build(passages, target):
    return BM25Index.build(passages, target, show_progress=False)


SCENARIOS: dict[str, tuple[Callable, Callable]] = {  # name: (setup(target, corpora), operation(target, corpora))
    "first build": (lambda t, c: None, lambda t, c: build(c["B"], t)),
    "rebuild": (lambda t, c: build(c["A"], t), lambda t, c: build(c["B"], t)),
    "rebuild of an updated index": (lambda t, c: (build(c["A"], t), add_documents(t, c["X"]), add_documents(t, c["Y"])),
                                    lambda t, c: build(c["B"], t)),
    "first update": (lambda t, c: build(c["A"], t), lambda t, c: add_documents(t, c["X"])),
    "later update": (lambda t, c: (build(c["A"], t), add_documents(t, c["X"]), build(c["B"], t)),
                     lambda t, c: add_documents(t, c["Y"])),
    "delete": (lambda t, c: (build(c["A"], t), add_documents(t, c["X"])),
               lambda t, c: delete_documents(t, ["new0", c["A"][0].id])),
}
MIN_POINTS = {"rename": 2, "fsync": 1}  # at least these many of each in every scenario


@pytest.mark.parametrize("operation", ["rename", "fsync"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_a_kill_at_any_rename_or_fsync_leaves_the_old_or_the_new_index(tmp_path, corpora, scenario, operation):
    setup, run = SCENARIOS[scenario]
    reference = tmp_path / "reference" / "ix"
    setup(reference, corpora)
    old = fingerprint(reference)
    run(reference, corpora)
    new = fingerprint(reference)
    assert new is not None and new != old
    nth = 0
    while True:
        nth += 1
        target = tmp_path / f"kill{nth}" / "ix"
        setup(target, corpora)
        killed = killed_at(operation, nth, lambda: run(target, corpora))  # noqa: B023 (called before the loop goes on)
        now = fingerprint(target)
        assert now in (old, new), f"after a kill at {operation} {nth}, the index at the path is neither old nor new"
        if not killed:
            assert now == new
            break
        if "build" in scenario:  # the next run removes what the killed one left
            build(corpora["B"], target)
        else:
            add_documents(target, [Passage(f"next{nth}", f"next{nth}", "next text")])
        assert leftovers(target) == [], f"after a kill at {operation} {nth}"
        assert len(generations(target)) <= 2
    assert nth - 1 >= MIN_POINTS[operation], f"only {nth - 1} {operation} point(s) reached"


def test_the_sleuth_fault_switch_kills_a_rebuild_and_the_next_build_recovers(tmp_path, scifact_jsonl,
                                                                             sleuth_process):
    """The issue's strace reproduction, with sleuth's own switch: a rebuild killed at its 2nd and 3rd renames (the
    first switch of CURRENT, the new generation moved in) leaves the index at --out, and the next build leaves no
    .ix.tmp-* / .ix.old-* behind."""
    target = tmp_path / "ix"
    assert sleuth_process("index", scifact_jsonl, "--kind", "bm25", "--out", target).returncode == 0
    built = fingerprint(target)
    for nth in (2, 3):
        done = sleuth_process("index", scifact_jsonl, "--kind", "bm25", "--out", target,
                              env={"SLEUTH_FAULT": f"rename:{nth}"})
        assert done.returncode == -signal.SIGKILL, done.stderr
        assert fingerprint(target) == built
    assert sleuth_process("index", scifact_jsonl, "--kind", "bm25", "--out", target).returncode == 0
    assert leftovers(target) == [] and fingerprint(target) == built
