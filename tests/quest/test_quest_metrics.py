"""QUEST set metrics on hand-computed cases, the id join, prediction files, and the real validation split."""

from __future__ import annotations

import json

import pytest

from sleuth.corpus.model import Query
from sleuth.corpus.quest import read_quest_predictions, write_quest_predictions
from sleuth.errors import InputError
from sleuth.systems.quest.set_metrics import (
    average,
    grouped,
    mrecall_at,
    recall_at,
    recall_per_query,
    set_f1,
    set_per_query,
    set_precision,
    set_recall,
    set_report,
)
from sleuth.systems.quest.task import evaluate, load_task


def test_precision_recall_f1_by_hand():
    predicted, gold = ["a", "b", "c"], ["a", "d"]
    assert set_precision(predicted, gold) == pytest.approx(1 / 3)
    assert set_recall(predicted, gold) == pytest.approx(1 / 2)
    assert set_f1(predicted, gold) == pytest.approx(2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2))  # 0.4


def test_empty_prediction_scores_zero():
    assert (set_precision([], ["a"]), set_recall([], ["a"]), set_f1([], ["a"])) == (0.0, 0.0, 0.0)


def test_no_true_positive_scores_zero():
    assert (set_precision(["x", "y"], ["a"]), set_recall(["x", "y"], ["a"]), set_f1(["x", "y"], ["a"])) == (0, 0, 0)


def test_duplicates_in_a_prediction_count_once():
    assert set_precision(["a", "a", "b"], ["a"]) == pytest.approx(0.5)


def test_empty_gold_set_is_an_error_naming_the_query():
    with pytest.raises(InputError, match="'val-0007'.*empty gold set"):
        set_per_query({"val-0007": ["a"]}, {"val-0001": ["a"], "val-0007": []})
    with pytest.raises(InputError, match="'q2'"):
        recall_per_query({}, {"q1": ["a"], "q2": []})


def test_macro_average_overall_and_per_template():
    gold = {"q1": ["a", "b"], "q2": ["c"], "q3": ["d", "e", "f", "g"]}
    predicted = {"q1": ["a", "b"], "q2": ["x"], "q3": ["d"]}  # F1: 1, 0, 2*1*0.25/1.25 = 0.4
    report = set_report(predicted, gold, templates={"q1": "_", "q2": "_", "q3": "_ or _"},
                        domains={"q1": "films", "q2": "books", "q3": "books"})
    assert report["overall"]["F1"] == pytest.approx((1 + 0 + 0.4) / 3)
    assert report["overall"]["P"] == pytest.approx((1 + 0 + 1) / 3)
    assert report["per_template"]["_"]["F1"] == pytest.approx(0.5)
    assert report["per_template"]["_ or _"]["R"] == pytest.approx(0.25)
    assert report["per_domain"]["books"]["F1"] == pytest.approx(0.2)


def test_missing_prediction_counts_as_empty():
    values = set_per_query({"q1": ["a"]}, {"q1": ["a"], "q2": ["b"]})
    assert average(values)["F1"] == pytest.approx(0.5)


def test_recall_and_mrecall_at_k_by_hand():
    ranking, gold = ["x", "a", "y", "b", "z"], ["a", "b", "c"]
    assert recall_at(ranking, gold, 2) == pytest.approx(1 / 3)
    assert recall_at(ranking, gold, 5) == pytest.approx(2 / 3)
    assert mrecall_at(ranking, gold, 5) == 0.0
    assert mrecall_at(ranking + ["c"], gold, 6) == 1.0 and mrecall_at(ranking + ["c"], gold, 5) == 0.0
    values = recall_per_query({"q": ranking}, {"q": gold}, ks=(2, 4))
    assert values["Recall@2"]["q"] == pytest.approx(1 / 3) and values["MRecall@4"]["q"] == 0.0


def test_grouped_averages_sorted_groups():
    values = {"F1": {"a": 1.0, "b": 0.0, "c": 0.5}}
    assert grouped(values, {"a": "x", "b": "y", "c": "x"}) == {"x": {"F1": 0.75}, "y": {"F1": 0.0}}


def test_join_by_id_not_by_query_string():
    """Two queries with the same text but different gold sets: a string join would give both the same prediction."""
    gold = {"val-0001": ["a"], "val-0002": ["b"]}
    predicted = {"val-0001": ["a"], "val-0002": ["b"]}
    assert average(set_per_query(predicted, gold))["F1"] == 1.0


def test_prediction_files_round_trip_and_reject_repeated_ids(tmp_path):
    queries = [Query("val-0001", "birds of peru", {"docs": ["a", "b"], "scores": [0.9, 0.8]}),
               Query("val-0002", "birds of peru", {"docs": []})]
    path = tmp_path / "pred.jsonl"
    assert write_quest_predictions(path, queries) == 2
    read = read_quest_predictions(path)
    assert read["val-0001"].metadata["docs"] == ["a", "b"] and read["val-0002"].metadata["docs"] == []
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[0]]) + "\n")
    with pytest.raises(InputError, match="val-0001.*twice"):
        read_quest_predictions(path)


def test_prediction_file_without_ids_joins_by_line_with_the_gold_prefix(tmp_path):
    path = tmp_path / "pred.jsonl"
    path.write_text(json.dumps({"query": "q", "docs": ["a"], "original_query": None, "scores": None,
                                "metadata": {}}) + "\n")
    assert list(read_quest_predictions(path, id_prefix="val")) == ["val-0001"]


def test_gold_as_prediction_scores_one_on_the_real_validation_split(data_dir):
    task = load_task(data_dir / "quest" / "val.jsonl")
    assert len(task.queries) == 323
    report = evaluate(task, task.gold, task.gold)
    assert report["overall"]["F1"] == 1.0 and report["overall"]["MRecall@20"] == 1.0
    assert set(report["per_template"]) == {q.metadata["template"] for q in task.queries}
    half = {qid: docs[: len(docs) // 2] for qid, docs in task.gold.items()}
    expected = sum(len(d[: len(d) // 2]) / len(d) for d in task.gold.values()) / 323
    assert evaluate(task, half)["overall"]["R"] == pytest.approx(expected)


def test_real_train_split_has_empty_gold_sets_that_the_metrics_reject(data_dir):
    task = load_task(data_dir / "quest" / "train.jsonl")
    empty = [q.id for q in task.queries if not q.metadata["docs"]]
    assert empty, "QUEST's train split is known to hold examples with no gold documents"
    with pytest.raises(InputError, match=empty[0]):
        evaluate(task, task.gold)
    assert len(load_task(data_dir / "quest" / "train.jsonl", skip_empty=True).queries) == 1307 - len(empty)
