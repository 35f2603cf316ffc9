"""The server's query log: one JSON object per request, appended to a JSONL file (thread-safe, flushed per line)."""

from __future__ import annotations

import json
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
        """Append one entry."""
        if self.path is None:
            return
        line = json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **fields}, ensure_ascii=False)
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()

    def entries(self) -> list[dict[str, Any]]:
        """Every entry written so far (empty without a file)."""
        if self.path is None or not self.path.is_file():
            return []
        from sleuth.corpus.jsonl import iter_jsonl

        return [entry for _, entry in iter_jsonl(self.path)]
