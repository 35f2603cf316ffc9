"""Open-domain QA question files: JSONL with id, question and answers (answer strings or regexes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from sleuth.corpus.jsonl import iter_jsonl, require, require_id, require_new_id, require_query_text
from sleuth.corpus.model import Query
from sleuth.corpus.squad import is_squad
from sleuth.errors import InputError


def read_questions(path: str | Path) -> Iterator[Query]:
    """Stream Queries from ``{"id", "question", "answers": [...]}`` lines; answers go to ``metadata["answers"]``;
    an id that comes twice, and a question without a non-empty answer, are InputErrors naming the line."""
    first_lines: dict[str, int] = {}
    for number, obj in iter_jsonl(path):
        if number == 1 and "id" not in obj and is_squad(obj):
            raise InputError("a SQuAD JSON file, where questions JSONL (id, question, answers per line) is read "
                             "(sleuth eval takes a SQuAD file, with its questions, as --corpus or --questions)", path=path)
        qid = require_new_id(first_lines, require_id(obj, "id", path, number), path, number)
        question = require_query_text(obj, "question", path, number)
        answers = require(obj, "answers", path, number, list)
        if not all(isinstance(a, str) for a in answers):
            raise InputError("answers must be strings", path=path, line=number, field="answers")
        if not answers or not all(a.strip() for a in answers):  # before: scored as a miss, every pipeline alike
            raise InputError("needs at least one answer, none of them empty", path=path, line=number,
                             field="answers")
        extra = {k: v for k, v in obj.items() if k not in ("id", "question")}
        yield Query(qid, question, extra)
