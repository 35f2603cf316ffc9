"""DHR training on SQuAD articles: the article split, the training examples it gives (in-document negatives from the
gold article, unanswerable questions kept) and a tiny real `sleuth dhr train` run (slow)."""

from __future__ import annotations

import json
import random

import pytest

from sleuth.corpus.squad import read_squad_documents, read_squad_questions
from sleuth.errors import ConfigError, InputError
from sleuth.systems.dhr.article_split import parse_article_list, split_by_article
from sleuth.systems.dhr.structure import documents_to_groups
from sleuth.systems.dhr.training_data import DHRCorpus, label_questions, passage_examples, passage_negatives


@pytest.fixture(scope="module")
def squad_slice(data_dir, tmp_path_factory):
    """The first 4 SQuAD 2.0 dev articles, 10 paragraphs each, as a SQuAD file."""
    data = json.loads((data_dir / "squad2" / "dev-v2.0.json").read_text(encoding="utf-8"))
    data["data"] = [{**a, "paragraphs": a["paragraphs"][:10]} for a in data["data"][:4]]
    path = tmp_path_factory.mktemp("squad") / "slice.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_default_split_alternates_articles_and_keeps_them_apart(squad_slice):
    questions = list(read_squad_questions(squad_slice))
    train, held_out, names = split_by_article(questions)
    articles = list(dict.fromkeys(q.metadata["article"] for q in questions))
    assert names == articles[0::2] and len(articles) == 4
    assert {q.metadata["article"] for q in train} == set(articles[0::2])
    assert {q.metadata["article"] for q in held_out} == set(articles[1::2])
    assert len(train) + len(held_out) == len(questions)
    named, _, _ = split_by_article(questions, [articles[3]])
    assert {q.metadata["article"] for q in named} == {articles[3]}
    with pytest.raises(ConfigError, match="Atlantis"):
        split_by_article(questions, ["Atlantis"])
    with pytest.raises(ConfigError, match="one train and one evaluation"):
        split_by_article(questions, articles)


def test_article_lists_from_text_files_and_json(tmp_path):
    assert parse_article_list("Normans, Huguenot") == ["Normans", "Huguenot"]
    (tmp_path / "train.txt").write_text("Normans\n\nHuguenot\n")
    assert parse_article_list(str(tmp_path / "train.txt")) == ["Normans", "Huguenot"]
    (tmp_path / "split.json").write_text('{"train": ["Warsaw"]}')
    assert parse_article_list(str(tmp_path / "split.json")) == ["Warsaw"]
    (tmp_path / "bad.json").write_text('{"train": "Warsaw"}')
    with pytest.raises(Exception, match="bad.json.*train|train.*bad.json"):
        parse_article_list(str(tmp_path / "bad.json"))
    # a Windows editor's list (BOM, CRLF) named "\ufeffNormans" an unknown article; Latin-1 text was a traceback
    (tmp_path / "windows.txt").write_bytes(b"\xef\xbb\xbfNormans\r\nHuguenot\r\n")
    assert parse_article_list(str(tmp_path / "windows.txt")) == ["Normans", "Huguenot"]
    (tmp_path / "latin1.txt").write_bytes("Fr\u00e9d\u00e9ric\n".encode("latin-1"))
    with pytest.raises(InputError, match="latin1.txt: not UTF-8 text"):
        parse_article_list(str(tmp_path / "latin1.txt"))


def test_examples_use_only_train_articles_and_in_document_negatives(squad_slice):
    questions = list(read_squad_questions(squad_slice))
    corpus = DHRCorpus(documents_to_groups(read_squad_documents(squad_slice), None))
    train, held_out, names = split_by_article(questions)
    items = label_questions(train, corpus)
    assert len(items) == len(train)  # every question has its gold paragraph, unanswerable ones included
    assert any(not i.query.metadata["answers"] for i in items)
    eval_ids = {q.id for q in held_out}
    rng = random.Random(0)
    for item in items:
        assert item.query.id not in eval_ids
        assert corpus.passages[item.positive].id == item.query.metadata["gold_passage"]
        assert corpus.groups[item.document].document.title.replace(" ", "_") in names
        rows = passage_negatives(item, corpus, {"in-doc": 3}, rng)
        assert len(rows) == 3 and item.positive not in rows
        assert all(corpus.passage_document[r] == item.document for r in rows)  # same article, never the gold
    examples = passage_examples(items, corpus, {"in-doc": 2})
    eval_texts = {q.text for q in held_out} - {q.text for q in train}
    assert not {e.query for e in examples} & eval_texts
    assert all(e.positive_id not in e.negative_ids for e in examples)


@pytest.mark.slow
def test_tiny_training_run_through_the_cli(sleuth, squad_slice, data_dir, tmp_path):
    from tests.dhr.test_dhr_training import tiny_bert

    model = tiny_bert()
    out = tmp_path / "run"
    result = sleuth("dhr", "train", "--corpus", squad_slice, "--questions", squad_slice, "--out", out,
                    "--document-model", model, "--passage-model", model, "--rounds", "1", "--steps", "4",
                    "--batch-size", "8", "--passage-negatives", "in-doc=2", "--no-index", "--lr", "1e-4")
    assert result.returncode == 0, result.stderr
    report = json.loads((out / "report.json").read_text())
    split = json.loads((out / "split.json").read_text())
    train_articles = split["articles"]["train"]
    assert len(train_articles) == 2 and not set(train_articles) & set(split["articles"]["evaluation"])
    questions = {q.id: q for q in read_squad_questions(squad_slice)}
    assert {questions[i].metadata["article"] for i in split["train"] + split["dev"]} == set(train_articles)
    entry = report["rounds"][0]
    assert entry["steps"] == {"document": 4, "passage": 4} and entry["examples_per_second"] > 0
    assert entry["index"] is None and entry["dev"] == {}
    losses = json.loads((out / "round1" / "passage-encoder" / "loss.json").read_text())["losses"]
    assert len(losses) == 4 and all(loss > 0 for loss in losses)
    refused = sleuth("dhr", "train", "--corpus", squad_slice, "--questions", squad_slice, "--out", tmp_path / "x",
                     "--train-articles", "Atlantis", "--no-index", "--rounds", "1")
    assert refused.returncode != 0 and "Atlantis" in refused.stderr
