"""Fault suite, a full disk: builds and updates on a small tmpfs fail with one line naming the file (exit 2 from the
CLI), and the index already there stays exactly as it was, with nothing left behind. Needs root to mount (CI runs
as root); skipped with the reason otherwise."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import faiss
import numpy as np
import pytest

from sleuth.errors import StorageError
from sleuth.index.bm25 import BM25Index
from sleuth.index.dense import DenseIndex
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import Manifest, build_directory


def files(disk: Path) -> list[tuple[Path, bytes]]:
    """Every file on ``disk`` with its bytes (the index's empty lock file aside)."""
    return sorted((p.relative_to(disk), p.read_bytes()) for p in disk.rglob("*")
                  if p.is_file() and p.name != ".update.lock")


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@pytest.fixture
def small_disk(tmp_path):
    """``small_disk(bytes)``: a tmpfs of that size, unmounted at the end."""
    mounted: list[Path] = []

    def mount(size: int) -> Path:
        point = tmp_path / f"disk{len(mounted)}"
        point.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs to fill (needs root): {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in mounted:
        subprocess.run(["umount", "-l", str(point)], check=False)


def test_a_rebuild_on_a_full_disk_names_the_file_and_keeps_the_index(tmp_path, scifact_jsonl, scifact_rows,
                                                                      small_disk, sleuth):
    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows[:40]))
    probe = tmp_path / "probe"
    assert sleuth("index", small, "--kind", "bm25", "--out", probe).returncode == 0
    disk = small_disk(folder_bytes(probe) + 64 * 1024)  # room for the small index, not for the 400-passage one
    target = disk / "ix"
    assert sleuth("index", small, "--kind", "bm25", "--out", target).returncode == 0
    before = files(disk)
    done = sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", target)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "cannot write" in line and "bytes free on its disk" in line
    assert str(disk) in line
    assert files(disk) == before
    assert len(BM25Index.load(target)) == 40


def test_an_update_on_a_full_disk_names_the_file_and_keeps_the_index(tmp_path, scifact_jsonl, small_disk, sleuth):
    built = tmp_path / "ix"
    assert sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", built).returncode == 0
    disk = small_disk(folder_bytes(built) + 64 * 1024)  # the index fits, a second generation of it does not
    target = disk / "ix"
    shutil.copytree(built, target)
    new = tmp_path / "new.jsonl"
    new.write_text(json.dumps({"id": "new0", "text": "quokka zebra"}) + "\n")
    done = sleuth("update", target, "--add", new)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: ") and "cannot write" in line and "bytes free on its disk" in line
    assert str(target) in line
    assert len(BM25Index.load(target)) == 400
    assert not list((target / "generations").glob(".tmp-*")) and not list(target.glob(".CURRENT.*"))


def test_a_faiss_write_on_a_full_disk_is_a_one_line_error(tmp_path, scifact_passages, small_disk):
    """The dense writer (faiss's 'N requested and M written' named no file) through the build path."""
    disk = small_disk(256 * 1024)
    docstore = DocStore.from_passages(scifact_passages[:300])
    vectors = np.random.default_rng(0).standard_normal((300, 384)).astype(np.float32)
    index = faiss.IndexFlatIP(384)
    index.add(vectors)
    manifest = Manifest(kind="dense", count=300, params={"factory": "Flat"}, encoder={"name": "x"}, dimensions=384)
    with pytest.raises(StorageError) as info, build_directory(disk / "dense") as tmp:
        DenseIndex(index, docstore, {"name": "x"}, manifest).save(tmp)
    message = str(info.value)
    assert "vectors.faiss: cannot write the FAISS index (" in message and "bytes free" in message
    assert "\n" not in message and list(disk.iterdir()) == []
