"""`sleuth cos eval` refuses, before any model loads, questions whose gold can never be retrieved, a question id
repeated within one file, options that do not apply to the chains or settings given, and a `--json` folder."""

from __future__ import annotations

import json

import pytest

from sleuth.systems.chain_of_skills.evaluation import eval_questions
from tests.cli_support import one_line_error


@pytest.fixture
def dev2(data_dir) -> list[dict]:
    """The first two HotpotQA dev questions, as records."""
    return json.loads((data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json").read_text(encoding="utf-8"))[:2]


def zero_context(rows):
    rows[1]["context"] = []


def missing_titles(rows):
    rows[1]["supporting_facts"] = [["No Such Title", 0], ["Another Missing", 1]]


def repeated_id(rows):
    rows[1]["_id"] = rows[0]["_id"]


@pytest.mark.parametrize("change, message", [
    (zero_context, "[1]: field 'context': no paragraphs: the question's gold cannot be retrieved"),
    (missing_titles, "[1]: field 'supporting_facts': supporting title 'No Such Title' is not among the context "
                     "paragraphs' titles"),
    (repeated_id, "[1]: field '_id': question id '5a7613c15542994ccc9186bf' appears twice in the file (first at [0])"),
])
def test_questions_whose_gold_cannot_be_found_or_whose_id_repeats_are_refused(change, message, dev2, tmp_path,
                                                                             sleuth):
    """Before: exit 0 and "2 questions" with the second scored a miss (no paragraphs, or supporting titles its
    context lacks: R@10 0.5), or "1 questions" (a different question repeating an _id silently dropped)."""
    change(dev2)
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(dev2), encoding="utf-8")
    err = one_line_error(sleuth("cos", "eval", "--questions", str(path), "--model", "minilm", "--chain", "retrieval"))
    assert err == f"error: {path}{message}"


def test_the_real_dev_files_pass_the_checks(data_dir):
    """No HotpotQA or 2WikiMultihopQA question lacks paragraphs or has a supporting title outside its context."""
    hotpot, twowiki = data_dir / "hotpotqa", data_dir / "2wikimultihopqa"
    files = [hotpot / "hotpot_dev_distractor_100.json", hotpot / "hotpot_dev_distractor_more.json",
             hotpot / "hotpot_train_100.json", hotpot / "hotpot_train_more.json", twowiki / "2wiki_dev.json",
             twowiki / "2wiki_train_more.json"]
    assert len(eval_questions(files)) == 100 + 1612 + 100 + 798 + 157 + 494


@pytest.mark.parametrize("args, message", [
    (["--chain", "retrieval", "--ablate", "linking"],
     "--ablate removes skills from the hotpotqa chain: add --chain hotpotqa"),
    (["--chain", "retrieval-2hop", "--k-hop2-rerank", "2", "--hop2-selection", "mixed", "--selection-weights", "1,2"],
     "--k-hop2-rerank sets the hotpotqa chain's hop-2 budget: add --chain hotpotqa"),
    (["--chain", "retrieval", "--selection-weights", "1,2"],
     "--selection-weights sets the hotpotqa chain's hop-2 budget: add --chain hotpotqa"),
    (["--chain", "hotpotqa", "--hop2-selection", "per-hop1", "--selection-weights", "9,9"],
     "--hop2-selection chooses which hop-2 candidates --k-hop2-rerank keeps: give --k-hop2-rerank N"),
    (["--chain", "hotpotqa", "--hop2-selection", "path"],  # the default value, but given
     "--hop2-selection chooses which hop-2 candidates --k-hop2-rerank keeps: give --k-hop2-rerank N"),
    (["--chain", "hotpotqa", "--selection-weights", "9,9"],
     "--selection-weights chooses which hop-2 candidates --k-hop2-rerank keeps: give --k-hop2-rerank N"),
])
def test_options_that_do_not_apply_are_refused(args, message, data_dir, sleuth):
    """Before: exit 0, the option silently ignored (only the hotpotqa chain ablates skills and has a hop-2 budget;
    without --k-hop2-rerank every hop-2 candidate is reranked, whatever the selection rule)."""
    dev = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    err = one_line_error(sleuth("cos", "eval", "--questions", dev, "--limit", "1", "--model", "minilm", *args))
    assert err == f"error: {message}"


def test_a_json_folder_is_refused_before_the_evaluation(data_dir, tmp_path, sleuth):
    """Before: the whole evaluation ran, then "error: .../.out.xxxx.tmp: cannot write (Is a directory)" named a
    temporary file, and the results were lost."""
    (tmp_path / "out").mkdir()
    dev = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    err = one_line_error(sleuth("cos", "eval", "--questions", dev, "--limit", "1", "--model", "minilm", "--chain",
                                "retrieval", "--json", tmp_path / "out"))
    assert err == f"error: --json {tmp_path / 'out'}: is a folder; give a file"
