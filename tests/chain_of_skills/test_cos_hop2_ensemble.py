"""The hop-2 reranking ensemble of the HotpotQA chain (``hop2_ensemble``) on real HotpotQA dev questions: the shipped
model's chain with untrained MiniLM experts as a second reranker; hop 2's rerank score is the mean of both models',
everything before it is the first model's alone."""

from __future__ import annotations

import numpy as np
import pytest

from sleuth.cli.main import main
from sleuth.corpus.model import Passage
from sleuth.systems.chain_of_skills.chain import ChainLimits, CosChain
from sleuth.systems.chain_of_skills.model import MultiExpertEncoder, load_model
from sleuth.systems.chain_of_skills.skill_index import SkillIndex
from sleuth.systems.chain_of_skills.span_head import SpanProposalHead
from sleuth.systems.chain_of_skills.stages import EntityLink, ExpandedRetrieve, Rerank, SingleRetrieve

LIMITS = ChainLimits(k_retrieval=8, k_link=2, k_hop1=3, k_expanded=4, k_hop2_link=1, k=100)


@pytest.fixture(scope="module")
def chains(two_dev_questions):
    questions, documents = two_dev_questions
    passages = [Passage(d.id, d.id, "".join(d.metadata["sentences"]).strip(), (d.id,)) for d in documents]
    shipped, other = load_model(None).for_inference(), MultiExpertEncoder.from_backbone("minilm")
    passage_index = SkillIndex.build(passages, shipped, "retrieval")
    link = EntityLink(shipped, SpanProposalHead(shipped.dim, seed=0), SkillIndex.build(passages, shipped, "linking"))

    def chain(ensemble: list[Rerank]) -> CosChain:
        return CosChain("hotpotqa", SingleRetrieve(shipped, passage_index), link, Rerank(shipped),
                        ExpandedRetrieve(shipped, passage_index), limits=LIMITS, fusion=None, hop2_ensemble=ensemble)

    return questions, chain([]), chain([Rerank(other)]), Rerank(other)


def test_hop2_scores_are_the_mean_of_the_rerankers_and_hop1_is_the_first_models(chains):
    questions, alone, ensemble, second = chains
    for question in questions:
        (_, hop1), = ensemble.first_hop([question.text])
        candidates = ensemble.hop2_candidates(question, hop1)
        assert len(candidates) > 3
        mine = np.array(ensemble.hop2_rerank_values(question, candidates))
        one = np.array(alone.hop2_rerank_values(question, candidates))
        two = np.array(CosChain("hotpotqa", ensemble.retrieve, ensemble.link, second, ensemble.expanded,
                                limits=LIMITS, fusion=None).hop2_rerank_values(question, candidates))
        assert not np.allclose(one, two, atol=1e-3)  # two different rerankers, so the mean is not either
        np.testing.assert_allclose(mine, (one + two) / 2, rtol=1e-5, atol=1e-5)
        # the same candidates, in the same order, from the same hop 1: only the hop-2 rerank term differs
        assert [(a.id, b.id) for a, b in candidates] == [(a.id, b.id) for a, b in alone.hop2_candidates(question, hop1)]


def test_the_ensemble_changes_path_scores_by_the_hop2_term_only(chains):
    questions, alone, ensemble, _ = chains
    with_it, without = ensemble(questions), alone(questions)
    for question in questions:
        mine, theirs = {h.id: h for h in with_it[question.id]}, {h.id: h for h in without[question.id]}
        assert set(mine) == set(theirs) and len(mine) > 3
        for path_id, hit in mine.items():
            delta = hit.extras["path"][1].extras["rerank"] - theirs[path_id].extras["path"][1].extras["rerank"]
            assert hit.score - theirs[path_id].score == pytest.approx(delta, abs=1e-4)


def test_a_missing_ensemble_member_is_one_line(two_dev_questions, data_dir, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["cos", "eval", "--questions", str(data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"),
              "--hop2-ensemble", "/nonexistent/model"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --hop2-ensemble: model directory not found: /nonexistent/model"


def test_an_ensemble_without_the_hotpotqa_chain_is_refused(chains, data_dir, capsys):
    """Before: the members were loaded for the retrieval or nq chain and ignored."""
    from sleuth.errors import ConfigError

    _, alone, _, second = chains
    with pytest.raises(ConfigError, match="the 'nq' chain has none"):
        CosChain("nq", alone.retrieve, alone.link, alone.rerank, limits=LIMITS, hop2_ensemble=[second])
    with pytest.raises(SystemExit) as exit_info:
        main(["cos", "eval", "--questions", str(data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"),
              "--chain", "retrieval", "--hop2-ensemble", "minilm"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == \
        "error: --hop2-ensemble reranks the hotpotqa chain's hop 2: add --chain hotpotqa"
