"""An earlier `sleuth dhr train` run in the same folder, kept until the new run has finished.

A rerun writes its rounds into the folder it names (the round indexes record their encoders by absolute path, so
the run cannot be built elsewhere and moved in). The earlier run's rounds, report and split are set aside in
``out/.earlier-run-HOST-PID`` meanwhile: dropped once the new run has finished, put back if it fails or is
interrupted (its partial rounds removed). A run killed outright leaves that folder; the next run into ``out`` puts
it back first, so what worked before is never lost to a run that did not finish.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sleuth.io import process_alive

ASIDE_PREFIX = ".earlier-run-"


def run_entries(out: Path) -> list[Path]:
    """What a run writes into ``out``: its round folders, report.json and split.json (those present)."""
    return [p for p in [*sorted(out.glob("round[0-9]*")), out / "report.json", out / "split.json"]
            if p.exists() or p.is_symlink()]


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def put_back(aside: Path, out: Path) -> None:
    """Replace whatever run is in ``out`` with the one set aside in ``aside``."""
    for path in run_entries(out):
        remove(path)
    for path in aside.iterdir():
        path.rename(out / path.name)
    aside.rmdir()


def restore_killed_runs(out: Path) -> list[Path]:
    """Put back runs set aside by a run on this host whose process is gone (killed before it could); returns them."""
    pattern = re.compile(rf"^{re.escape(ASIDE_PREFIX)}(.+)-(\d+)$")
    host, restored = socket.gethostname(), []
    for aside in sorted(out.glob(f"{ASIDE_PREFIX}*")):
        match = pattern.match(aside.name)
        if aside.is_dir() and match and match[1] == host and not process_alive(int(match[2])):
            put_back(aside, out)
            restored.append(aside)
    return restored


@contextmanager
def replacing_earlier_run(out: Path) -> Iterator[None]:
    """Within the block a new run writes into ``out``; an earlier run there is set aside, dropped when the block
    ends normally and put back when it raises (KeyboardInterrupt included). Before: the earlier run was deleted
    first, so a rerun that failed or was stopped lost the encoders that had worked."""
    if out.is_dir():
        restore_killed_runs(out)
    earlier = run_entries(out) if out.is_dir() else []
    aside = out / f"{ASIDE_PREFIX}{socket.gethostname()}-{os.getpid()}"
    if earlier:
        aside.mkdir()
        for path in earlier:
            path.rename(aside / path.name)
    try:
        yield
    except BaseException:
        if earlier:
            put_back(aside, out)
        raise
    if earlier:
        shutil.rmtree(aside)
