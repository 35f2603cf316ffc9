"""bench.cos_path_lists' pure parts: the final list per configuration, and its fusion matching the chain's own."""

from __future__ import annotations

import pytest

from bench.cos_path_lists import SHIPPED, configurations, final_list, fuse, pick
from sleuth.stages.run import Hit
from sleuth.systems.chain_of_skills.chain import fuse_paths

# four hop-2 candidates [hop-1 id, hop-2 id, hop1, hop1_rerank, hop2, hop-1 rank]; C-D is the best by selection
# score, then A-B, then A-C, then B-D; the hop-2 reranker (r2) prefers A-B
RECORD = {"id": "q", "wanted": ["A", "B"],
          "rows": [["A", "B", 1.0, 1.0, 1.0, 0], ["A", "C", 1.0, 1.0, 0.5, 0], ["C", "D", 1.2, 1.0, 1.0, 1],
                   ["B", "D", 0.1, 0.0, 0.1, 2]],
          "r2": {"0": 2.0, "1": 0.0, "2": 0.0}, "two_round": [["B", "D"], ["A", "C"], ["A", "B"]]}


def test_shipped_list_is_the_chains_fusion_of_its_paths_with_two_rounds():
    chain = [Hit("A||B", 5.5), Hit("C||D", 3.7), Hit("A||C", 3.0)]  # path scores of the three reranked candidates
    two_round = [Hit("B||D", 1.0), Hit("A||C", 0.9), Hit("B||A", 0.8)]
    expected = [frozenset(h.id.split("||")) for h in fuse_paths(chain, two_round)]
    assert final_list(RECORD, (1.5, 1.0), 3, "two-round", 2.0) == expected
    assert expected[0] == frozenset("AB")


def test_the_budget_drops_candidates_that_only_the_tail_and_the_all_list_keep():
    # budget 1 reranks C-D alone; A-B then comes from two rounds only, at rank 3, or from the skipped tail
    shipped = final_list(RECORD, (1.5, 1.0), 1, "two-round", 2.0)
    tail = final_list(RECORD, (1.5, 1.0), 1, "tail+two-round", 2.0)
    every = final_list(RECORD, (1.5, 1.0), 1, "all", 1.0)
    assert shipped.index(frozenset("AB")) == 3
    assert tail.index(frozenset("AB")) < shipped.index(frozenset("AB"))
    assert set(every) == {frozenset("CD"), frozenset("AB"), frozenset("AC"), frozenset("BD")}
    with pytest.raises(ValueError, match="unknown lists"):
        final_list(RECORD, (1.5, 1.0), 1, "nothing", 2.0)


def test_fuse_keeps_first_seen_order_on_ties_and_weighs_lists():
    ab, cd = frozenset("AB"), frozenset("CD")
    assert fuse([[ab], [cd]], [1.0, 1.0]) == [ab, cd]
    assert fuse([[ab], [cd]], [1.0, 2.0]) == [cd, ab]


def test_grid_starts_with_the_shipped_configuration_and_pick_prefers_it_on_ties():
    assert configurations()[0] == SHIPPED and len(configurations()) == len(set(configurations())) == 48
    table = {"shipped": {"em": 0.4, "recall@20": 0.8}, "other": {"em": 0.5, "recall@20": 0.7},
             "worse": {"em": 0.4, "recall@20": 0.7}}
    assert pick(table) == "shipped"
