"""bench.cos_selection_grid's pure parts: pool recall under selection weights, and the pick's tie rule."""

from __future__ import annotations

import json

from bench.cos_selection_grid import PATH_WEIGHTS, pick, pool_recall, read_terms


def test_pool_recall_counts_questions_whose_gold_pair_is_selected():
    # question 1: the gold candidate (index 1) wins on the hop-1 rerank term; question 2: on the hop-2 term
    first = ([(0.0, 0.0, 1.0), (0.0, 1.0, 0.0)], {1})
    second = ([(0.0, 1.0, 0.0), (0.0, 0.0, 1.0)], {1})
    assert pool_recall([first, second], (2.0, 1.0), 1) == 0.5
    assert pool_recall([first, second], (0.5, 1.0), 1) == 0.5
    assert pool_recall([first, second], (1.0, 1.0), 1) == 0.0  # a tie keeps the earlier candidate: not gold
    assert pool_recall([first, second], (1.0, 1.0), 2) == 1.0


def test_pick_takes_the_best_and_breaks_ties_towards_the_path_weights():
    assert pick({(0.0, 1.0): 0.7, (1.0, 1.0): 0.8, (4.0, 4.0): 0.8, PATH_WEIGHTS: 0.75}) == (1.0, 1.0)
    assert pick({(0.0, 1.0): 0.7, PATH_WEIGHTS: 0.7}) == PATH_WEIGHTS


def test_read_terms_marks_the_gold_pair_in_either_order(tmp_path):
    line = {"id": "q", "wanted": ["A", "B"], "rows": [["B", "A", 1.0, 2.0, 3.0, 0], ["A", "C", 0.5, 0.5, 0.5, 1]]}
    file = tmp_path / "terms.jsonl"
    file.write_text(json.dumps(line) + "\n")
    [(terms, gold)] = read_terms([file])
    assert terms == [(1.0, 2.0, 3.0), (0.5, 0.5, 0.5)] and gold == {0}
