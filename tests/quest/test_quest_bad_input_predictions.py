"""`quest eval` refuses prediction files it used to score: a metadata.ranking that is a string or holds numbers,
and an empty file; and an empty gold set is named by file and line. One line each, exit 2. Real val.jsonl lines;
commands run in process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import one_line_error
from tests.quest.test_quest_bad_input_examples import write_rows


@pytest.fixture(scope="module")
def gold_rows(data_dir) -> list[dict]:
    """The first 3 examples of the real QUEST val split."""
    lines = (data_dir / "quest" / "val.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    return [json.loads(line) for line in lines]


@pytest.fixture
def gold(gold_rows, tmp_path) -> Path:
    return write_rows(tmp_path / "val.jsonl", gold_rows)


def perfect_predictions(gold_rows: list[dict]) -> list[dict]:
    """The gold sets as predictions (ids val-0001 ...), with their ranking."""
    return [{"id": f"val-{i:04d}", "query": r["query"], "docs": r["docs"], "metadata": {"ranking": r["docs"]}}
            for i, r in enumerate(gold_rows, start=1)]


@pytest.mark.parametrize("ranking, message", [
    ("O.G. (film)", "field 'metadata.ranking': expected a list of titles, found str"),
    ([1, 2, 3], "field 'metadata.ranking': doc 1 is 1, not a document title (a string)"),
])
def test_eval_refuses_a_ranking_that_is_not_a_list_of_titles(gold, gold_rows, tmp_path, sleuth, ranking, message):
    """Before: exit 0 with Recall@20 0.8000: a string was ranked character by character, numbers taken as
    titles."""
    rows = perfect_predictions(gold_rows)
    rows[1]["metadata"]["ranking"] = ranking
    predictions = write_rows(tmp_path / "pred.jsonl", rows)
    assert one_line_error(sleuth("quest", "eval", gold, "--predictions", predictions)) == \
        f"error: {predictions}:2: {message}"


def test_eval_refuses_an_empty_predictions_file(gold, tmp_path, sleuth):
    """Before: every measure 0.0000 and exit 0 (an empty gold file was already refused)."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert one_line_error(sleuth("quest", "eval", gold, "--predictions", empty)) == \
        f"error: {empty}: no predictions (a JSON object per line with query and docs)"


def test_eval_names_the_file_and_line_of_an_empty_gold_set(gold_rows, tmp_path, sleuth):
    """Before: "field 'docs': query 'e1' has an empty gold set; ...": neither file nor line."""
    gold = write_rows(tmp_path / "gold.jsonl", [gold_rows[0], {**gold_rows[1], "id": "e1", "docs": []}])
    predictions = write_rows(tmp_path / "pred.jsonl", [{"id": "e1", "query": gold_rows[1]["query"], "docs": []}])
    assert one_line_error(sleuth("quest", "eval", gold, "--predictions", predictions)) == \
        f"error: {gold}:2: field 'docs': query 'e1' has an empty gold set; set metrics are undefined for it"


def test_eval_still_scores_good_predictions(sleuth, gold, gold_rows, tmp_path):
    """The checks leave a well-formed file alone: the gold sets as predictions score 1."""
    predictions = write_rows(tmp_path / "pred.jsonl", perfect_predictions(gold_rows))
    report = json.loads(sleuth("quest", "eval", gold, "--predictions", predictions, "--json").stdout)["pred"]
    assert report["overall"]["F1"] == 1.0 and report["overall"]["MRecall@20"] == 1.0
    assert report["count"]["overall"] == 3


def test_two_prediction_files_of_one_name_are_two_rows(sleuth, gold, gold_rows, tmp_path):
    """Before: rows were keyed by file stem, so runA/pred.jsonl and runB/pred.jsonl gave one row, runB's, exit 0;
    now each keeps a row (named by its folder), and a file given twice is refused. And the note on unpredicted
    queries blamed --domain when --domain was given."""
    (tmp_path / "runA").mkdir()
    (tmp_path / "runB").mkdir()
    perfect = write_rows(tmp_path / "runA" / "pred.jsonl", perfect_predictions(gold_rows))
    one = write_rows(tmp_path / "runB" / "pred.jsonl", perfect_predictions(gold_rows)[:1])
    result = sleuth("quest", "eval", gold, "--predictions", perfect, "--predictions", one, "--json",
                    "--domain", gold_rows[0]["metadata"]["domain"])
    assert result.returncode == 0, result.stderr
    reports = json.loads(result.stdout)
    assert set(reports) == {"pred", "runB/pred"}
    assert reports["pred"]["overall"]["F1"] == 1.0 and reports["runB/pred"]["overall"]["F1"] < 1.0
    assert "predicted with --max-queries, or for other domains or queries" in result.stderr
    one_line_error(sleuth("quest", "eval", gold, "--predictions", perfect, "--predictions", perfect),
                   f"--predictions {perfect} is given twice")


def test_a_gold_part_saved_under_another_name_says_how_to_keep_its_ids(sleuth, gold_rows, tmp_path):
    """A part of val.jsonl saved as valsub.jsonl numbers its queries valsub-0001, ...; predictions of val's ids
    matched none, and the hint (`--id-prefix valsub`) could not help: the same error came back word for word."""
    part = write_rows(tmp_path / "valsub.jsonl", gold_rows)
    predictions = write_rows(tmp_path / "pred.jsonl", perfect_predictions(gold_rows))
    line = one_line_error(sleuth("quest", "eval", part, "--predictions", predictions))
    assert "valsub.jsonl numbers its queries by its own name (valsub-0001, ...): to keep val.jsonl's ids " \
           "(val-0001, ...) in a part of it, save the part as val.jsonl in another folder, or give its rows 'id' " \
           "fields" in line
    (tmp_path / "part").mkdir()
    kept = write_rows(tmp_path / "part" / "val.jsonl", gold_rows)  # as the message says: it scores
    result = sleuth("quest", "eval", kept, "--predictions", predictions, "--json")
    assert result.returncode == 0 and json.loads(result.stdout)["pred"]["overall"]["F1"] == 1.0
