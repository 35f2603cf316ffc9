"""SMART collections (Cranfield, CISI, MED, CACM, NPL): records opened by ``.I <id>``, fields by ``.T`` (title),
``.A`` (authors), ``.B`` (bibliography), ``.W`` (text) and others (``.X`` cross-references, ``.K``, ``.C``, ``.N``).

The same layout holds the queries (``cran.qry``, ``CISI.QRY``). Numeric ids lose their leading zeros (``.I 001``
is query ``1``), as ir_datasets reads them. Cranfield's relevance file numbers its queries 1..225 by position
in ``cran.qry``, not by the ``.I`` ids (001, 002, 004, 008, ...): :func:`align_query_ids` detects that from the
qrels and renumbers the queries.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from sleuth.corpus.model import Document, Query
from sleuth.errors import InputError
from sleuth.io import open_text

RECORD = re.compile(r"^\.I\s+(\S+)\s*$")
FIELD = re.compile(r"^\.([A-Z])\s*$")
FIELD_NAMES = {"T": "title", "A": "author", "B": "bib", "W": "text", "X": "references", "K": "keywords",
               "C": "categories", "N": "entry"}
TEXT_FIELDS = ("W",)


def is_smart(head: str) -> bool:
    """Whether the start of a file looks like a SMART collection (its first line is ``.I <id>``)."""
    first = head.lstrip().split("\n", 1)[0]
    return bool(RECORD.match(first.rstrip("\r")))


def smart_id(raw: str) -> str:
    """A record id as sleuth keeps it: ``001`` -> ``1`` (numeric ids without leading zeros), others unchanged."""
    return str(int(raw)) if raw.isdigit() else raw


def iter_smart_records(path: str | Path) -> Iterator[tuple[int, str, dict[str, str]]]:
    """Yield ``(line, id, {field letter: text})`` for each ``.I`` record; text before the first ``.I`` or a
    record without a field marker raises InputError naming file and line."""
    record: tuple[int, str, dict[str, list[str]]] | None = None
    current: list[str] | None = None
    with open_text(path) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.rstrip("\r\n")
            opened = RECORD.match(line)
            if opened:
                if record is not None:
                    yield _finish(record)
                record, current = (number, smart_id(opened.group(1)), {}), None
                continue
            marker = FIELD.match(line)
            if record is None:
                if line.strip():
                    raise InputError("expected '.I <id>' to open a record (SMART layout)", path=path, line=number)
                continue
            if marker:
                current = record[2].setdefault(marker.group(1), [])
            elif current is not None:
                current.append(line)
            elif line.strip():
                raise InputError(f"text before a field marker (.T, .A, .W ...) in record {record[1]}",
                                 path=path, line=number)
    if record is None:
        raise InputError("no '.I <id>' record found; is this a SMART collection?", path=path)
    yield _finish(record)


def _finish(record: tuple[int, str, dict[str, list[str]]]) -> tuple[int, str, dict[str, str]]:
    """A record's fields as stripped strings."""
    line, record_id, fields = record
    return line, record_id, {letter: "\n".join(lines).strip() for letter, lines in fields.items()}


def read_smart_documents(path: str | Path) -> Iterator[Document]:
    """Stream Documents: id from ``.I``, title from ``.T`` (lines joined by spaces), text from ``.W``; authors,
    bibliography and the other fields go to metadata (``author``, ``bib``, ``references`` ...)."""
    for _, doc_id, fields in iter_smart_records(path):
        title = " ".join(fields.get("T", "").split())
        metadata = {FIELD_NAMES.get(k, k): v for k, v in fields.items() if k not in ("T", "W") and v}
        yield Document(id=doc_id, title=title, text=fields.get("W", ""), metadata=metadata)


def read_smart_queries(path: str | Path) -> Iterator[Query]:
    """Stream Queries: id from ``.I``, text from ``.W`` (or ``.T`` when a query has no ``.W``); a query with
    neither raises InputError naming file and line."""
    for line, query_id, fields in iter_smart_records(path):
        text = " ".join((fields.get("W") or fields.get("T") or "").split())
        if not text:
            raise InputError(f"query {query_id} has no .W text", path=path, line=line)
        yield Query(id=query_id, text=text)


def align_query_ids(queries: Sequence[Query], judged: Mapping[str, object]) -> tuple[list[Query], str | None]:
    """Queries renumbered 1..N by position when the qrels match positions better than the ``.I`` ids
    (Cranfield's layout), with a note saying so; otherwise the queries unchanged and None."""
    by_id = sum(query.id in judged for query in queries)
    by_position = sum(str(number) in judged for number in range(1, len(queries) + 1))
    if by_position <= by_id:
        return list(queries), None
    renumbered = [Query(id=str(number), text=query.text, metadata={**query.metadata, "smart_id": query.id})
                  for number, query in enumerate(queries, start=1)]
    note = (f"the qrels number the queries by position (1..{len(queries)}), not by their .I ids: "
            f"{by_position} judged queries match by position, {by_id} by id (Cranfield's layout); numbering by "
            "position")
    return renumbered, note
