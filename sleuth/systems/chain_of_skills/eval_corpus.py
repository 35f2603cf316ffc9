"""The passages ``sleuth cos eval`` retrieves from, in one of two settings.

* ``questions`` (the default): the context paragraphs (10 per HotpotQA / 2WikiMultihopQA question) of the evaluated
  questions only, in one index: 100 questions -> 1,000 paragraphs.
* ``pooled``: one fixed corpus, the context paragraphs of every question of the ``--questions`` files (whatever part
  or ``--max-queries`` is evaluated) plus those of the ``--distractors`` files (e.g. the training files), as in the
  paper's open setting where retrieval must find the gold among many.

Paragraphs are deduplicated by title, the first occurrence kept, and a paragraph's id is its title (supporting
facts name titles): the same title never had two different paragraphs in these files but for 7 titles, each
two copies of one abstract that differ in a few characters (e.g. a non-breaking space), so every gold title resolves to one
passage. All HotpotQA dev and train files give 24,989 paragraphs.

Skill indexes are cached (:func:`eval_skill_index`: under ``$SLEUTH_HOME/indexes/cos-eval-<corpus digest>/``,
keyed by the model's weights and the skill): a pooled corpus is the same for every part, limit and chain, and a part's
own paragraphs the same for every limit set, ablation and shard, so each is encoded once per model; shard processes
started together wait for the first one's build (an ``flock`` beside the index) instead of encoding it each.
"""

from __future__ import annotations

import fcntl
import hashlib
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

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


def corpus_digest(passages: Sequence[Passage]) -> str:
    """A SHA-256 prefix of the passages' ids and texts, in order (names a corpus's cache folder)."""
    digest = hashlib.sha256()
    for passage in passages:
        digest.update(f"{passage.id}\0{passage.text}\0".encode())
    return digest.hexdigest()[:12]


def eval_skill_index(passages: Sequence[Passage], model: Any, model_name: str, skill: str, cache: bool,
                     show_progress: bool = False) -> Any:
    """``passages`` encoded for ``skill`` by ``model`` (a ``SkillIndex``); with ``cache``, loaded from (or built once
    into) the folder named by the corpus digest and the model's weights (``model_name``: its path or "minilm")."""
    from sleuth.paths import home_dir
    from sleuth.pipelines.workspace import params_key
    from sleuth.systems.chain_of_skills.skill_index import KIND, SkillIndex, model_info

    if not cache:
        return SkillIndex.build(passages, model, skill, show_progress=show_progress)
    encoder = model_info(model_name)
    path = (home_dir() / "indexes" / f"cos-eval-{corpus_digest(passages)}" /
            params_key(KIND, {"encoder": encoder, "skill": skill, "factory": "Flat"}))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f"{path.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process builds, the others load what it wrote (released on close)
        if (path / "manifest.json").is_file():
            return SkillIndex.load(path)
        return SkillIndex.build(passages, model, skill, path=path, encoder=encoder,
                                corpus_info={"passages": len(passages)}, show_progress=show_progress)


def eval_skill_indexes(passages: Sequence[Passage], model: Any, model_name: str, cache: bool,
                       show_progress: bool = False) -> tuple[Any, Any]:
    """The retrieval and the linking index of ``passages`` (:func:`eval_skill_index`): one index for both when the
    two skills read passages through the same weights (``MultiExpertConfig.shares_context``, the shipped model)."""
    retrieval = eval_skill_index(passages, model, model_name, "retrieval", cache, show_progress)
    if model.config.shares_context("linking", "retrieval"):
        return retrieval, retrieval
    return retrieval, eval_skill_index(passages, model, model_name, "linking", cache, show_progress)
