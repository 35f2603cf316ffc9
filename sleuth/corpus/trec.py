"""TREC formats: SGML documents (<DOC><DOCNO>..</DOCNO>..</DOC>) and topics, either SGML (<top>) or TSV (qid<TAB>query).

TREC qrels are read by :func:`sleuth.corpus.qrels.read_qrels`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from sleuth.corpus.model import Document, Query
from sleuth.errors import InputError
from sleuth.io import open_text

TITLE_TAGS = ("HEADLINE", "TITLE", "HEAD")
_TAG = re.compile(r"<[^>]*>")
_TOPIC_FIELD = re.compile(r"<(\w+)>(.*?)(?=<|\Z)", re.S)  # topic fields need no closing tag (classic TREC topics)
_LABEL = re.compile(r"^(?:Number|Topic|Title|Description|Narrative)\s*:\s*", re.I)


def read_trec_documents(path: str | Path) -> Iterator[Document]:
    """Stream Documents from a TREC SGML file: id from <DOCNO>, title from <HEADLINE>/<TITLE>/<HEAD>, text from
    <TEXT> elements, or else everything in the <DOC> that is not in another element's tags."""
    found = False
    for line, block in iter_sgml_elements(path, "DOC"):
        found = True
        yield _parse_document(block, path, line)
    if not found:
        raise InputError("no <DOC> element found; is this a TREC SGML document file?", path=path)


def read_trec_topics(path: str | Path, field: str = "title") -> Iterator[Query]:
    """Stream topics from SGML (``<top>``; ``field`` picks title, desc or narr) or TSV (``qid<TAB>query``).

    The flavour is detected from the first non-blank character ('<' means SGML). For SGML, the other fields of a
    topic go to ``Query.metadata``.
    """
    path = Path(path)
    reader = _read_sgml_topics(path, field) if _first_char(path) == "<" else _read_tsv_topics(path)
    yield from reader


def iter_sgml_elements(path: str | Path, tag: str) -> Iterator[tuple[int, str]]:
    """Yield ``(line, content)`` for each ``<tag>...</tag>`` element of a file, streaming, tags case-insensitive.

    ``line`` is where the element opens; an element opened inside another one or never closed raises InputError.
    """
    opening, closing = _tag_patterns(tag)
    start: int | None = None
    parts: list[str] = []
    with open_text(path) as handle:
        for number, text in enumerate(handle, start=1):
            pos = 0
            while True:
                if start is None:
                    match = opening.search(text, pos)
                    if not match:
                        break
                    start, parts, pos = number, [], match.end()
                    continue
                end, nested = closing.search(text, pos), opening.search(text, pos)
                if nested and (not end or nested.start() < end.start()):
                    raise InputError(f"<{tag}> opened before the <{tag}> of line {start} was closed",
                                     path=path, line=number)
                if not end:
                    parts.append(text[pos:])
                    break
                parts.append(text[pos:end.start()])
                yield start, "".join(parts)
                start, pos = None, end.end()
    if start is not None:
        raise InputError(f"<{tag}> is never closed", path=path, line=start)


def _parse_document(block: str, path: str | Path, line: int) -> Document:
    """One <DOC> element's content as a Document; InputError with the element's line when DOCNO is missing."""
    docno = " ".join(_elements(block, "DOCNO"))
    if not docno:
        raise InputError("missing or empty", path=path, line=line, field="DOCNO")
    title = next((t for tag in TITLE_TAGS for t in _elements(block, tag) if t), "")
    texts = _elements(block, "TEXT")
    if not texts:
        rest = _remove_elements(block, ("DOCNO",) + TITLE_TAGS)
        texts = [_clean(rest)]
    return Document(id=docno, title=title, text="\n\n".join(t for t in texts if t))


def _read_sgml_topics(path: Path, field: str) -> Iterator[Query]:
    """Topics from ``<top>`` elements; fields may be closed (``<title>..</title>``) or not (``<desc> Description:``)."""
    wanted = field.lower()
    for line, block in iter_sgml_elements(path, "top"):
        fields: dict[str, str] = {}
        for tag, content in _TOPIC_FIELD.findall(block):
            fields.setdefault(tag.lower(), _LABEL.sub("", _clean(content)))
        topic_id = fields.pop("num", "")
        if not topic_id:
            raise InputError("missing or empty", path=path, line=line, field="num")
        if not fields.get(wanted):
            raise InputError("missing or empty", path=path, line=line, field=wanted)
        text = fields.pop(wanted)
        yield Query(id=topic_id, text=text, metadata=fields)


def _read_tsv_topics(path: Path) -> Iterator[Query]:
    """Topics from ``qid<TAB>query`` lines; blank lines are skipped."""
    with open_text(path) as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            topic_id, tab, query = text.rstrip("\r\n").partition("\t")
            if tab and topic_id.strip() and not query.strip():  # before: "expected 'qid<TAB>query'" of a line with one
                raise InputError(f"query '{topic_id.strip()}' is empty", path=path, line=number)
            if not tab or not topic_id.strip():
                raise InputError("expected 'qid<TAB>query'", path=path, line=number)
            yield Query(id=topic_id.strip(), text=query.strip())


@cache
def _tag_patterns(tag: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """Compiled opening and closing patterns of ``tag`` (case-insensitive, attributes allowed)."""
    name = re.escape(tag)
    return re.compile(rf"<{name}(?:\s[^>]*)?>", re.I), re.compile(rf"</{name}\s*>", re.I)


@cache
def _element_pattern(tag: str) -> re.Pattern[str]:
    """Compiled pattern of a whole ``<tag>...</tag>`` element, content in group 1."""
    name = re.escape(tag)
    return re.compile(rf"<{name}(?:\s[^>]*)?>(.*?)</{name}\s*>", re.I | re.S)


def _elements(block: str, tag: str) -> list[str]:
    """The cleaned contents of every ``tag`` element in ``block``."""
    return [_clean(content) for content in _element_pattern(tag).findall(block)]


def _remove_elements(block: str, tags: tuple[str, ...]) -> str:
    """``block`` without the listed elements (tags and contents)."""
    for tag in tags:
        block = _element_pattern(tag).sub(" ", block)
    return block


def _clean(text: str) -> str:
    """Drop markup tags and collapse whitespace."""
    return " ".join(_TAG.sub(" ", text).split())


def _first_char(path: Path) -> str:
    """The first non-whitespace character of a text file ('' when it is blank)."""
    with open_text(path) as handle:
        for text in handle:
            if text.strip():
                return text.strip()[0]
    return ""


