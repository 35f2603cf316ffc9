"""`sleuth dhr train` with input it cannot train on: one `error:` line and exit 2, before any model is loaded and
before anything is written to --out, on a tiny real NQ slice (8 questions, their gold passages and 4 others)."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import one_line_error
from tests.squad_nq_support import nq_questions_with_gold


@pytest.fixture(scope="module")
def tiny(data_dir, tmp_path_factory):
    """corpus.jsonl (the 8 questions' gold passages and 4 others) and questions.jsonl."""
    return nq_questions_with_gold(data_dir, tmp_path_factory.mktemp("dhr-train-bad"), 8, 4)


def train(tiny, out, *args, questions=None) -> list[str]:
    return ["dhr", "train", "--corpus", str(tiny / "corpus.jsonl"), "--questions",
            str(questions or tiny / "questions.jsonl"), "--out", str(out), "--rounds", "1", "--steps", "1",
            "--batch-size", "2", "--no-index", *args]


def test_dhr_train_without_a_question_it_can_train_on_says_why_and_writes_nothing(tiny, tmp_path, sleuth):
    """Questions whose answers no passage of the corpus holds (and no gold_passage): before, the run wrote
    --out/split.json and then stopped with "error: no training examples", saying neither which examples nor why."""
    real = [json.loads(line) for line in (tiny / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    unanswerable = tmp_path / "unanswerable.jsonl"
    unanswerable.write_text("".join(json.dumps({"id": q["id"], "question": q["question"],
                                                "answers": ["qqxyzzy never in any passage"]}) + "\n" for q in real),
                            encoding="utf-8")
    error = one_line_error(sleuth(*train(tiny, tmp_path / "out", questions=unanswerable)))
    assert "none of the 6 train questions has a positive passage in the corpus" in error, error
    assert "gold_passage" in error and "BM25's top 100" in error
    assert not (tmp_path / "out").exists()  # no split.json left behind


def test_dhr_train_refuses_a_max_length_the_base_model_cannot_read(tiny, tmp_path, sleuth):
    """Before: --max-length 100000 was accepted, and the first text longer than MiniLM's 512 positions ended the
    training in torch's "RuntimeError: The size of tensor a (...) must match the size of tensor b (512)" traceback
    (a corpus of short passages, as here, trained silently with a limit the model cannot hold). Now it is refused
    before any data or model is read, naming the model; 512 itself is the model's own limit."""
    error = one_line_error(sleuth(*train(tiny, tmp_path / "out", "--max-length", "100000")))
    assert "--max-length 100000: --document-model 'minilm' reads at most 512 tokens" in error, error
    assert not (tmp_path / "out").exists()


def test_dhr_train_refuses_a_lora_rank_wider_than_its_models(tiny, tmp_path, sleuth):
    """Before: --lora-rank 5000 was accepted (an adapter larger than MiniLM, whose rank above its 384 hidden units adds
    nothing)."""
    error = one_line_error(sleuth(*train(tiny, tmp_path / "out", "--lora-rank", "5000")))
    assert "--lora-rank 5000: --document-model 'minilm' has 384 hidden units" in error, error
    assert not (tmp_path / "out").exists()


def test_dhr_train_keeps_out_of_a_folder_of_other_files(tiny, tmp_path, sleuth):
    """Before: --out a folder of the user's files got split.json, round1/ and report.json written among them (exit 0).
    An earlier run's folder may be trained into again."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("important\n", encoding="utf-8")
    error = one_line_error(sleuth(*train(tiny, folder)))
    assert f"--out {folder}: a folder of other files, not an earlier dhr train run" in error, error
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    from sleuth.train.checks import DHR_RUN_FILES, refuse_other_files

    (folder / "split.json").write_text("{}\n", encoding="utf-8")
    refuse_other_files(folder, markers=DHR_RUN_FILES)


def test_dhr_train_refuses_a_question_given_twice(tiny, tmp_path, sleuth):
    """Before: `--questions Q --questions Q` trained on every question twice (exit 0; the two copies of a question
    even fell on the same side of the split, as it hashes the id)."""
    questions = str(tiny / "questions.jsonl")
    error = one_line_error(sleuth(*train(tiny, tmp_path / "out", "--questions", questions)))
    assert f"--questions: question id 'nqq0000' is in {questions} and in {questions}" in error, error
    assert not (tmp_path / "out").exists()


def test_dhr_train_that_fails_on_its_corpus_leaves_no_out(sleuth, tiny, tmp_path):
    """--distractors that repeat the corpus's passages: before, the duplicate id was found after --out/split.json
    was written, which stayed behind as a half-written run folder; nothing is written before round 1 trains."""
    done = sleuth(*train(tiny, tmp_path / "out", "--distractors", str(tiny / "corpus.jsonl")))
    err = done.stderr  # the run's log line comes first, then the error
    assert done.returncode == 2 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith("error: duplicate passage id"), err
    assert not (tmp_path / "out").exists()
