"""bench/dhr_shape_grid.py scores a setting as the ``dhr`` pipeline ranks: on two SQuAD 2.0 dev articles mixed with 50
NQ passages, the bench's numpy scores of a setting give the same top-10 passages, in the same order, as the ``dhr``
pipeline with that setting's lam / length_prior / length_prior_below, and its flat scores the same as ``dense``.
Real MiniLM, real data (about 150 texts encoded)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.dhr_shape_grid import DEFAULT, Setting, SettingScores, dhr_index, shared_workspaces
from sleuth.corpus.model import Query
from sleuth.corpus.squad import read_squad_questions
from sleuth.pipelines.mixed_source import with_distractors
from sleuth.pipelines.sources import corpus_source
from sleuth.systems.dhr.index import prior_applies, top_k
from tests.squad_nq_support import nq_slice, squad_articles

ARTICLES = ("1973_oil_crisis", "Packet_switching")  # the two shortest dev articles (24 and 23 paragraphs)
NQ_PASSAGES = 50
SQUAD_EVERY = 10
K = 10


@pytest.fixture(scope="module")
def small(data_dir, tmp_path_factory):
    """The workspace of the small mixed corpus, its ``dhr`` index, the questions and their vectors."""
    folder = tmp_path_factory.mktemp("shape-grid")
    squad = squad_articles(data_dir, folder, ARTICLES)
    nq_corpus, nq = nq_slice(data_dir, folder, NQ_PASSAGES)
    questions = ([Query(q.id, q.text) for q in list(read_squad_questions(squad))[::SQUAD_EVERY]]
                 + [Query(q["id"], q["question"]) for q in nq])
    ws = shared_workspaces({"mixed": with_distractors(corpus_source(squad), (nq_corpus,))}, home=folder / "home")["mixed"]
    index = dhr_index(ws)
    # the same batch the pipelines encode: the encoder hands them these very vectors
    vectors = ws.encoder("minilm").encode_queries([q.text for q in questions])
    return ws, index, questions, vectors


def top_ids(index, scores: np.ndarray) -> list[list[str]]:
    return [[index.passages.ids[row] for row in top_k(row_scores, K)] for row_scores in scores]


@pytest.mark.slow
@pytest.mark.parametrize("setting", [DEFAULT, Setting(1.0, 0.03, 0.52), Setting(0.5, 0.02, 0.50)],
                         ids=lambda s: s.label)
def test_bench_scores_rank_as_the_dhr_pipeline(small, setting):
    ws, index, questions, vectors = small
    assert index.num_documents == NQ_PASSAGES + len(ARTICLES) and len(questions) > 60
    scores = SettingScores(index, vectors)
    gated = prior_applies(scores.best, setting.gate)
    assert 0 < gated.sum() < len(questions)  # the gate splits the questions: both branches are compared
    run = ws.pipeline("dhr", k=K, **setting.stage_keys).transform(questions)
    expected = top_ids(index, scores.final(setting))
    assert [[hit.id for hit in run[q.id]] for q in questions] == expected
    assert expected != top_ids(index, scores.flat)  # the setting reorders some question's top 10


@pytest.mark.slow
def test_bench_flat_scores_rank_as_dense(small):
    ws, index, questions, vectors = small
    run = ws.pipeline("dense", k=K).transform(questions)
    assert [[hit.id for hit in run[q.id]] for q in questions] == top_ids(index, SettingScores(index, vectors).flat)
