"""The hop-2 reranking budget of the HotpotQA chain (``k_hop2_rerank``) on real HotpotQA dev questions (untrained
MiniLM experts): a budget above the candidate count changes nothing; a small one keeps the candidates with the best
path score without the hop-2 rerank, and their paths as the full chain scores them; the "per-hop1" selection
spreads the same budget over every kept hop-1 passage."""

from __future__ import annotations

import pytest

from sleuth.corpus.model import Passage
from sleuth.systems.chain_of_skills.chain import PATH_SEPARATOR, ChainLimits, CosChain
from sleuth.systems.chain_of_skills.chain_scores import path_score
from sleuth.systems.chain_of_skills.model import MultiExpertEncoder
from sleuth.systems.chain_of_skills.skill_index import SkillIndex
from sleuth.systems.chain_of_skills.span_head import SpanProposalHead
from sleuth.systems.chain_of_skills.stages import EntityLink, ExpandedRetrieve, Rerank, SingleRetrieve

LIMITS = {"k_retrieval": 8, "k_link": 2, "k_hop1": 3, "k_expanded": 4, "k_hop2_link": 1, "k": 100}
BUDGET = 4


def partial(hit) -> float:
    """A path's score without its hop-2 rerank term: what the budget ranks candidates by."""
    first, second = hit.extras["path"]
    return path_score(first.extras["merged"], first.extras["rerank"], second.extras["merged"], 0.0)


@pytest.fixture(scope="module")
def runs(two_dev_questions):
    questions, documents = two_dev_questions
    passages = [Passage(d.id, d.id, "".join(d.metadata["sentences"]).strip(), (d.id,)) for d in documents]
    model = MultiExpertEncoder.from_backbone("minilm")
    passage_index, entity_index = SkillIndex.build(passages, model, "retrieval"), SkillIndex.build(
        passages, model, "linking")
    link = EntityLink(model, SpanProposalHead(model.dim, seed=0), entity_index)
    out: dict = {}
    for budget, selection in ((None, "path"), (1000, "path"), (BUDGET, "path"), (LIMITS["k_hop1"], "per-hop1")):
        limits = ChainLimits(**LIMITS, k_hop2_rerank=budget, hop2_selection=selection)
        chain = CosChain("hotpotqa", SingleRetrieve(model, passage_index), link, Rerank(model),
                         ExpandedRetrieve(model, passage_index), limits=limits,
                         fusion=None)  # the chain's own paths (the budget acts before the fusion)
        out[budget if selection == "path" else selection] = chain(questions)
    out["per-hop1 chain"] = chain
    limits = ChainLimits(**LIMITS, k_hop2_rerank=BUDGET, selection_weights=(0.0, 2.0))
    out["weighted"] = CosChain("hotpotqa", SingleRetrieve(model, passage_index), link, Rerank(model),
                               ExpandedRetrieve(model, passage_index), limits=limits, fusion=None)(questions)
    return questions, out


def test_a_budget_above_the_candidates_changes_nothing(runs):
    questions, out = runs
    for question in questions:
        full, big = out[None][question.id], out[1000][question.id]
        assert len(full) > BUDGET  # the small budget below really cuts
        assert [h.id for h in big] == [h.id for h in full]
        assert [h.score for h in big] == pytest.approx([h.score for h in full], rel=1e-5)


def test_a_small_budget_reranks_the_best_candidates_by_partial_path_score(runs):
    questions, out = runs
    for question in questions:
        full, small = out[None][question.id], out[BUDGET][question.id]
        assert 0 < len(small) <= BUDGET
        by_pair = {frozenset(h.id.split(PATH_SEPARATOR)): h for h in full}
        kept = {frozenset(h.id.split(PATH_SEPARATOR)) for h in small}
        assert kept <= set(by_pair)  # the same candidates as the full chain, scored alike
        for hit in small:
            if hit.id in {h.id for h in full}:
                assert hit.score == pytest.approx(next(h.score for h in full if h.id == hit.id), rel=1e-5)
        cut = min(partial(h) for h in small)
        assert all(partial(h) <= cut + 1e-4 for pair, h in by_pair.items() if pair not in kept)


def test_per_hop1_selection_gives_each_kept_hop1_passage_its_best_candidate(runs):
    questions, out = runs
    chain = out["per-hop1 chain"]
    for question in questions:
        _, hop1 = chain.first_hop([question.text])[0]
        candidates = chain.hop2_candidates(question, hop1)
        chosen = chain.rerank_budget(candidates)
        partial, groups = chain.budget_inputs(candidates)
        assert len(set(groups)) == LIMITS["k_hop1"] and len(candidates) > LIMITS["k_hop1"]
        assert sorted(first.extras["hop1_rank"] for first, _ in chosen) == list(range(LIMITS["k_hop1"]))
        for first, second in chosen:
            best = max(p for p, (f, _) in zip(partial, candidates) if f.id == first.id)
            assert partial[candidates.index((first, second))] == best
        # the paths the chain returns are those candidates' (fewer where two make the same unordered pair)
        pairs = {frozenset((first.id, second.id)) for first, second in chosen}
        assert {frozenset(h.id.split(PATH_SEPARATOR)) for h in out["per-hop1"][question.id]} <= pairs


def test_selection_weights_pick_by_hop1_plus_weighted_terms(runs):
    """With selection_weights (0, 2) the budget keeps the best by hop1 + 2 * hop2 (the hop-1 rerank left out), and
    the kept candidates are still scored by the full path score."""
    questions, out = runs
    differs = []
    for question in questions:
        full, weighted = out[None][question.id], out["weighted"][question.id]
        by_pair = {frozenset(h.id.split(PATH_SEPARATOR)): h for h in full}
        kept = {frozenset(h.id.split(PATH_SEPARATOR)) for h in weighted}

        def chosen_by(hit) -> float:
            first, second = hit.extras["path"]
            return first.extras["merged"] + 2.0 * second.extras["merged"]

        cut = min(chosen_by(h) for h in weighted)
        assert all(chosen_by(h) <= cut + 1e-4 for pair, h in by_pair.items() if pair not in kept)
        differs.append(kept != {frozenset(h.id.split(PATH_SEPARATOR)) for h in out[BUDGET][question.id]})
        for hit in weighted:
            assert hit.score == pytest.approx(by_pair[frozenset(hit.id.split(PATH_SEPARATOR))].score, rel=1e-5)
    assert any(differs)  # the weights change which candidates are reranked
