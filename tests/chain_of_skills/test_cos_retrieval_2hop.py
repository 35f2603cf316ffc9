"""The two-round retrieval-only chain (paper 002 §5.2 baseline) from YAML on real HotpotQA dev paragraphs: hop 1 by
single retrieval, hop 2 by expanded retrieval, path score = the sum of the two, no links, no reranking."""

from __future__ import annotations

import json

import pytest

from sleuth.pipelines.config import load_pipeline
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.systems.chain_of_skills.chain import PATH_SEPARATOR


@pytest.mark.slow
def test_retrieval_2hop_chain_sums_retrieval_and_expanded_scores(two_dev_questions, two_question_corpus, tmp_path):
    questions = two_dev_questions[0]
    (tmp_path / "two.yaml").write_text(json.dumps({"name": "two", "stages": [{"cos_chain": {
        "chain": "retrieval-2hop", "k_hop1": 3, "k_expanded": 4, "k": 50}}]}), encoding="utf-8")
    workspace = Workspace(CorpusSource(two_question_corpus, format="hotpotqa"), home=tmp_path / "home",
                          show_progress=False)
    run = load_pipeline(tmp_path / "two.yaml", workspace)(questions)
    for query in questions:
        hits = run[query.id]
        assert 0 < len(hits) <= 3 * 4
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert len({frozenset(h.id.split(PATH_SEPARATOR)) for h in hits}) == len(hits)  # no duplicate pairs
        assert len({h.extras["path"][0].id for h in hits}) <= 3
        for hit in hits:
            first, second = hit.extras["path"]
            assert hit.id == f"{first.id}{PATH_SEPARATOR}{second.id}" and first.title != second.title
            assert set(first.extras) == {"retrieval", "merged"} and set(second.extras) == {"expanded", "merged"}
            assert hit.score == pytest.approx(first.extras["retrieval"] + second.extras["expanded"])
