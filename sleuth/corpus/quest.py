"""QUEST: example JSONL (query, docs, original_query, scores, metadata), documents.jsonl, predictions, and the proxy
corpus built from the examples' verbatim attribution sentences.

Query ids: an example's ``id`` field when present, else ``"{prefix}-{line:04d}"`` where ``prefix`` defaults to the
file name up to its first dot and ``line`` is the 1-based line number (``val.jsonl`` line 1 -> ``"val-0001"``).
They are stable for a given file, and they let predictions be joined to gold by id rather than by query string.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sleuth.corpus.jsonl import (
    iter_jsonl,
    read_jsonl_documents,
    require,
    require_id,
    require_new_id,
    require_query_text,
)
from sleuth.corpus.model import Document, Query
from sleuth.errors import InputError
from sleuth.io import atomic_write_text

TOP_LEVEL_FIELDS = ("docs", "original_query", "scores")  # the example format's fields besides query and metadata


def check_titles(titles: Any, path: str | Path, line: int, field: str) -> None:
    """``titles`` is a list of document titles (strings)."""
    if not isinstance(titles, list):
        raise InputError(f"expected a list of titles, found {type(titles).__name__}", path=path, line=line,
                         field=field)
    for position, title in enumerate(titles, start=1):
        if not isinstance(title, str):
            raise InputError(f"doc {position} is {title!r}, not a document title (a string)", path=path, line=line,
                             field=field)


def check_docs_and_scores(docs: list, scores: Any, path: str | Path, line: int) -> None:
    """``docs`` is a list of titles (strings); ``scores``, when given, one number per doc."""
    check_titles(docs, path, line, "docs")
    if scores is None:
        return
    if not isinstance(scores, list):
        raise InputError(f"expected a list of numbers, found {type(scores).__name__}", path=path, line=line,
                         field="scores")
    if len(scores) != len(docs):
        raise InputError(f"{len(scores)} scores for {len(docs)} docs (one score per doc)", path=path, line=line,
                         field="scores")
    for position, score in enumerate(scores, start=1):
        if not isinstance(score, int | float) or isinstance(score, bool):
            raise InputError(f"score {position} is {score!r}, not a number", path=path, line=line, field="scores")


def read_quest_examples(path: str | Path, id_prefix: str | None = None) -> Iterator[Query]:
    """Stream QUEST examples as Queries; ``metadata`` holds docs, original_query, scores and the example's own
    metadata keys (template, domain, attributions, relevance_ratings, ...) flattened."""
    return (query for _, query in numbered_quest_examples(path, id_prefix))


def numbered_quest_examples(path: str | Path, id_prefix: str | None = None) -> Iterator[tuple[int, Query]]:
    """:func:`read_quest_examples` with each example's line number. A query id given twice is an InputError naming
    both lines (before, the later example silently took the earlier one's place wherever examples are keyed by id:
    the gold sets scored, the predictions written)."""
    prefix = Path(path).name.split(".")[0] if id_prefix is None else id_prefix
    first_lines: dict[str, int] = {}
    for number, obj in iter_jsonl(path):
        query = require_query_text(obj, "query", path, number)
        docs = require(obj, "docs", path, number, list)
        check_docs_and_scores(docs, obj.get("scores"), path, number)
        original = obj.get("original_query")
        if original is not None and not isinstance(original, str):
            raise InputError(f"expected the query with its constraints in <mark> spans, found "
                             f"{type(original).__name__}", path=path, line=number, field="original_query")
        nested = obj.get("metadata") or {}
        if not isinstance(nested, dict):
            raise InputError(f"expected object, found {type(nested).__name__}", path=path, line=number,
                             field="metadata")
        if nested.get("ranking") is not None:  # the ranking `quest predict` writes, which `quest eval` scores
            check_titles(nested["ranking"], path, number, "metadata.ranking")
        query_id = require_id(obj, "id", path, number) if "id" in obj else f"{prefix}-{number:04d}"
        require_new_id(first_lines, query_id, path, number)
        metadata = {"docs": docs, "original_query": original, "scores": obj.get("scores"), **nested}
        yield number, Query(id=query_id, text=query, metadata=metadata)


def read_quest_documents(path: str | Path) -> Iterator[Document]:
    """Stream the QUEST corpus (documents.jsonl, ``{title, text}``); the title is the document id."""
    return read_jsonl_documents(path, fields={"id": "title"})


def quest_attribution_documents(paths: str | Path | Iterable[str | Path]) -> Iterator[Document]:
    """A proxy corpus from example files: one Document per gold title that has attribution sentences, its unique
    sentences (in first-seen order, across all examples and files) joined by spaces; ``metadata["sentences"]``."""
    sentences: dict[str, dict[str, None]] = {}  # title -> ordered set of sentences
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        for line, query in numbered_quest_examples(path):
            for title, sentence in _attribution_sentences(query.metadata.get("attributions"), path, line):
                sentences.setdefault(title, {})[sentence] = None
    for title, unique in sentences.items():
        yield Document(id=title, title=title, text=" ".join(unique), metadata={"sentences": list(unique)})


def write_quest_predictions(path: str | Path, examples: Iterable[Query], with_ids: bool = True) -> int:
    """Write Queries in the QUEST example format (one JSON object per line, atomically); return the count.

    ``metadata["docs"]`` (required) is the predicted list and ``metadata["scores"]`` its optional scores; other
    metadata keys go to the example's ``metadata``. ``with_ids`` adds each query id as an ``id`` field (read back by
    :func:`read_quest_examples`); set it to False for QUEST's own scripts, which reject unknown fields.
    """
    lines = []
    for query in examples:
        if not isinstance(query.metadata.get("docs"), list):
            raise InputError(f"query '{query.id}' has no list of docs in its metadata", field="docs")
        example: dict[str, Any] = {"id": query.id} if with_ids else {}
        example["query"] = query.text
        example.update({key: query.metadata.get(key) for key in TOP_LEVEL_FIELDS})
        example["metadata"] = {k: v for k, v in query.metadata.items() if k not in TOP_LEVEL_FIELDS}
        lines.append(json.dumps(example, ensure_ascii=False) + "\n")
    atomic_write_text(path, "".join(lines))
    return len(lines)


def write_quest_documents(path: str | Path, documents: Iterable[Document]) -> int:
    """Write Documents as a QUEST corpus file (``{"title", "text"}`` per line, atomically); return the count."""
    lines = [json.dumps({"title": doc.title or doc.id, "text": doc.text}, ensure_ascii=False) + "\n"
             for doc in documents]
    atomic_write_text(path, "".join(lines))
    return len(lines)


def read_quest_predictions(path: str | Path, id_prefix: str | None = None) -> dict[str, Query]:
    """Prediction examples by query id (ids as in :func:`read_quest_examples`); a repeated id, or a file without
    a prediction (which scored every measure 0 before), is an InputError.

    Join them to gold by id: a file without ``id`` fields gets line-based ids, which match the gold file's only
    when both list the same queries in the same order (pass ``id_prefix`` = the gold file's prefix, e.g. "val").
    """
    predictions = {query.id: query for query in read_quest_examples(path, id_prefix=id_prefix)}
    if not predictions:
        raise InputError("no predictions (a JSON object per line with query and docs)", path=path)
    return predictions


def _attribution_sentences(attributions: Any, path: str | Path, line: int) -> Iterator[tuple[str, str]]:
    """``(title, sentence)`` pairs of an example's attributions: title -> list of {query span: sentence} or null;
    another shape is an InputError naming the example (before: an AttributeError traceback)."""
    where: dict[str, Any] = {"path": path, "line": line, "field": "metadata.attributions"}
    if not isinstance(attributions, dict | None):
        raise InputError(f"expected {{title: [{{query span: sentence}}, ...]}}, found {type(attributions).__name__}",
                         **where)
    for title, notes in (attributions or {}).items():
        if not isinstance(notes, list | None) or not all(isinstance(a, dict | None) for a in notes or ()):
            raise InputError(f"'{title}' holds {notes!r:.80}, not a list of {{query span: sentence}} objects", **where)
        for annotation in notes or ():
            for sentence in (annotation or {}).values():
                if isinstance(sentence, str) and sentence.strip():
                    yield title, sentence.strip()
