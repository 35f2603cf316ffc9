"""Ctrl-C on a long command: `interrupted` on stderr, exit 130, the progress line says the work stopped, and nothing
is written (the output is built in a temporary place and renamed only when complete)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time


def test_an_interrupted_index_build_exits_130_and_writes_nothing(tmp_path, scifact_rows):
    """Before: typer turned the Ctrl-C into an exit code that sleuth's entry point dropped, so an interrupted
    `sleuth index` (or update, retrieve, eval) exited 0, its progress line saying `done`: `sleuth index ... && deploy`
    went on as if it had worked."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows), encoding="utf-8")
    out = tmp_path / "index"
    env = {**os.environ, "SLEUTH_HOME": str(tmp_path / "home"), "SLEUTH_PREBUILT": "0", "OMP_NUM_THREADS": "1",
           "SLEUTH_PROGRESS_SECONDS": "0.5"}
    process = subprocess.Popen(
        [sys.executable, "-m", "sleuth", "index", str(corpus), "--kind", "dense", "--encoder", "minilm-onnx",
         "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a terminal's foreground job
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while not any(line.startswith("encoding with minilm-onnx: ") for line in lines):
        assert process.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    process.wait(timeout=60)
    reader.join(timeout=10)
    assert process.returncode == 130, "".join(lines)
    assert lines[-1].strip() == "interrupted" and "Traceback" not in "".join(lines)
    assert any(line.startswith("encoding with minilm-onnx: stopped, ") for line in lines), "".join(lines)
    assert not any(": done" in line for line in lines)
    assert not out.exists()
