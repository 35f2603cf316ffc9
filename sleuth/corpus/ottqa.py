"""OTT-QA: Wikipedia tables (tables/*.json), their hyperlinked passages (passages/*.json) and questions.

A table becomes a Document with the page title, the intro as lead and one Section headed by ``section_title`` holding
``section_text`` and the linearised table (one line per row, ``"header: cell; header: cell"``). Passages are keyed by
their link (``/wiki/Some_Page``), which is the Document id. Whole-file JSON: errors name the file (and record).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from sleuth.corpus.jsonfile import iter_json_records, load_json_object
from sleuth.corpus.jsonl import require
from sleuth.corpus.model import Document, Query, Section
from sleuth.errors import InputError


def read_ottqa_tables(directory: str | Path) -> Iterator[Document]:
    """Stream the tables of an OTT-QA folder (``directory/tables/*.json``, or ``directory`` itself if it holds them)
    in file-name order; ``metadata``: url, section_title, header, rows (cell texts) and links (cell hyperlinks)."""
    for path in _json_files(directory, "tables"):
        yield table_document(load_json_object(path), path)


def read_ottqa_passages(directory: str | Path) -> Iterator[Document]:
    """Stream the unique passages of ``directory/passages/*.json`` (each file maps ``/wiki/Link`` -> text)."""
    seen: set[str] = set()
    for path in _json_files(directory, "passages"):
        for link, text in load_json_object(path).items():
            if not isinstance(text, str):
                raise InputError(f"expected passage text, found {type(text).__name__}", path=path, field=link)
            if link not in seen:
                seen.add(link)
                yield Document(id=link, title=link_title(link), text=text)


def read_ottqa_questions(path: str | Path) -> Iterator[Query]:
    """Questions of dev.json / dev.traced.json / train.json; ``metadata``: answer, table_id and, when present,
    answer_nodes (traced files) and question_postag."""
    for where, record in iter_json_records(path):
        metadata = {"answer": record.get("answer-text"), "table_id": require(record, "table_id", where, None)}
        for source, target in (("answer-node", "answer_nodes"), ("question_postag", "question_postag")):
            if source in record:
                metadata[target] = record[source]
        yield Query(id=require(record, "question_id", where, None), text=require(record, "question", where, None),
                    metadata=metadata)


def table_document(table: dict[str, Any], path: str | Path) -> Document:
    """One OTT-QA table object as a Document (see the module docstring); ``path`` locates errors."""
    uid = require(table, "uid", path, None)
    header = [_cell(cell, path, "header")[0] for cell in require(table, "header", path, None, list)]
    rows = [[_cell(cell, path, "data") for cell in _row(row, path)] for row in require(table, "data", path, None, list)]
    texts = [[text for text, _ in row] for row in rows]
    section_text = "\n".join(t for t in (table.get("section_text") or "", linearise_table(header, texts)) if t)
    section = Section(heading=table.get("section_title") or "", text=section_text)
    metadata = {"url": table.get("url", ""), "section_title": section.heading, "header": header, "rows": texts,
                "links": [[links for _, links in row] for row in rows]}
    return Document(id=uid, title=table.get("title") or "", text=table.get("intro") or "", sections=[section],
                    metadata=metadata)


def linearise_table(header: list[str], rows: list[list[str]]) -> str:
    """Rows as lines of ``"header: cell; header: cell"`` (empty cells left out; unnamed columns get their number)."""
    names = [name or f"column {i}" for i, name in enumerate(header, start=1)]
    lines = ("; ".join(f"{name}: {cell}" for name, cell in zip(names, row) if cell) for row in rows)
    return "\n".join(line for line in lines if line)


def link_title(link: str) -> str:
    """The page title of a ``/wiki/Some_Page`` link: ``"Some Page"``."""
    return unquote(link.removeprefix("/wiki/")).replace("_", " ")


def _json_files(directory: str | Path, subfolder: str) -> list[Path]:
    """The ``*.json`` files of ``directory/subfolder`` (or of ``directory``), sorted; InputError when there are none."""
    directory = Path(directory)
    folder = directory / subfolder if (directory / subfolder).is_dir() else directory
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not files:
        raise InputError(f"no OTT-QA {subfolder} (*.json) found", path=folder)
    return files


def _row(row: Any, path: str | Path) -> list[Any]:
    """A table row, checked to be a list of cells."""
    if not isinstance(row, list):
        raise InputError("expected rows as lists of cells", path=path, field="data")
    return row


def _cell(cell: Any, path: str | Path, field: str) -> tuple[str, list[str]]:
    """A ``[text, [links]]`` cell, validated."""
    if not (isinstance(cell, list) and len(cell) == 2 and isinstance(cell[0], str) and isinstance(cell[1], list)):
        raise InputError("expected [text, [links]] cells", path=path, field=field)
    return cell[0], cell[1]
