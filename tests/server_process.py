"""Running `sleuth serve` as a real process on a free loopback port for tests (bounded start-up, always killed)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

STARTUP_SECONDS = 120


def wait_for(condition, seconds: float = 60.0) -> None:
    """Poll ``condition`` every 50 ms until it holds; an assertion error after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def all_built(url: str) -> bool:
    """Whether every served pipeline is ready (a failed build fails the test with its status)."""
    statuses = {p["name"]: p.get("status", "ready") for p in httpx.get(url + "/pipelines", timeout=2).json()["pipelines"]}
    failed = {name: status for name, status in statuses.items() if status.startswith("failed")}
    if failed:
        pytest.fail(f"pipelines failed to build: {failed}")
    return all(status == "ready" for status in statuses.values())


@contextlib.contextmanager
def sleuth_server(args: list[str], env: dict[str, str] | None = None, ready: str = "/ready",
                  built: bool = True, log: list[str] | None = None) -> Iterator[str]:
    """Start `sleuth serve ARGS` on 127.0.0.1, wait until ``ready`` answers 200 (and, when ``built``, until every
    pipeline built in the background is ready: ``GET /pipelines``), yield its URL, kill it at the end (and then add
    what it printed on stderr to ``log``)."""
    port = free_port()
    command = [sys.executable, "-m", "sleuth", "serve", *args, "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"sleuth serve exited: {process.stderr.read()}")
            try:
                if httpx.get(url + ready, timeout=2).status_code == 200 and (not built or all_built(url)):
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"sleuth serve did not answer {ready} within {STARTUP_SECONDS} s")
            time.sleep(0.3)
        yield url
    finally:
        process.kill()
        process.wait(timeout=30)
        if log is not None:
            log.extend(process.stderr.read().splitlines())
