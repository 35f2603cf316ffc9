"""Chain-of-Skills score arithmetic and evidence-path metrics, against hand-computed values."""

from __future__ import annotations

import pytest

from sleuth.systems.chain_of_skills.chain_scores import (
    HOP1_RERANK_WEIGHT,
    NQ_RERANK_BETA,
    PROMOTION_ALPHA,
    align_link_scores,
    aligned_merge,
    distinct_paths,
    hop1_score,
    merge_skill_scores,
    nq_score,
    path_score,
)
from sleuth.systems.chain_of_skills.path_metrics import mean, passage_em, path_recall_at_k


def test_constants_are_the_papers():
    assert (PROMOTION_ALPHA, HOP1_RERANK_WEIGHT, NQ_RERANK_BETA) == (1.06, 1.5, 0.5)


def test_link_alignment():
    # max_link 10 > max_retrieval 8: scaled by 8 / 10
    assert align_link_scores([10.0, 5.0], 8.0) == pytest.approx([8.0, 4.0])
    # max_link 2 <= max_retrieval 8: denominator 8, unchanged
    assert align_link_scores([2.0, 1.0], 8.0) == pytest.approx([2.0, 1.0])
    assert align_link_scores([], 8.0) == []


def test_promotion_of_passages_found_by_both_skills():
    merged = merge_skill_scores({"a": 3.0, "b": 2.0}, {"b": 4.0, "c": 1.0})
    assert merged == pytest.approx({"a": 3.0, "b": 4.24, "c": 1.0})
    assert merge_skill_scores({"b": 2.0}, {"b": 4.0}, alpha=2.0) == {"b": 8.0}


def test_aligned_merge():
    # links aligned by 8 / 10 -> b 8, c 4; b found by both -> max(2, 8) * 1.06
    assert aligned_merge({"a": 8.0, "b": 2.0}, {"b": 10.0, "c": 5.0}) == pytest.approx({"a": 8.0, "b": 8.48,
                                                                                         "c": 4.0})


def test_hop_path_and_nq_scores():
    assert hop1_score(2.0, 3.0) == pytest.approx(6.0)
    assert path_score(1.0, 2.0, 3.0, 4.0) == pytest.approx(11.0)  # 1 + 1.5*2 + 3 + 4
    assert nq_score(4.0, 1.0) == pytest.approx(3.0)
    assert nq_score(4.0, 1.0, beta=1.0) == pytest.approx(5.0)


def test_distinct_paths_drop_same_title_and_duplicate_pairs():
    paths = [("a", "A", "b", "B", 5.0), ("b", "B", "a", "A", 6.0), ("a", "A", "c", "A", 9.0),
             ("c", "C", "d", "D", 1.0)]
    assert distinct_paths(paths) == [("b", "B", "a", "A", 6.0), ("c", "C", "d", "D", 1.0)]


def test_path_recall_and_passage_em():
    paths = [["a", "b"], ["a", "c"], ["c", "d"]]
    assert path_recall_at_k(paths, {"c", "a"}, 1) == 0.0
    assert path_recall_at_k(paths, {"c", "a"}, 2) == 1.0
    assert path_recall_at_k(paths, {"x", "a"}, 20) == 0.0
    assert passage_em(["b", "a"], {"a", "b"}) == 1.0
    assert passage_em(["a"], {"a", "b"}) == 0.0
    assert passage_em(None, {"a"}) == 0.0
    assert mean([1.0, 0.0, 0.5]) == pytest.approx(0.5) and mean([]) == 0.0
    with pytest.raises(ValueError, match="gold"):
        path_recall_at_k(paths, set(), 5)
    with pytest.raises(ValueError, match="gold"):
        passage_em(["a"], [])
