"""The server's query log: one JSON object per request, appended to a JSONL file (thread-safe). A line is written
whole or not at all: one ``write`` per line, and a partial write (a full disk) is cut back to the line's start. A
failed write never fails the request: it is reported once on stderr and counted (``failures``, in ``/metrics``)."""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError


class QueryLog:
    """Appends ``{"time", ...fields}`` lines to ``path``; with ``path=None`` nothing is written. The file is opened
    for appending at once, so a path that cannot be written (a folder, no permission) fails here, not per search."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        #: entries that could not be written (a full disk, an I/O error)
        self.failures = 0
        self._reported = False
        self._lock = threading.Lock()
        if self.path is not None:
            if self.path.is_dir():
                raise ConfigError(f"query log {self.path}: is a folder; give a file path")
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8"):
                    pass
            except OSError as exc:
                raise ConfigError(f"query log {self.path}: cannot write to it ({exc.strerror or exc})") from None

    def record(self, **fields: Any) -> None:
        """Append one entry; when it cannot be written, count it (and say so on stderr the first time)."""
        if self.path is None:
            return
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **fields}, ensure_ascii=False) + "\n"
        with self._lock:
            try:
                append_whole(self.path, line.encode("utf-8"))
            except OSError as exc:
                self.failures += 1
                if not self._reported:
                    self._reported = True
                    print(f"warning: query log {self.path}: cannot write to it ({exc.strerror or exc}); searches go "
                          "on unlogged, counted as sleuth_query_log_failures_total in /metrics", file=sys.stderr)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry written so far (empty without a file)."""
        if self.path is None or not self.path.is_file():
            return []
        from sleuth.corpus.jsonl import iter_jsonl

        return [entry for _, entry in iter_jsonl(self.path)]


def append_whole(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` with one ``write``; when only part of it was written, cut the file back to where
    it ended before and raise ``OSError`` (ENOSPC), so the file never ends in a torn line."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        start = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
        except OSError:
            os.ftruncate(fd, start)  # some file systems keep the bytes of a failed write
            raise
        if written != len(data):
            os.ftruncate(fd, start)
            raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)}: {written} of {len(data)} bytes written, "
                                        "the part removed")
    finally:
        os.close(fd)
