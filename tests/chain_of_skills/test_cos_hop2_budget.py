"""The hop-2 budget rules (``hop2_budget.select_hop2``): which candidates each rule reranks."""

from __future__ import annotations

import pytest

from sleuth.systems.chain_of_skills.hop2_budget import HOP2_SELECTIONS, select_hop2, selection_scores

# six candidates of three hop-1 passages (ranks 0, 1, 2): passage 0's candidates score highest
PARTIAL = [9.0, 8.5, 8.0, 3.0, 2.0, 5.0]
GROUPS = [0, 0, 0, 1, 1, 2]


def test_selection_scores_weigh_the_hop1_rerank_and_hop2_terms():
    terms = [(1.0, 2.0, 3.0), (0.5, -1.0, 4.0)]
    assert selection_scores(terms, (1.5, 1.0)) == [7.0, 3.0]  # the path score without its hop-2 rerank term
    assert selection_scores(terms, (0.0, 2.0)) == [7.0, 8.5]  # another pair reorders them
    assert select_hop2(selection_scores(terms, (0.0, 2.0)), [0, 1], 1, "path") == [1]


def test_path_keeps_the_best_partial_scores():
    assert select_hop2(PARTIAL, GROUPS, 3, "path") == [0, 1, 2]


def test_per_hop1_takes_each_hop1_passage_best_first_in_hop1_order():
    assert select_hop2(PARTIAL, GROUPS, 3, "per-hop1") == [0, 3, 5]
    assert select_hop2(PARTIAL, GROUPS, 2, "per-hop1") == [0, 3]  # the later hop-1 passage waits
    assert select_hop2(PARTIAL, GROUPS, 5, "per-hop1") == [0, 1, 3, 4, 5]  # then each one's second best


def test_mixed_takes_half_by_path_then_round_robin_over_the_rest():
    assert select_hop2(PARTIAL, GROUPS, 4, "mixed") == [0, 1, 2, 3]  # 0, 1 by path; then 2 (passage 0's next), 3
    assert select_hop2(PARTIAL, GROUPS, 5, "mixed") == [0, 1, 2, 3, 5]


@pytest.mark.parametrize("rule", HOP2_SELECTIONS)
def test_no_budget_or_a_large_one_keeps_everything(rule):
    assert select_hop2(PARTIAL, GROUPS, None, rule) == list(range(6))
    assert select_hop2(PARTIAL, GROUPS, 6, rule) == list(range(6))


@pytest.mark.parametrize("rule", HOP2_SELECTIONS)
def test_every_rule_spends_exactly_the_budget(rule):
    for budget in range(1, 6):
        chosen = select_hop2(PARTIAL, GROUPS, budget, rule)
        assert len(chosen) == budget == len(set(chosen))


def test_an_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="unknown hop-2 selection 'best'"):
        select_hop2(PARTIAL, GROUPS, 2, "best")
