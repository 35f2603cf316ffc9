"""Chain-of-Skills training on all the multi-hop training data: several HotpotQA files (one with a corpus file, one
with its paragraphs only in ``context``), 2WikiMultihopQA (hop order and passage links from its evidences), and
`sleuth cos train` taking them (the shipped model's command still parses)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click
import pytest
import typer

from sleuth.cli.main import main, register
from sleuth.systems.chain_of_skills.training_data import (
    SKILLS,
    hotpotqa_examples,
    load_hotpotqa,
    same_entity,
    twowiki_examples,
)


@pytest.fixture(scope="module")
def twowiki(data_dir):
    questions, corpus = load_hotpotqa(data_dir / "2wikimultihopqa" / "2wiki_train_more.json")
    return questions, corpus, twowiki_examples(questions, corpus)


def test_several_hotpotqa_files_give_all_898_questions(data_dir):
    folder = data_dir / "hotpotqa"
    questions, corpus = load_hotpotqa([folder / "hotpot_train_100.json", folder / "hotpot_train_more.json"],
                                      [folder / "hotpot_train_100_corpus.json"])
    assert len(questions) == len({q.id for q in questions}) == 898
    data = hotpotqa_examples(questions, corpus)
    assert set(data) == set(SKILLS) and all(data[skill] for skill in SKILLS)
    gold = {t for q in questions for t in q.metadata["supporting_titles"]}
    assert all(e.positive_id in gold for e in data["retrieval"])
    # hotpot_train_more has no corpus file: its questions' examples come from their own context paragraphs
    more = json.loads((folder / "hotpot_train_more.json").read_text(encoding="utf-8"))[0]
    paragraphs = {title: "".join(sentences).strip() for title, sentences in more["context"]}
    ones = [e for e in data["retrieval"] if e.query == more["question"]]
    assert {e.positive_id for e in ones} == {title for title, _ in more["supporting_facts"]}
    for example in ones:
        assert example.positive == f"{example.positive_id} {paragraphs[example.positive_id]}"
        assert set(example.negative_ids) <= set(paragraphs) - {e.positive_id for e in ones}


def test_twowiki_examples_follow_the_evidences(twowiki):
    questions, corpus, data = twowiki
    assert len(questions) == 494
    assert set(data) == set(SKILLS) and all(e.source == "2wiki" for v in data.values() for e in v)
    by_text = {q.text: q for q in questions}
    expanded = {(e.query[0], e.query[1].split(", ")[0], e.positive_id) for e in data["expanded"]}
    # compositional: the question's entity, then its father's paragraph (evidence "Isabel Moctezuma, father, ...")
    question = "Where was the place of death of Isabel Moctezuma's father?"
    assert {(f, s) for q, f, s in expanded if q == question} == {("Isabel Moctezuma", "Moctezuma II")}
    # bridge-comparison: two chains film -> director, never film -> film
    question = "Which film has the director died first, The Prairie King or Confessions Of An Opium Eater?"
    assert {(f, s) for q, f, s in expanded if q == question} == {
        ("The Prairie King", "B. Reeves Eason"), ("Confessions of an Opium Eater", "Albert Zugsmith")}
    for example in data["retrieval"] + data["reranking"]:
        query = by_text[example.query.split(" [SEP] ")[0]]
        assert example.positive_id in query.metadata["supporting_titles"]
        assert not set(example.negative_ids) & set(query.metadata["supporting_titles"])
    # links: question mentions and passage links (the evidence object named in hop 1's paragraph)
    passage_links = [e for e in data["linking"] if e.query not in by_text]
    assert len(passage_links) > 100
    for example in data["linking"]:
        start, end = example.mention
        assert example.positive.startswith(example.positive_id)
        if example.query not in by_text:
            assert same_entity(example.query[start:end], example.positive_id)
    assert all(e.spans and all(0 <= a < b <= len(e.query) for a, b in e.spans) for e in data["span"])


def shipped_command() -> list[str]:
    readme = Path(__file__).parents[2] / "sleuth/systems/chain_of_skills/weights/cos-minilm-lora/README.md"
    line = next(x for x in readme.read_text(encoding="utf-8").splitlines() if x.startswith("sleuth cos train "))
    return shlex.split(line)[1:]


def test_shipped_model_command_still_parses():
    args = shipped_command()
    assert args[2:4] == ["--device", "cuda"]  # trained on a lent GPU; parsing it here needs a device this machine has
    args[3] = "cpu"
    cos = typer.main.get_command(register()).commands["cos"]  # type: ignore[attr-defined]
    train = cos.commands["train"]
    with click.Context(cos) as parent:
        context = train.make_context("train", args[2:], parent=parent)
    assert [str(p) for p in context.params["hotpotqa"]] == ["../shared/data/hotpotqa/hotpot_train_100.json",
                                                           "../shared/data/hotpotqa/hotpot_train_more.json"]
    assert len(context.params["hotpotqa_corpus"]) == 1
    assert [str(p) for p in context.params["twowiki"]] == ["../shared/data/2wikimultihopqa/2wiki_train_more.json"]
    assert context.params["checkpoint_at"] == [150, 400] and context.params["max_steps"] == 800


@pytest.mark.slow
def test_cos_train_takes_all_hotpotqa_and_twowiki_files(data_dir, tmp_path, capsys):
    hotpot, twowiki = data_dir / "hotpotqa", data_dir / "2wikimultihopqa"
    main(["cos", "train", "--hotpotqa", str(hotpot / "hotpot_train_100.json"), "--hotpotqa-corpus",
          str(hotpot / "hotpot_train_100_corpus.json"), "--hotpotqa", str(hotpot / "hotpot_train_more.json"),
          "--twowiki", str(twowiki / "2wiki_train_more.json"), "--variant", "lora", "--max-steps", "2",
          "--batch-size", "2", "--max-length", "32", "--threads", "1", "--out", str(tmp_path / "m")])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["steps"] == 2
    recorded = json.loads((tmp_path / "m" / "cos_training.json").read_text(encoding="utf-8"))["examples"]
    assert recorded["retrieval"] == {"hotpotqa": 1796, "2wiki": 1170}
    assert recorded["linking"] == {"hotpotqa": 754, "2wiki": 1145}
