"""Shared fixtures: the real data folder (skip when absent), small real corpora, an isolated sleuth home."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.corpus.model import Passage
from sleuth.io import open_text
from sleuth.paths import shared_data_dir

#: the terminal width every `sleuth` call of the tests runs with: wide tables, so titles never wrap
WIDE = {"COLUMNS": "250"}


def run_sleuth(*args, env: dict[str, str] | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python -m sleuth ARGS`` as a user runs it (WIDE tables), output captured."""
    return subprocess.run([sys.executable, "-m", "sleuth", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **WIDE, **(env or {})})


def run_sleuth_here(*args, env: dict[str, str] | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """``sleuth ARGS`` through its entry point in this process (no interpreter start, models loaded once per test
    worker), with ``env`` set for the call and what it prints on stdout and stderr captured; an exception that
    escapes the entry point becomes its traceback on stderr and exit code 1, as in a process. ``timeout`` is not
    enforced here (kept for run_sleuth's signature)."""
    from sleuth.cli.main import main
    from sleuth.progress import console

    if env and "SLEUTH_FAULT" in env:
        raise ValueError("SLEUTH_FAULT kills the process it runs in: use the sleuth_process fixture")
    saved_env, saved_cwd, saved_threads = dict(os.environ), os.getcwd(), _torch_threads()
    os.environ.update({**WIDE, **(env or {})})
    console.width = int(os.environ["COLUMNS"])  # as a process's console, made at import, takes COLUMNS
    stdout, stderr = io.StringIO(), io.StringIO()
    code = 0
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                main([str(arg) for arg in args])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception:
                traceback.print_exc()
                code = 1
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        if saved_threads is not None:
            import torch

            torch.set_num_threads(saved_threads)
    return subprocess.CompletedProcess(["sleuth", *map(str, args)], code, stdout.getvalue(), stderr.getvalue())


def _torch_threads() -> int | None:
    """torch's thread count when torch is imported (a training command may change it), else None."""
    torch = sys.modules.get("torch")
    return torch.get_num_threads() if torch is not None else None


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
