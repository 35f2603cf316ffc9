"""Running `sleuth` as the tests do (in this process, or as a process where only a process shows it) and reading
the one-line error a bad input must give."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback

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


def one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> str:
    """The error line of a refused run, checked: exit 2, exactly one line on stderr, starting ``error: ``, no
    traceback, holding every fragment."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]
