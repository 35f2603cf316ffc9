"""MuSiQue in its original format: questions with 20 paragraphs each (is_supporting), as JSON Lines (the release's
``musique_ans_v1.0_*.jsonl``) or a JSON list (HippoRAG's samples), and paragraph corpora.

Titles repeat across different MuSiQue paragraphs, so a paragraph's id is ``"{title}#{8 hex digits of the SHA-1 of
its text}"`` (:func:`paragraph_id`): stable, and the same for a question's paragraph and its corpus copy, which lets
``supporting_ids`` serve as qrels. Errors name ``file[record]`` (a JSON list) or ``file:line`` (JSON Lines).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sleuth.corpus.jsonfile import first_json_record, iter_json_records
from sleuth.corpus.jsonl import require
from sleuth.corpus.model import Document, Query
from sleuth.errors import InputError


def paragraph_id(title: str, text: str) -> str:
    """The stable id of a MuSiQue paragraph: title, '#', the first 8 hex digits of SHA-1(text)."""
    return f"{title}#{hashlib.sha1(text.encode('utf-8')).hexdigest()[:8]}"


def read_musique_questions(path: str | Path) -> Iterator[Query]:
    """Questions of a MuSiQue file; ``metadata``: answer, answer_aliases, answerable, question_decomposition,
    paragraphs (``idx, title, text, is_supporting, id``), supporting_ids and supporting_titles."""
    for where, record in iter_json_records(path):
        query_id = require(record, "id", where, None)
        question = require(record, "question", where, None)
        paragraphs = _paragraphs(record, where)
        supporting = [p for p in paragraphs if p["is_supporting"]]
        metadata: dict[str, Any] = {key: record[key] for key in ("answer", "answer_aliases", "answerable") if key in record}
        metadata["question_decomposition"] = record.get("question_decomposition", [])
        metadata["paragraphs"] = paragraphs
        metadata["supporting_ids"] = [p["id"] for p in supporting]
        metadata["supporting_titles"] = list(dict.fromkeys(p["title"] for p in supporting))
        yield Query(id=query_id, text=question, metadata=metadata)


def read_musique_documents(path: str | Path) -> Iterator[Document]:
    """The ``musique`` corpus format: a ``*_corpus.json`` file (``{title, text}`` records), or a question file
    (records with ``paragraphs``, JSON list or JSON Lines), whose paragraphs are the corpus
    (:func:`musique_context_documents`)."""
    if "paragraphs" in first_json_record(path):
        return musique_context_documents(path)
    return read_musique_corpus(path)


def read_musique_corpus(path: str | Path) -> Iterator[Document]:
    """Paragraphs of a ``*_corpus.json`` file (a list of ``{title, text}``) as Documents with :func:`paragraph_id`."""
    for where, record in iter_json_records(path):
        yield paragraph_document(require(record, "title", where, None), require(record, "text", where, None))


def musique_context_documents(path: str | Path) -> Iterator[Document]:
    """The unique paragraphs of a question file's contexts, as Documents (for files shipped without a corpus)."""
    seen: set[str] = set()
    for where, record in iter_json_records(path):
        for paragraph in _paragraphs(record, where):
            if paragraph["id"] not in seen:
                seen.add(paragraph["id"])
                yield paragraph_document(paragraph["title"], paragraph["text"])


def paragraph_document(title: str, text: str) -> Document:
    """A MuSiQue paragraph as a Document."""
    return Document(id=paragraph_id(title, text), title=title, text=text)


def _paragraphs(record: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """A question's paragraphs, validated and normalised to ``{idx, title, text, is_supporting, id}``."""
    result = []
    for index, paragraph in enumerate(require(record, "paragraphs", where, None, list)):
        if not isinstance(paragraph, dict):
            raise InputError("expected objects", path=where, field="paragraphs")
        inner = f"{where}.paragraphs[{index}]"
        title = require(paragraph, "title", inner, None)
        text = require(paragraph, "paragraph_text", inner, None)
        result.append({"idx": paragraph.get("idx", index), "title": title, "text": text,
                       "is_supporting": bool(paragraph.get("is_supporting", False)),
                       "id": paragraph_id(title, text)})
    return result
