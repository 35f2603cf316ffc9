"""Whole-file JSON (HotpotQA, 2WikiMultihopQA, OTT-QA) and record files that come as a JSON list or as JSON Lines
(MuSiQue's own release is JSON Lines): parsing with file:line errors and record locations for messages."""

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
    """Yield ``(location, record)`` for a JSON file holding a list of objects, or for JSON Lines (one object per
    line: a file whose first non-blank line is a whole JSON object).

    ``location`` is ``"file[i]"`` (0-based index) in a list, ``"file:line"`` in JSON Lines; pass it as the ``path``
    of InputError or ``require`` so that a message names the file and the record.
    """
    if is_json_lines(path):
        from sleuth.corpus.jsonl import iter_jsonl

        for number, record in iter_jsonl(path):
            yield f"{path}:{number}", record
        return
    data = load_json(path)
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of records, found {type(data).__name__}", path=path)
    for index, record in enumerate(data):
        where = f"{path}[{index}]"
        if not isinstance(record, dict):
            raise InputError(f"expected a JSON object, found {type(record).__name__}", path=where)
        yield where, record


def first_json_record(path: str | Path) -> dict[str, Any]:
    """The first record of a JSON list or JSON Lines file; ``{}`` for an empty list and for a file holding one JSON
    object over several lines (a document, not records)."""
    if not is_json_lines(path):
        with open_text(path) as handle:
            if handle.read(4096).lstrip()[:1] != "[":
                return {}
    return next((record for _, record in iter_json_records(path)), {})


def is_json_lines(path: str | Path) -> bool:
    """Whether ``path`` is JSON Lines: its first non-blank character opens an object and its first non-blank line
    is a whole JSON object (a list, or one object over several lines, is one JSON document)."""
    with open_text(path) as handle:
        head = handle.read(64).lstrip()
        while not head and (chunk := handle.read(64)):
            head = chunk.lstrip()
    if not head.startswith("{"):
        return False  # a JSON list (HotpotQA's one-line files are never read twice)
    from sleuth.io import text_lines

    first = next((line for _, line in text_lines(path)), "")
    try:
        return isinstance(json.loads(first), dict)
    except json.JSONDecodeError:
        return False
