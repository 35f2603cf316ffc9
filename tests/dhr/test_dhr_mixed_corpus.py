"""The default ``dhr`` pipeline where DHR is meant to help: two SQuAD 2.0 dev articles (their paragraphs without
context) mixed with 600 NQ passages as short distractor documents, all the articles' questions and the NQ
questions whose gold passage is in the slice, against the default flat ``dense`` pipeline over the same corpus.
Real MiniLM, real data (slow: encodes ~700 passages and ~1,100 questions; the workspace's encoder remembers them
for the second pipeline)."""

from __future__ import annotations

import pytest

from sleuth.corpus.model import Query
from sleuth.corpus.squad import read_squad_questions
from sleuth.pipelines.config import load_pipeline
from sleuth.pipelines.mixed_source import MixedCorpusSource
from sleuth.pipelines.workspace import Workspace
from tests.squad_nq_support import nq_slice, squad_articles

ARTICLES = ("Force", "Warsaw")  # evaluation articles of the default split: the length prior was not chosen on them
NQ_PASSAGES = 600


@pytest.fixture(scope="module")
def mixed(data_dir, tmp_path_factory):
    """A workspace over the two articles + the NQ slice, and the SQuAD and NQ questions with their gold passages."""
    folder = tmp_path_factory.mktemp("dhr-mixed")
    squad = squad_articles(data_dir, folder, ARTICLES)
    nq_corpus, nq = nq_slice(data_dir, folder, NQ_PASSAGES)
    squad_questions = [Query(q.id, q.text, metadata={"gold": q.metadata["gold_passage"]})
                       for q in read_squad_questions(squad)]
    nq_questions = [Query(q["id"], q["question"], metadata={"gold": q["gold_passage"]}) for q in nq]
    ws = Workspace(MixedCorpusSource(squad, distractors=(nq_corpus,)), show_progress=False, home=folder / "home")
    return ws, squad_questions, nq_questions


def r_at_1(stage, questions: list[Query]) -> float:
    run = stage.transform(questions)
    return sum(run[q.id][0].id == q.metadata["gold"] for q in questions) / len(questions)


@pytest.mark.slow
def test_default_dhr_beats_dense_on_article_questions_and_is_never_worse_on_short_document_questions(mixed):
    ws, squad_questions, nq_questions = mixed
    assert len(squad_questions) > 800 and len(nq_questions) > 200
    dense, default = load_pipeline("dense", ws), load_pipeline("dhr", ws)
    # measured: dense .669, default .703 on the articles' 863 questions; .958 and .958 on the 240 NQ questions
    assert r_at_1(default, squad_questions) >= r_at_1(dense, squad_questions) + 0.02
    assert r_at_1(default, nq_questions) >= r_at_1(dense, nq_questions)
