"""`sleuth quest train` and `sleuth quest train-dense` with input they cannot use: one `error:` line and exit 2,
before any model is loaded, on the first 12 real QUEST val examples and their proxy corpus (attribution
sentences)."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import one_line_error

TINY = ["--max-steps", "1", "--batch-size", "2"]
CLASSIFIER = [*TINY, "--positive-repeats", "1", "--retriever-negatives", "1", "--random-negatives", "1",
              "--tune-retriever", "bm25", "--tune-queries", "2"]


@pytest.fixture(scope="module")
def quest(data_dir, tmp_path_factory):
    """val.jsonl (12 real examples), documents.jsonl (their proxy corpus) and elsewhere.jsonl (the same queries,
    each with one gold document the corpus does not hold)."""
    from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents

    folder = tmp_path_factory.mktemp("quest-train-bad")
    lines = (data_dir / "quest" / "val.jsonl").read_text(encoding="utf-8").splitlines()[:12]
    (folder / "val.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_quest_documents(folder / "documents.jsonl", quest_attribution_documents([folder / "val.jsonl"]))
    (folder / "elsewhere.jsonl").write_text("".join(
        json.dumps({**json.loads(line), "docs": [f"Not in the corpus ({i})"]}) + "\n" for i, line in enumerate(lines)),
        encoding="utf-8")
    return folder


def test_quest_train_refuses_tune_examples_without_a_query_to_tune_on(quest, tmp_path, sleuth):
    """--tune-examples whose gold documents the corpus does not hold: before, the classifier was trained and its
    set rules "tuned" on no query at all (threshold 0.0, F1 0.0 in training.json), exit 0. Now refused before
    training, for the tuning half and for all of the file."""
    for half, pool in (([], "none of the 4 queries of its tuning half"), (["--all-tune-examples"], "none of its 12")):
        error = one_line_error(sleuth("quest", "train", "--examples", str(quest / "val.jsonl"), "--documents",
                                      str(quest / "documents.jsonl"), "--tune-examples", str(quest / "elsewhere.jsonl"),
                                      "--out", str(tmp_path / "model"), *CLASSIFIER, *half))
        assert error.startswith("error: --tune-examples: ") and pool in error and "no query to tune" in error, error
    assert not (tmp_path / "model").exists()


def test_quest_train_dense_without_a_usable_example_names_the_files(quest, tmp_path, sleuth):
    """Examples none of whose gold documents the corpus holds: before, "error: no training examples", naming
    neither the examples nor the documents."""
    error = one_line_error(sleuth("quest", "train-dense", "--examples", str(quest / "elsewhere.jsonl"), "--documents",
                                  str(quest / "documents.jsonl"), "--out", str(tmp_path / "de"), *TINY))
    assert f"--examples {quest / 'elsewhere.jsonl'}: none of its 12 queries has a gold document in --documents " \
           f"{quest / 'documents.jsonl'}" in error, error
    assert not (tmp_path / "de").exists()


@pytest.mark.parametrize("command, extra", [("train", CLASSIFIER), ("train-dense", TINY)])
def test_quest_training_refuses_a_max_length_the_backbone_cannot_read(quest, tmp_path, sleuth, command, extra):
    """Before: --max-length 1000 was accepted, and the first query and document longer than MiniLM's 512 positions
    ended the run in torch's "The size of tensor a (...) must match the size of tensor b (512)" traceback (the short
    proxy documents trained silently). Refused before any file is read (the documents given are not a corpus)."""
    error = one_line_error(sleuth("quest", command, "--examples", str(quest / "val.jsonl"), "--documents",
                                  quest / "val.jsonl", "--out", tmp_path / "m", "--max-length", "1000", *extra))
    assert "--max-length 1000: " in error and "'minilm' reads at most 512 tokens" in error, error


@pytest.mark.parametrize("command, extra", [("train", CLASSIFIER), ("train-dense", [*TINY, "--lora-rank", "2"])])
def test_quest_training_keeps_a_folder_of_other_files(quest, tmp_path, sleuth, command, extra):
    """--out a folder of the user's files: before, the trained adapter (train-dense --lora-rank) or classifier
    (train) was swapped in for the whole folder, deleting its files, exit 0. Now refused before the work; an
    empty folder or an earlier model may still be replaced."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("important\n", encoding="utf-8")
    error = one_line_error(sleuth("quest", command, "--examples", str(quest / "val.jsonl"), "--documents",
                                  str(quest / "documents.jsonl"), "--out", str(folder), *extra))
    assert f"--out {folder}: a folder of other files, not a saved model" in error, error
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("command, extra", [("train", CLASSIFIER), ("train-dense", TINY)])
def test_quest_training_refuses_a_lora_rank_wider_than_the_backbone(quest, tmp_path, sleuth, command, extra):
    """Before: --lora-rank 5000 was accepted and trained an adapter larger than MiniLM itself (a rank above its 384
    hidden units adds nothing). Refused before any file is read (the documents given are not a corpus)."""
    error = one_line_error(sleuth("quest", command, "--examples", str(quest / "val.jsonl"), "--documents",
                                  quest / "val.jsonl", "--out", tmp_path / "m", "--lora-rank", "5000", *extra))
    assert "--lora-rank 5000: " in error and "'minilm' has 384 hidden units" in error, error
    assert not (tmp_path / "m").exists()


def test_an_empty_folder_or_a_saved_model_may_be_replaced(tmp_path):
    from sleuth.train.checks import refuse_other_files

    for name in ("config.json", "modules.json", "sleuth-adapter.json"):
        model = tmp_path / name.replace(".", "-")
        model.mkdir()
        (model / name).write_text("{}\n", encoding="utf-8")
        (model / "training.json").write_text("{}\n", encoding="utf-8")
        refuse_other_files(model)
    (tmp_path / "empty").mkdir()
    refuse_other_files(tmp_path / "empty")
    refuse_other_files(tmp_path / "new")
