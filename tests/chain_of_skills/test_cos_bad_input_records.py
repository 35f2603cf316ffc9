"""`sleuth cos merge` / `sleuth cos compare` on records they cannot join or pair: shards of different runs, and
malformed rows, are refused in one line naming the file (and field) instead of a silently wrong merge or a
traceback."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import one_line_error

ROW = {"chain": "retrieval", "questions": 1, "path_recall@1": 0.0, "path_recall@5": 1.0, "path_recall@10": 1.0,
       "path_recall@20": 1.0, "passage_em": 0.0, "seconds": 1.0, "per_question": {"q1": [0, 1, 1, 1, 0]}}
RECORD = {"model": "minilm", "int8": False, "questions": "dev.json", "part": "all",
          "corpus": {"setting": "pooled", "distractors": [], "passages": 40}, "ablate": [], "shard": "1/2",
          "rows": [ROW]}


@pytest.fixture
def dev3(data_dir, tmp_path):
    """The first three HotpotQA dev questions."""
    path = tmp_path / "dev3.json"
    rows = json.loads((data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json").read_text(encoding="utf-8"))[:3]
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_merge_refuses_shards_of_runs_with_different_limits(sleuth, dev3, tmp_path):
    """Before: shard 0/2 of a --limit 2 run and shard 1/2 of a --limit 3 run (over the same pooled corpus) merged
    without a word (exit 0): the records did not say which questions their run evaluated."""
    common = ["cos", "eval", "--questions", str(dev3), "--pooled", "--model", "minilm", "--chain", "retrieval"]
    assert sleuth(*common, "--limit", "2", "--shard", "0/2", "--json", tmp_path / "a.json").returncode == 0
    assert sleuth(*common, "--limit", "3", "--shard", "1/2", "--json", tmp_path / "c.json").returncode == 0
    a, c = str(tmp_path / "a.json"), str(tmp_path / "c.json")
    err = one_line_error(sleuth("cos", "merge", a, c))
    assert "differs from the first in 'limit'" in err and f"{c}: 3" in err and f"{a}: 2" in err
    assert json.loads((tmp_path / "c.json").read_text(encoding="utf-8"))["limit"] == 3


def test_merge_refuses_shards_listing_different_chains(tmp_path, sleuth):
    """Before: the rows were zipped, so the retrieval-2hop row of shard 0 was silently dropped (exit 0, one row)."""
    both = {**RECORD, "shard": "0/2", "rows": [ROW, {**ROW, "chain": "retrieval-2hop"}]}
    (tmp_path / "s0.json").write_text(json.dumps(both), encoding="utf-8")
    (tmp_path / "s1.json").write_text(json.dumps(RECORD), encoding="utf-8")
    err = one_line_error(sleuth("cos", "merge", str(tmp_path / "s0.json"), str(tmp_path / "s1.json")))
    assert err == (f"error: {tmp_path / 's1.json'} and {tmp_path / 's0.json'} list different chains or measures "
                   "(retrieval; retrieval, retrieval-2hop): not shards of one run")


def test_merge_refuses_old_records_whose_question_counts_no_run_has(tmp_path, sleuth):
    """Records written before ``limit`` was recorded: shard 0/2 holding 1 question and shard 1/2 holding 3 cannot
    be one run's (shard i of N questions holds every 2nd from i). Before: merged as "4 questions", exit 0."""
    first = {**RECORD, "shard": "0/2"}
    second = {**RECORD, "rows": [{**ROW, "questions": 3, "per_question": {f"q{i}": [0, 1, 1, 1, 0] for i in (2, 3, 4)}}]}
    (tmp_path / "s0.json").write_text(json.dumps(first), encoding="utf-8")
    (tmp_path / "s1.json").write_text(json.dumps(second), encoding="utf-8")
    err = one_line_error(sleuth("cos", "merge", str(tmp_path / "s0.json"), str(tmp_path / "s1.json")))
    assert err == (f"error: {tmp_path / 's0.json'}, {tmp_path / 's1.json'} hold 1, 3 questions: not the shards of "
                   "one run (of another --max-queries, --part or --questions?)")


@pytest.mark.parametrize("change, message", [
    (lambda r: r["rows"][0].pop("questions"), "field 'rows[0].questions': missing"),  # KeyError
    (lambda r: r.update(rows="retrieval"), "field 'rows': expected a non-empty list of chain rows"),  # TypeError
    (lambda r: r["rows"][0].update({"path_recall@5": "0.5"}),  # TypeError: float + str
     "field 'rows[0].path_recall@5': expected a number, found '0.5'"),
    (lambda r: r.update(rows=[]), "field 'rows': expected a non-empty list of chain rows"),  # IndexError
    (lambda r: r.update(shard=5), "field 'shard' must be i/n with 0 <= i < n (e.g. 0/4), got '5'"),  # blamed --shard
    (lambda r: r.update(corpus="pooled"), "field 'corpus': expected an object with the corpus's 'passages'"),
    (lambda r: r["rows"][0]["per_question"].update(q9=[1, 1, 1, 1, 1]),
     "field 'rows[0].per_question': expected the outcomes of the row's 1 questions by id, found 2"),
])
def test_merge_validates_each_record_as_it_is_read(change, message, tmp_path, sleuth):
    """Before: KeyError, TypeError or IndexError tracebacks (exit 1), or "--shard must be i/n", an option `cos
    merge` does not have, without the file."""
    (tmp_path / "s0.json").write_text(json.dumps({**RECORD, "shard": "0/2"}), encoding="utf-8")
    bad = json.loads(json.dumps(RECORD))
    change(bad)
    (tmp_path / "s1.json").write_text(json.dumps(bad), encoding="utf-8")
    err = one_line_error(sleuth("cos", "merge", str(tmp_path / "s0.json"), str(tmp_path / "s1.json")))
    assert err.startswith(f"error: {tmp_path / 's1.json'}: {message}"), err


def test_compare_refuses_outcome_lists_of_the_wrong_length(tmp_path, sleuth):
    """Before: per-question outcomes shorter than the record's measures ended in an IndexError traceback."""
    short = {**RECORD, "rows": [{**ROW, "per_question": {"q1": [0, 1]}},
                                {**ROW, "chain": "retrieval-2hop"}]}
    (tmp_path / "short.json").write_text(json.dumps(short), encoding="utf-8")
    err = one_line_error(sleuth("cos", "compare", tmp_path / "short.json", "--chain", "retrieval-2hop",
                                "--against", "retrieval"))
    assert err == (f"error: {tmp_path / 'short.json'}: field 'rows[0].per_question': question 'q1': expected 5 "
                   "outcomes 0 or 1 (path_recall@1, path_recall@5, path_recall@10, path_recall@20, passage_em), "
                   "found [0, 1]")


def test_merge_and_compare_refuse_a_json_folder_first(tmp_path, sleuth):
    """Before: `--json FOLDER` failed only at the write, naming a temporary file (`.FOLDER.xxxx.tmp`)."""
    (tmp_path / "out").mkdir()
    (tmp_path / "s0.json").write_text(json.dumps({**RECORD, "shard": "0/1"}), encoding="utf-8")
    for args in (["merge", str(tmp_path / "s0.json")],
                 ["compare", str(tmp_path / "s0.json"), str(tmp_path / "s0.json"), "--chain", "retrieval"]):
        err = one_line_error(sleuth("cos", *args, "--json", str(tmp_path / "out")))
        assert err == f"error: --json {tmp_path / 'out'}: is a folder; give a file"
