"""Tab-separated collections: ``id<TAB>text`` (the MS MARCO collection.tsv layout) or ``id<TAB>title<TAB>text``,
one document a line, an optional header line (its first column one of the JSONL id keys: ``_id``, ``id``, ``docid``,
``doc_id``, ``pid``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from sleuth.corpus.jsonl import ID_KEYS
from sleuth.corpus.model import Document
from sleuth.errors import InputError
from sleuth.io import text_lines


def tsv_columns(head: str) -> int:
    """The number of tab-separated columns (2 or 3) of the first non-blank line of ``head``, else 0."""
    first = next((line for line in head.splitlines() if line.strip()), "")
    if first.lstrip().startswith(("{", "<", ".I")):
        return 0
    columns = len(first.split("\t"))
    return columns if columns in (2, 3) and first.split("\t")[0].strip() else 0


def read_tsv_documents(path: str | Path) -> Iterator[Document]:
    """Stream Documents from a 2- or 3-column TSV file; every line must have the first line's column count
    (a line that does not raises InputError naming file and line)."""
    width = None
    for number, line in text_lines(path):
        cells = line.split("\t")
        if width is None:
            width = len(cells)
            if width not in (2, 3):
                raise InputError(f"expected 'id<TAB>text' or 'id<TAB>title<TAB>text', found {width} column(s)",
                                 path=path, line=number)
            if cells[0].strip().lower() in ID_KEYS:
                continue  # a header line
        if len(cells) != width:
            raise InputError(f"expected {width} tab-separated columns like line 1, found {len(cells)}",
                             path=path, line=number)
        doc_id = cells[0].strip()
        if not doc_id:
            raise InputError("empty document id", path=path, line=number)
        title = cells[1].strip() if width == 3 else ""
        yield Document(id=doc_id, title=title, text=cells[-1].strip())
