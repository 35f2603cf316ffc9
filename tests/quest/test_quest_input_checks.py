"""QUEST commands never write over their inputs (same file by any path), and `quest eval` refuses predictions whose
docs are not titles or whose scores do not match them, in one line (exit 2)."""

from __future__ import annotations

import json

import pytest

from tests.cli_support import one_line_error


@pytest.fixture
def val_head(data_dir, tmp_path):
    """The first 12 examples of the real QUEST val split, as their own file."""
    path = tmp_path / "val.jsonl"
    lines = (data_dir / "quest" / "val.jsonl").read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:12]) + "\n", encoding="utf-8")
    return path


def test_quest_commands_refuse_an_out_that_is_an_input(sleuth, val_head, tmp_path, monkeypatch):
    before = val_head.read_bytes()
    documents = tmp_path / "documents.jsonl"
    assert sleuth("quest", "corpus", val_head, "--out", documents).returncode == 0
    documents_before = documents.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(val_head)
    relative = f"../{tmp_path.name}/val.jsonl"
    monkeypatch.chdir(tmp_path)
    for out in (val_head, link, relative):
        one_line_error(sleuth("quest", "corpus", val_head, "--out", out), "refusing to write over the input")
    for out in (val_head, link, documents):
        one_line_error(sleuth("quest", "predict", val_head, "--documents", documents, "--pipeline",
                              "quest-bm25", "--out", out), "refusing to write over the input")
    assert val_head.read_bytes() == before and documents.read_bytes() == documents_before


def test_quest_eval_refuses_non_title_docs_and_mismatched_scores(sleuth, val_head, tmp_path):
    first = json.loads(val_head.read_text(encoding="utf-8").splitlines()[0])
    cases = {"integers": ({"docs": [1, 2]}, "field 'docs': doc 1 is 1"),
             "mismatched": ({"docs": first["docs"][:2], "scores": [0.5]}, "1 scores for 2 docs"),
             "words": ({"docs": first["docs"][:1], "scores": ["high"]}, "score 1 is 'high', not a number")}
    for name, (fields, message) in cases.items():
        predictions = tmp_path / f"{name}.jsonl"
        predictions.write_text(json.dumps({"id": "val-0001", "query": first["query"], **fields}) + "\n")
        one_line_error(sleuth("quest", "eval", val_head, "--predictions", predictions),
                       f"{name}.jsonl:1", message)


def test_quest_commands_refuse_files_without_examples_and_domains_without_queries(sleuth, val_head, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n", encoding="utf-8")
    for command in (("eval", empty, "--predictions", val_head), ("parse", empty)):
        one_line_error(sleuth("quest", *command), "empty.jsonl: no QUEST examples")
    stripped = tmp_path / "no-attributions.jsonl"  # the real examples without their attribution sentences
    stripped.write_text("".join(json.dumps({"query": json.loads(line)["query"], "docs": json.loads(line)["docs"]})
                                + "\n" for line in val_head.read_text(encoding="utf-8").splitlines()))
    documents = tmp_path / "documents.jsonl"
    one_line_error(sleuth("quest", "corpus", stripped, "--out", documents), "no attribution sentences")
    assert not documents.exists()
    assert sleuth("quest", "corpus", val_head, "--out", documents).returncode == 0
    one_line_error(sleuth("quest", "predict", val_head, "--documents", documents, "--domain", "sports",
                          "--out", tmp_path / "p.jsonl"), "no examples in domain sports", "films")


@pytest.mark.parametrize("args, message", [
    (["--tune-retriever", "splade"], "--tune-retriever: unknown retriever 'splade'"),  # was: after training
    (["--lora-layer", "1"], "--lora-layer places a LoRA: it needs --lora-rank"),  # was: silently trained in full
    # was: a download attempt
    (["--backbone", "bert"], "--backbone 'bert': neither minilm (the packaged MiniLM) nor a model folder"),
])
def test_quest_train_refuses_bad_options_before_the_work(sleuth, val_head, tmp_path, args, message):
    """Refused before any file is read (the documents given are not even a corpus)."""
    result = sleuth("quest", "train", "--examples", val_head, "--documents", val_head, "--out", tmp_path / "m",
                    "--max-steps", 1, *args)
    one_line_error(result, message)
    assert not (tmp_path / "m").exists()


def test_a_lora_layer_outside_the_backbone_is_named():
    """`--lora-layer 9` over the 6-layer MiniLM ended in peft's NoMatchingPeftModuleError traceback."""
    from sleuth.errors import ConfigError
    from sleuth.models.adapters import LoraSettings
    from sleuth.models.cross_encoder import CrossEncoderClassifier

    classifier = CrossEncoderClassifier("minilm", max_length=32)
    with pytest.raises(ConfigError, match="LoRA layer 9 is out of range: the backbone has 6 layers"):
        classifier.add_lora(LoraSettings(rank=2, layers=(1, 9)))
