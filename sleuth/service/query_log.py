"""The server's query log: one JSON object per request, appended to a JSONL file (thread-safe, flushed per line)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any


class QueryLog:
    """Appends ``{"time", ...fields}`` lines to ``path``; with ``path=None`` nothing is written."""

    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)

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
        with open(self.path, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
