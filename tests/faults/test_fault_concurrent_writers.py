"""Fault suite, concurrent writers (the issue's `sleuth index big & sleep 0.4; sleuth update` made deterministic):
a rebuild is stalled while it holds the index's lock, so an update started meanwhile must wait and be applied on
the new index; and a rebuild started while an update holds the lock waits, then refuses to drop the update."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from sleuth.index.bm25 import BM25Index

STALLED_BUILD = """
import sys
import sleuth.index.bm25 as bm25
save = bm25.BM25Index.save
def stalled(self, directory):
    print("READY", flush=True)
    sys.stdin.readline()
    save(self, directory)
bm25.BM25Index.save = stalled
from sleuth.cli.main import main
main({argv!r})
"""

STALLED_UPDATE = """
import sys
import sleuth.index.updates as updates
write = updates.write_manifest
def stalled(directory, manifest):
    print("READY", flush=True)
    sys.stdin.readline()
    return write(directory, manifest)
updates.write_manifest = stalled
from sleuth.cli.main import main
main({argv!r})
"""


def start(script: str, argv: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", script.format(argv=argv)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    return proc


def release(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate("go\n", timeout=120)
    return proc.returncode, err


def ids(target) -> set[str]:
    return set(BM25Index.load(target).docstore.ids)


def test_an_update_during_a_rebuild_waits_and_is_applied_on_the_new_index(tmp_path, scifact_rows, sleuth):
    small, big, new = tmp_path / "small.jsonl", tmp_path / "big.jsonl", tmp_path / "new.jsonl"
    small.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows[:50]))
    big.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows[:120]))
    new.write_text("".join(json.dumps({"id": f"new{i}", "text": f"quokka zebra {i}"}) + "\n" for i in range(5)))
    target = tmp_path / "T"
    assert sleuth("index", small, "--kind", "bm25", "--out", target).returncode == 0
    build = start(STALLED_BUILD, ["index", str(big), "--kind", "bm25", "--out", str(target)])
    update = subprocess.Popen([sys.executable, "-m", "sleuth", "update", str(target), "--add", str(new)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    assert update.poll() is None, "the update did not wait for the rebuild holding the lock"
    assert release(build)[0] == 0
    out, err = update.communicate(timeout=120)
    assert update.returncode == 0 and "added 5, now 125 passages" in " ".join((out + err).split())
    assert ids(target) == {r["_id"] for r in scifact_rows[:120]} | {f"new{i}" for i in range(5)}


def test_a_rebuild_during_an_update_waits_then_refuses_to_drop_it(tmp_path, scifact_rows, sleuth):
    corpus, new = tmp_path / "corpus.jsonl", tmp_path / "new.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows[:50]))
    new.write_text(json.dumps({"id": "new0", "text": "quokka zebra"}) + "\n")
    target = tmp_path / "T"
    assert sleuth("index", corpus, "--kind", "bm25", "--out", target).returncode == 0
    update = start(STALLED_UPDATE, ["update", str(target), "--add", str(new)])
    build = subprocess.Popen([sys.executable, "-m", "sleuth", "index", str(corpus), "--kind", "bm25", "--out",
                              str(target)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    assert build.poll() is None, "the rebuild did not wait for the update holding the lock"
    assert release(update)[0] == 0
    _, err = build.communicate(timeout=120)
    assert build.returncode == 2 and "changed by 'sleuth update'" in " ".join(err.split()) and "Traceback" not in err
    assert "new0" in ids(target)
