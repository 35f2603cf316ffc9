"""JSON Lines: a streaming reader with file:line errors, and the generic reader with a field mapping."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sleuth.corpus.model import Document
from sleuth.errors import InputError
from sleuth.io import text_lines


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; a bad line raises InputError with file:line."""
    path = Path(path)
    for number, line in text_lines(path):
        yield number, parse_record(line, path, number)


def parse_record(text: str, path: str | Path, line: int | None = None) -> dict[str, Any]:
    """One JSON Lines record: a JSON object, else an InputError naming the file (and line, when known)."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        where = "" if line is not None else f" in a line starting {text[:40]!r}"
        raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno}){where}", path=path, line=line) from None
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, found {type(obj).__name__}", path=path, line=line)
    if SURROGATE_ESCAPE.search(text):  # rare: only then are the strings checked
        field = lone_surrogate_field(obj)
        if field is not None:  # before: a traceback when the index was saved, after the whole build
            raise InputError("holds a lone surrogate escape (\\ud800-\\udfff), which is not Unicode text",
                             path=path, line=line, field=field)
    return obj


#: a JSON escape of a UTF-16 surrogate: valid in pairs (an emoji), not text alone
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def lone_surrogate_field(obj: Mapping[str, Any]) -> str | None:
    """The top-level key of ``obj`` under which some string (or key) is not encodable as UTF-8, else None."""
    for key, value in obj.items():
        pending = [key, value]
        while pending:
            item = pending.pop()
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return key.encode("utf-8", "backslashreplace").decode("utf-8")
            elif isinstance(item, dict):
                pending.extend([*item.keys(), *item.values()])
            elif isinstance(item, list):
                pending.extend(item)
    return None


def require(obj: Mapping[str, Any], key: str, path: str | Path, line: int | None, kind: type | tuple = str) -> Any:
    """Return ``obj[key]``, raising an InputError naming file, line and field when it is missing or mistyped."""
    if key not in obj:
        raise InputError("missing", path=path, line=line, field=key)
    value = obj[key]
    if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # numeric ids are common; accept them as strings
    if not isinstance(value, kind):
        expected = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
        raise InputError(f"expected {expected}, found {type(value).__name__}", path=path, line=line, field=key)
    return value


def require_nonblank(obj: Mapping[str, Any], key: str, path: str | Path, line: int | None, blank: str) -> str:
    """A string field (:func:`require`) that is not blank; ``blank`` is the error message where it is."""
    value = require(obj, key, path, line)
    if not value.strip():
        raise InputError(blank, path=path, line=line, field=key)
    return value


def require_id(obj: Mapping[str, Any], key: str, path: str | Path, line: int | None) -> str:
    """An id field: present, a string or a whole number, and not empty. A number with a fraction or exponent
    (``1.0``, ``1e3``, ``NaN``) is an InputError: its text would not be the id written (qrels say ``1``, not
    ``1.0``)."""
    if isinstance(obj.get(key), float):
        raise InputError(f"id {fractional_id(obj[key])}", path=path, line=line, field=key)
    return require_nonblank(obj, key, path, line, "empty id; every record needs one")


def fractional_id(value: float) -> str:
    """Why a JSON number with a fraction or exponent is not an id, and what to write instead."""
    return f"{value!r} is a JSON number with a fraction or exponent; write it as a string (\"{value}\") or an integer"


def require_new_id(first_lines: dict[str, int], item_id: str, path: str | Path, line: int,
                   what: str = "query id") -> str:
    """``item_id`` recorded in ``first_lines`` (id -> the line it first came on); an id seen before is an InputError
    naming both lines."""
    if item_id in first_lines:
        raise InputError(f"{what} '{item_id}' appears twice (first on line {first_lines[item_id]:,})", path=path,
                         line=line)
    first_lines[item_id] = line
    return item_id


def require_query_text(obj: Mapping[str, Any], key: str, path: str | Path, line: int | None) -> str:
    """A query's text field: present, a string, and not blank (an empty query is refused where it is read)."""
    return require_nonblank(obj, key, path, line, "empty query text")


DEFAULT_FIELDS = {"id": "_id", "title": "title", "text": "text"}
#: the id keys recognised without a mapping, in order of preference (BEIR, generic, MS MARCO / Pyserini ...)
ID_KEYS = ("_id", "id", "docid", "doc_id", "pid")


def read_jsonl_documents(path: str | Path, fields: Mapping[str, str] | None = None) -> Iterator[Document]:
    """Stream Documents from any JSONL file; ``fields`` maps sleuth's id/title/text to the file's keys.

    Without an id mapping the id is the first of :data:`ID_KEYS` present in each record. Unmapped keys go to
    ``metadata``. Title may be absent (empty); id and text are required (a missing one is an InputError naming
    file, line and the ``--field`` option that maps it). An unknown mapping key fails at the call, before any line
    is read.
    """
    mapping = field_mapping(fields, path)
    documents = (document_from_record(obj, mapping, path, number) for number, obj in iter_jsonl(path))
    title = (fields or {}).get("title")
    return documents if title is None else with_title_key(documents, iter_jsonl(path), title, path)


def with_title_key(documents: Iterator[Document], records: Iterator[tuple[int, dict[str, Any]]], key: str,
                   path: str | Path) -> Iterator[Document]:
    """``documents``, then an InputError when a ``--field title=KEY`` named a key that no record has (before: every
    title dropped without a word, where a wrong text key is an error); ``records`` are the same file's, read again
    only then, for their keys."""
    found = False
    for document in documents:
        found = found or bool(document.title)
        yield document
    if found:
        return
    keys: set[str] = set()
    for _, record in records:
        if key in record:
            return  # the key is there, its titles empty
        if len(keys) < 50:
            keys.update(map(str, record))
    raise InputError(f"no record has the title key '{key}' named by --field title={key} (keys seen: "
                     f"{', '.join(sorted(keys)[:8])})", path=path)


def field_mapping(fields: Mapping[str, str] | None, path: str | Path) -> dict[str, str]:
    """sleuth's id/title/text -> the file's keys (the defaults completed by ``fields``); unknown keys: InputError."""
    mapping = {**DEFAULT_FIELDS, **(fields or {})}
    unknown = set(mapping) - set(DEFAULT_FIELDS)
    if unknown:
        raise InputError(f"unknown field mapping key(s) {sorted(unknown)}; use id, title, text", path=path)
    return mapping


def document_from_record(obj: Mapping[str, Any], mapping: Mapping[str, str], path: str | Path,
                         number: int | None) -> Document:
    """One JSONL record as a Document (errors name file, line when known, and field)."""
    id_keys = (mapping["id"],) if mapping["id"] != DEFAULT_FIELDS["id"] else ID_KEYS
    id_key = next((key for key in id_keys if key in obj), None)
    if id_key is None:
        found = ", ".join(sorted(obj)[:8]) or "none"
        raise InputError(f"no id key ({', '.join(id_keys)}) in the record (its keys: {found}); "
                         "name it with --field id=KEY", path=path, line=number)
    if mapping["text"] not in obj:
        found = ", ".join(sorted(obj)[:8]) or "none"
        raise InputError(f"missing (the record's keys: {found}); name the text key with --field text=KEY (in "
                         "Python: fields={'text': KEY})", path=path, line=number, field=mapping["text"])
    used = {id_key, mapping["title"], mapping["text"]}
    doc_id = require_id(obj, id_key, path, number)
    text = require(obj, mapping["text"], path, number)
    title = obj.get(mapping["title"]) or ""
    if not isinstance(title, str):
        raise InputError("expected str", path=path, line=number, field=mapping["title"])
    metadata = {k: v for k, v in obj.items() if k not in used}
    if isinstance(metadata.get("metadata"), dict):
        metadata = {**metadata.pop("metadata"), **metadata}
    return Document(id=doc_id, title=title, text=text, metadata=metadata)
