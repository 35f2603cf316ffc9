"""Open-domain QA question files: JSONL with id, question and answers (answer strings or regexes)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from sleuth.corpus.jsonl import iter_jsonl, require, require_id, require_new_id, require_query_text
from sleuth.corpus.model import Qrels, Query
from sleuth.corpus.squad import is_squad, read_squad_questions
from sleuth.errors import InputError


def read_questions(path: str | Path) -> Iterator[Query]:
    """Stream Queries from ``{"id", "question", "answers": [...]}`` lines; answers go to ``metadata["answers"]``;
    an id that comes twice, and a question without a non-empty answer, are InputErrors naming the line. A SQuAD
    file gives its answerable questions (:func:`sleuth.corpus.squad.read_squad_questions`: answers, gold passage)."""
    if is_squad_file(path):
        yield from answerable_squad_questions(path)
        return
    first_lines: dict[str, int] = {}
    for number, obj in iter_jsonl(path):
        if number == 1 and "id" not in obj and is_squad(obj):  # a one-line SQuAD file not named .json
            yield from answerable_squad_questions(path)
            return
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


def answerable_squad_questions(path: str | Path) -> Iterator[Query]:
    """The questions of a SQuAD file that have an answer (the unanswerable ones of SQuAD 2.0 left out)."""
    return (q for q in read_squad_questions(path) if q.metadata["answers"])


def is_squad_file(path: str | Path) -> bool:
    """Whether ``path`` is a SQuAD JSON file (``.json`` holding ``{"version", "data": [articles]}``)."""
    from sleuth.corpus.jsonfile import load_json

    if Path(path).suffix.lower() != ".json":
        return False
    try:
        return is_squad(load_json(path))
    except InputError:  # not one JSON document (JSON Lines named .json), or missing: read as questions JSONL
        return False


def gold_passage_qrels(queries: Sequence[Query]) -> Qrels | None:
    """Each question's ``gold_passage`` as its judged-relevant passage when every question names one (NQ's
    questions.jsonl does, as SQuAD files do), so `sleuth eval --questions` measures the passages found beside the
    answers; None when some question names none (then answers alone are measured)."""
    gold = {q.id: q.metadata.get("gold_passage") for q in queries}
    if not gold or not all(isinstance(g, str) and g for g in gold.values()):
        return None
    return {qid: {str(passage): 1} for qid, passage in gold.items()}
