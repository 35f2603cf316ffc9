"""The passages ``sleuth cos eval`` retrieves from, in one of two settings.

* ``questions`` (the default): the context paragraphs (10 per HotpotQA / 2WikiMultihopQA question) of the evaluated
  questions only, in one index: 100 questions -> 1,000 paragraphs.
* ``pooled``: one fixed corpus, the context paragraphs of every question of the ``--questions`` files (whatever part
  or ``--limit`` is evaluated) plus those of the ``--distractors`` files (e.g. the training files), as in the paper's
  open setting where retrieval must find the gold among many.

Paragraphs are deduplicated by title, the first occurrence kept, and a paragraph's id is its title (supporting
facts name titles): the same title never had two different paragraphs in these files but for 7 titles, each
two copies of one abstract that differ in a few characters (e.g. a non-breaking space), so every gold title resolves to one
passage. All HotpotQA dev and train files give 24,989 paragraphs.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from pathlib import Path

from sleuth.corpus.hotpotqa import hotpotqa_contexts
from sleuth.corpus.model import Passage

CORPUS_SETTINGS = ("questions", "pooled")


def context_paragraphs(paths: Iterable[str | Path],
                       question_ids: Collection[str] | None = None) -> list[tuple[str, str]]:
    """``(title, text)`` of the context paragraphs of the questions in ``paths`` (only ``question_ids`` when given),
    text = the sentences joined as HotpotQA does."""
    return [(title, "".join(sentences).strip()) for path in paths for qid, context in hotpotqa_contexts(path)
            if question_ids is None or qid in question_ids for title, sentences in context]


def unique_passages(paragraphs: Iterable[tuple[str, str]]) -> list[Passage]:
    """Passages of ``(title, text)`` pairs, one per title (the first), id = title."""
    passages: dict[str, Passage] = {}
    for title, text in paragraphs:
        if title not in passages:
            passages[title] = Passage(id=title, doc_id=title, text=text, title_path=(title,))
    return list(passages.values())


def eval_passages(setting: str, questions_paths: Sequence[str | Path], question_ids: Collection[str],
                  distractors: Sequence[str | Path] = ()) -> list[Passage]:
    """The corpus of ``setting`` (see the module docstring): the paragraphs of the evaluated ``question_ids``, or
    of every question of ``questions_paths`` and ``distractors``."""
    if setting == "pooled":
        return unique_passages(context_paragraphs([*questions_paths, *distractors]))
    return unique_passages(context_paragraphs(questions_paths, set(question_ids)))
