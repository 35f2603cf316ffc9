"""Whole-file JSON (HotpotQA, MuSiQue, OTT-QA): parsing with file:line errors and record locations for messages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sleuth.errors import InputError
from sleuth.io import open_text


def load_json(path: str | Path) -> Any:
    """Parse a whole JSON file; a missing file or a syntax error raises InputError naming file (and line)."""
    path = Path(path)
    with open_text(path) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", path=path, line=exc.lineno) from None
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", path=path) from None


def load_json_object(path: str | Path) -> dict[str, Any]:
    """Parse a JSON file whose top level must be an object."""
    data = load_json(path)
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object at the top level, found {type(data).__name__}", path=path)
    return data


def iter_json_records(path: str | Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(location, record)`` for a JSON file holding a list of objects.

    ``location`` is ``"file[i]"`` (0-based index); pass it as the ``path`` of InputError or ``require`` so that a
    message names the file and the record.
    """
    data = load_json(path)
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of records, found {type(data).__name__}", path=path)
    for index, record in enumerate(data):
        where = f"{path}[{index}]"
        if not isinstance(record, dict):
            raise InputError(f"expected a JSON object, found {type(record).__name__}", path=where)
        yield where, record
