"""SQuAD (v1.1 and v2.0 JSON): Wikipedia articles with their paragraphs in order, each question under its paragraph.

A paragraph is the retrieval unit: :func:`read_squad_documents` yields one Document per paragraph, id
``"{article}#{n}"`` (n counts from 0 within the article), title = the article title with underscores as spaces,
``metadata`` = article and paragraph number. The paragraphs of an article share its title and come in order, so a
hierarchical index groups them back into the article (first paragraph = lead; see
:func:`sleuth.systems.dhr.structure.group_passages_into_documents`), while flat indexes see one passage each.

:func:`read_squad_questions` gives every question with its gold paragraph as qrels (``metadata["gold_passage"]``);
``metadata["answers"]`` holds the distinct answer strings, empty for the unanswerable questions of v2.0 (they still
belong to their paragraph, so they count for retrieval). Errors name ``file[data i].paragraphs[j]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sleuth.corpus.jsonfile import load_json_object
from sleuth.corpus.jsonl import require
from sleuth.corpus.model import Document, Qrels, Query
from sleuth.errors import InputError


def paragraph_id(article: str, number: int) -> str:
    """The id of an article's ``number``-th paragraph (0-based)."""
    return f"{article}#{number}"


def read_squad_documents(path: str | Path) -> Iterator[Document]:
    """Every paragraph of a SQuAD file as a Document (title = article title, text = the paragraph)."""
    for article, number, paragraph, where in _paragraphs(path):
        yield Document(id=paragraph_id(article, number), title=article.replace("_", " "),
                       text=require(paragraph, "context", where, None),
                       metadata={"article": article, "paragraph": number})


def read_squad_questions(path: str | Path) -> Iterator[Query]:
    """Every question of a SQuAD file; ``metadata``: answers (distinct strings, [] when unanswerable),
    is_impossible, gold_passage, article."""
    for article, number, paragraph, where in _paragraphs(path):
        for index, qa in enumerate(require(paragraph, "qas", where, None, list)):
            inner = f"{where}.qas[{index}]"
            if not isinstance(qa, dict):
                raise InputError("expected an object", path=inner)
            answers = []
            for answer in require(qa, "answers", inner, None, list):
                if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
                    raise InputError("expected objects with a 'text' string", path=inner, field="answers")
                answers.append(answer["text"])
            yield Query(require(qa, "id", inner, None), require(qa, "question", inner, None),
                        {"answers": list(dict.fromkeys(answers)), "is_impossible": bool(qa.get("is_impossible")),
                         "gold_passage": paragraph_id(article, number), "article": article})


def squad_qrels(queries: list[Query]) -> Qrels:
    """Each question's gold paragraph as its one relevant passage."""
    return {q.id: {q.metadata["gold_passage"]: 1} for q in queries}


def is_squad(data: Any) -> bool:
    """Whether parsed JSON looks like SQuAD: ``{"data": [{"title", "paragraphs"}, ...]}``."""
    return (isinstance(data, dict) and isinstance(data.get("data"), list) and bool(data["data"])
            and isinstance(data["data"][0], dict) and "paragraphs" in data["data"][0])


def _paragraphs(path: str | Path) -> Iterator[tuple[str, int, dict[str, Any], str]]:
    """``(article title, paragraph number, paragraph object, location)`` in file order, validated."""
    articles = require(load_json_object(path), "data", path, None, list)
    for i, record in enumerate(articles):
        where = f"{path}[data {i}]"
        if not isinstance(record, dict):
            raise InputError("expected an object", path=where)
        title = require(record, "title", where, None)
        for number, paragraph in enumerate(require(record, "paragraphs", where, None, list)):
            if not isinstance(paragraph, dict):
                raise InputError("expected an object", path=f"{where}.paragraphs[{number}]")
            yield title, number, paragraph, f"{where}.paragraphs[{number}]"
