"""HotpotQA in its original JSON format: questions with supporting facts and context, and title -> sentences corpora.

2WikiMultihopQA shares the layout (``_id, question, answer, type, supporting_facts, context``) and adds ``evidences``
([subject, relation, object] triples) and ``entity_ids``: the same reader reads it.

Paragraph documents use the Wikipedia title as id (supporting facts refer to titles) and the sentences joined with
'' as HotpotQA does (its sentences keep their leading spaces). A JSON list (the releases) or JSON Lines: errors name
``file[record]`` or ``file:line``; a record of another dataset (MuSiQue, SQuAD) is named as such.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sleuth.corpus.jsonfile import first_json_record, iter_json_records, load_json_object
from sleuth.corpus.jsonl import require, require_id, require_nonblank
from sleuth.corpus.model import Document, Query
from sleuth.errors import InputError


def read_hotpotqa_questions(path: str | Path) -> Iterator[Query]:
    """Questions of a HotpotQA file (train, dev distractor/fullwiki, test); ``metadata`` holds answer, type, level,
    supporting_facts, supporting_titles, context_titles and (2WikiMultihopQA) evidences (the fields absent from a file
    are left out)."""
    for where, record in iter_json_records(path):
        refuse_other_dataset(record, where)
        query_id = require_id(record, "_id", where, None)  # before: 1.0 taken as the id "1.0"
        question = require_nonblank(record, "question", where, None, "empty question")  # before: evaluated
        metadata: dict[str, Any] = {key: record[key] for key in ("answer", "type", "level") if key in record}
        if "supporting_facts" in record:
            facts = [_supporting_fact(fact, where) for fact in require(record, "supporting_facts", where, None, list)]
            metadata["supporting_facts"] = facts
            metadata["supporting_titles"] = list(dict.fromkeys(title for title, _ in facts))
        if "context" in record:
            metadata["context_titles"] = [title for title, _ in _context(record, where)]
        if "evidences" in record:
            metadata["evidences"] = [_evidence(triple, where) for triple in require(record, "evidences", where, None,
                                                                                     list)]
        yield Query(id=query_id, text=question, metadata=metadata)


def refuse_other_dataset(record: Any, where: str) -> None:
    """An InputError naming ``where`` when ``record`` is another dataset's (MuSiQue, SQuAD), not a HotpotQA-format
    question."""
    if isinstance(record, dict) and "_id" not in record and (other := other_dataset(record)) is not None:
        raise InputError(f"a {other} record, not a HotpotQA-format question (HotpotQA, 2WikiMultihopQA: '_id', "
                         "'question', 'supporting_facts', 'context')", path=where)


def other_dataset(record: dict[str, Any]) -> str | None:
    """The dataset a record given for a HotpotQA question comes from, when its keys tell (MuSiQue, SQuAD)."""
    if "paragraphs" in record and "id" in record:
        return "MuSiQue"
    if "data" in record and "version" in record:
        return "SQuAD"
    return None


def read_hotpotqa_documents(path: str | Path) -> Iterator[Document]:
    """The ``hotpotqa`` corpus format: a ``*_corpus.json`` file (title -> sentences), or a question file of HotpotQA's
    format (HotpotQA, 2WikiMultihopQA: records with ``_id`` and ``context``), whose context paragraphs are the corpus
    (:func:`hotpotqa_context_documents`)."""
    first = first_json_record(path)
    if "_id" in first and "context" in first:
        return hotpotqa_context_documents(path)
    return read_hotpotqa_corpus(path)


def read_hotpotqa_corpus(path: str | Path) -> Iterator[Document]:
    """Paragraphs of a ``*_corpus.json`` file (an object mapping title -> list of sentences) as Documents."""
    for title, sentences in load_json_object(path).items():
        yield paragraph_document(title, _sentences(sentences, f"{path}[{title!r}]"))


def hotpotqa_context_documents(path: str | Path) -> Iterator[Document]:
    """The unique paragraphs (by title, first occurrence wins) of the questions' contexts, as Documents."""
    seen: set[str] = set()
    for _, context in hotpotqa_contexts(path):
        for title, sentences in context:
            if title not in seen:
                seen.add(title)
                yield paragraph_document(title, sentences)


def hotpotqa_contexts(path: str | Path) -> Iterator[tuple[str, list[tuple[str, list[str]]]]]:
    """Each question's id and its ``context`` as ``(title, sentences)`` pairs, in file order (validated)."""
    for where, record in iter_json_records(path):
        refuse_other_dataset(record, where)  # before: "field '_id': missing" of a MuSiQue file
        yield require(record, "_id", where, None), _context(record, where)


def paragraph_document(title: str, sentences: list[str]) -> Document:
    """A HotpotQA paragraph: id = title, text = sentences joined with '', sentences kept in ``metadata``."""
    return Document(id=title, title=title, text="".join(sentences).strip(), metadata={"sentences": sentences})


def _context(record: dict[str, Any], where: str) -> list[tuple[str, list[str]]]:
    """The ``context`` of a question as ``(title, sentences)`` pairs, validated."""
    pairs = []
    for entry in require(record, "context", where, None, list):
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
            raise InputError("expected [title, [sentences]] entries", path=where, field="context")
        pairs.append((entry[0], _sentences(entry[1], where, "context")))
    return pairs


def _sentences(value: Any, where: str, field: str | None = None) -> list[str]:
    """``value`` checked to be a list of strings."""
    if not (isinstance(value, list) and all(isinstance(s, str) for s in value)):
        raise InputError("expected a list of sentences (strings)", path=where, field=field)
    return value


def _supporting_fact(fact: Any, where: str) -> tuple[str, int]:
    """A ``[title, sentence_index]`` pair, validated."""
    if not (isinstance(fact, list) and len(fact) == 2 and isinstance(fact[0], str) and isinstance(fact[1], int)):
        raise InputError("expected [title, sentence_index] entries", path=where, field="supporting_facts")
    return fact[0], fact[1]


def _evidence(triple: Any, where: str) -> tuple[str, str, str]:
    """A 2WikiMultihopQA ``[subject, relation, object]`` triple, validated."""
    if not (isinstance(triple, list) and len(triple) == 3 and all(isinstance(x, str) for x in triple)):
        raise InputError("expected [subject, relation, object] entries", path=where, field="evidences")
    return triple[0], triple[1], triple[2]
