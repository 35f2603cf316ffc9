"""Shared fixtures: the real data folder (skip when absent), small real corpora, an isolated sleuth home."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.corpus.model import Passage
from sleuth.io import open_text
from sleuth.paths import shared_data_dir
from tests.cli_support import run_sleuth, run_sleuth_here


@pytest.fixture(scope="session")
def sleuth():
    """The `sleuth` command run in this process (run_sleuth_here): ``sleuth("index", path, env={...})`` ->
    CompletedProcess. Tests of what only a process shows (third-party warnings and logs, C-level output, the
    ``python -m sleuth`` entry, a process that kills itself) use ``sleuth_process``."""
    return run_sleuth_here


@pytest.fixture(scope="session")
def sleuth_process():
    """The `sleuth` command in a subprocess, as a user runs it: ``sleuth_process("index", path)``."""
    return run_sleuth


STALLED_BUILD = """
import time
from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
def slow():
    yield Passage("a", "a", "some text")
    print("READY", flush=True)
    time.sleep(60)
BM25Index.build(slow(), {target!r}, show_progress=False)
"""


def kill_at_ready(script: str, half_written: Callable[[], bool]) -> int:
    """Run ``script`` in a process, and kill -9 it once it prints READY, after checking ``half_written()`` (the
    temporary folder it had left); returns the killed process's id."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
        assert half_written()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    return proc.pid


def kill_build_midway(target: Path) -> int:
    """Start a BM25 build of ``target`` in a process and kill -9 it once it has begun reading passages (its temporary
    folder beside ``target``); returns the killed process's id."""
    return kill_at_ready(STALLED_BUILD.format(target=str(target)),
                         lambda: any(p.name.startswith(f".{target.name}.tmp-") for p in target.parent.iterdir()))


@pytest.fixture(scope="session")
def killed_build():
    """``killed_build(target) -> pid``: a BM25 build of ``target`` killed -9 half way (see kill_build_midway)."""
    return kill_build_midway


STALLED_UPDATE = """
import time
import sleuth.index.updates as updates
def stalled(directory, manifest):
    print("READY", flush=True)
    time.sleep(60)
updates.write_manifest = stalled
updates.add_documents({target!r}, updates.passages_from_records({records!r}))
"""


def kill_update_midway(target: Path, records: list[dict]) -> None:
    """Start ``add_documents(target, records)`` in a process, kill -9 it once its new generation is half written
    (documents written, manifest not), and check that it had left a temporary generation folder."""
    kill_at_ready(STALLED_UPDATE.format(target=str(target), records=records),
                  lambda: any(p.name.startswith(".tmp-") for p in (target / "generations").iterdir()))


@pytest.fixture(scope="session")
def killed_update():
    """``killed_update(target, records)``: an update of ``target`` killed -9 half way (see kill_update_midway)."""
    return kill_update_midway


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Every test gets its own index cache, so no test sees another's indexes."""
    monkeypatch.setenv("SLEUTH_HOME", str(tmp_path_factory.mktemp("sleuth-home")))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared evaluation data not found at {path} (set SLEUTH_DATA)")
    return path


@pytest.fixture(scope="session")
def scifact_rows() -> list[dict]:
    """The first 400 SciFact corpus records, as in the file: from ../shared/data when it is there, else from the
    copy of the same corpus bundled in the package (so these tests also run on a fresh clone without the data)."""
    shared = shared_data_dir() / "scifact" / "corpus.jsonl"
    source = shared if shared.is_file() else bundled_dataset_dir() / "corpus.jsonl.gz"
    with open_text(source) as handle:
        return [json.loads(line) for line in itertools.islice(handle, 400)]


@pytest.fixture(scope="session")
def scifact_passages(scifact_rows) -> list[Passage]:
    return [Passage(r["_id"], r["_id"], r["text"], (r["title"],)) for r in scifact_rows]


@pytest.fixture(scope="session")
def bundled_passages() -> list[Passage]:
    """The passages of the SciFact corpus bundled in the package (5,183 abstracts), as a workspace indexes them."""
    from sleuth.pipelines.workspace import CorpusSource

    return list(CorpusSource(bundled_dataset_dir(), "beir").passages())


@pytest.fixture(scope="session")
def bundled_claims() -> list[str]:
    """The texts of the bundled SciFact's train queries (claims), in file order."""
    from sleuth.corpus.beir import load_beir

    return [q.text for q in load_beir(bundled_dataset_dir(), "train").queries]


@pytest.fixture
def scifact_jsonl(tmp_path, scifact_rows) -> Path:
    """A small real corpus file (400 SciFact abstracts) in BEIR corpus format."""
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows), encoding="utf-8")
    return path


RAY_OBJECT_STORE = 100 * 1024 * 1024


@pytest.fixture(scope="module")
def two_nodes():
    """A real Ray cluster of two nodes on this machine (head and one worker, 1 CPU and a 100 MB object store each,
    ``ray.cluster_utils.Cluster``), the driver connected to it; skipped without Ray."""
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'sleuth[ray]')")
    import logging

    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": RAY_OBJECT_STORE,
                                                             "include_dashboard": False})
    cluster.add_node(num_cpus=1, object_store_memory=RAY_OBJECT_STORE)
    ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
    cluster.wait_for_nodes()
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
