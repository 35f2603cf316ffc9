"""Every trained folder carries sleuth's own model card (what it was trained from, the data, the steps, the seed, the
hardware, the command), is swapped in whole, and reports the examples it read: before, the QUEST trainers left
peft's stub card with this machine's venv path, `dhr train`'s encoders the base all-MiniLM-L6-v2 card word for word
(written into the folder with transformers' "Writing model shards" bars), and `quest train` counted its last, smaller
batch as full ("145 of 144 recipe pairs")."""

from __future__ import annotations

import json

from sleuth.train.contrastive import ContrastiveExample, TrainConfig, train_contrastive


def test_a_fully_trained_bi_encoder_gets_its_own_card_and_no_shard_bars(tmp_path, scifact_rows, capfd):
    examples = [ContrastiveExample(row["title"], row["text"][:300], positive_id=row["_id"]) for row in scifact_rows[:6]]
    out = tmp_path / "encoder"
    train_contrastive("minilm", examples, out, TrainConfig(batch_size=3, max_steps=2, max_length=64, show_progress=False))
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("# Bi-encoder (contrastive, in-batch negatives)\n\nTrained by sleuth from `minilm`.")
    assert "6 (query, positive, negatives) examples" in card and "2 steps of batch 3" in card
    assert "- seed 13" in card and "## Reproduce" in card and "sentence-transformers/all-MiniLM-L6-v2" not in card
    assert "Writing model shards" not in capfd.readouterr().err
    assert (out / "loss.json").is_file() and (out / "modules.json").is_file()


def test_quest_train_counts_the_pairs_it_read_and_writes_its_card(sleuth, data_dir, tmp_path):
    quest = data_dir / "quest"
    train = tmp_path / "train8.jsonl"
    val = tmp_path / "val8.jsonl"
    for source, target in ((quest / "train.jsonl", train), (quest / "val.jsonl", val)):
        lines = [line for line in source.read_text(encoding="utf-8").splitlines()
                 if json.loads(line)["metadata"]["domain"] == "films"][:8]
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    documents = tmp_path / "proxy.jsonl"
    assert sleuth("quest", "corpus", train, val, "--out", documents).returncode == 0
    done = sleuth("quest", "train", "--examples", train, "--documents", documents, "--tune-examples", val,
                  "--all-tune-examples", "--tune-retriever", "bm25", "--candidates", "10", "--positive-repeats", "1",
                  "--retriever-negatives", "2", "--random-negatives", "2", "--retriever-depth", "20", "--batch-size",
                  "5", "--max-length", "32", "--lora-rank", "4", "--max-steps", "40", "--out", tmp_path / "model")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "model" / "training.json").read_text(encoding="utf-8"))
    assert record["examples_seen"] == record["train_pairs"] and record["steps"] * 5 > record["train_pairs"]
    assert record["examples_per_second"] > 0 and record["step_seconds"] <= record["train_seconds"]
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    assert card.startswith("# QUEST relevance classifier (cross-encoder)\n\nTrained by sleuth from `minilm`.")
    assert f"{record['train_pairs']:,} (query, document) pairs of 8 training queries" in card
    assert "sleuth quest train --examples" in card and "site-packages" not in card


def test_a_full_classifier_saves_without_transformers_bars(tmp_path, capfd):
    """Before: `quest train` without --lora-rank wrote transformers' "Writing model shards" bar into its log."""
    from sleuth.models.cross_encoder import CrossEncoderClassifier

    CrossEncoderClassifier("minilm", max_length=32).save(tmp_path / "classifier")
    assert (tmp_path / "classifier" / "config.json").is_file()
    assert "Writing model shards" not in capfd.readouterr().err
