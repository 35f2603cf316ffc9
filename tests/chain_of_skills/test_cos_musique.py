"""Chain-of-Skills MuSiQue training data: the builder on the real MuSiQue sample (decomposition hops -> single and
expanded retrieval pairs, question and passage links, span examples) and `sleuth train cos --musique` argument
errors."""

from __future__ import annotations

import pytest

from sleuth.cli.main import main
from sleuth.systems.chain_of_skills.training_data import (
    SKILLS,
    load_musique,
    musique_examples,
    same_entity,
    sub_question,
)


@pytest.fixture(scope="module")
def musique_data(data_dir):
    folder = data_dir / "musique"
    questions, corpus = load_musique(folder / "musique_train_100.json", folder / "musique_train_100_corpus.json")
    return questions, corpus, musique_examples(questions, corpus)


def test_sub_questions_are_made_self_contained():
    assert sub_question("Who was the first president of #1 ?", ["American Psychological Association"]) == \
        "Who was the first president of American Psychological Association ?"
    assert sub_question("#1 >> country of citizenship", ["Johann Strauss II"]) == "Johann Strauss II country of citizenship"
    assert sub_question("what is #3", ["a"]) == "what is #3"  # no such hop: left alone
    assert same_entity("the Church of England", "Church of England (disambiguation)")
    assert not same_entity("American Psychological Association", "Adolescence")


def test_musique_builder_gives_every_skill_from_the_decomposition(musique_data):
    questions, corpus, data = musique_data
    assert len(questions) == 100 and len(corpus) == 1890
    # reranking: 237 hop-1 examples + one hop-2 example ("question [SEP] hop k" -> hop k+1) per expanded example
    assert {skill: len(data[skill]) for skill in SKILLS} == {"retrieval": 337, "expanded": 137, "reranking": 374,
                                                             "linking": 100, "span": 92}
    assert all(e.source == "musique" for examples in data.values() for e in examples)
    hop2 = [e for e in data["reranking"] if " [SEP] " in e.query]
    assert [(e.query.split(" [SEP] ")[1], e.positive_id) for e in hop2] == \
        [(e.query[1], e.positive_id) for e in data["expanded"]]
    chains = [set(q.metadata["supporting_ids"]) for q in questions]
    supporting = set().union(*chains)
    by_text = {q.text: q for q in questions}
    for skill, examples in data.items():
        assert all(e.skill == skill for e in examples)
    for example in data["retrieval"] + data["reranking"] + data["expanded"] + data["linking"]:
        assert example.positive_id in supporting and example.positive_id in corpus
        assert example.positive.startswith(corpus[example.positive_id].title)
        # hard negatives are never supporting paragraphs of the positive's own question
        assert not any(example.positive_id in chain and set(example.negative_ids) & chain for chain in chains)
        assert len(example.negatives) == len(example.negative_ids)
    # the hop-1 example of the first question, then its two self-contained sub-questions
    first = questions[0]
    hops = [p["id"] for step in first.metadata["question_decomposition"] for p in first.metadata["paragraphs"]
            if p["idx"] == step["paragraph_support_idx"]]
    head = [(e.query, e.positive_id) for e in data["retrieval"][:3]]
    assert head == [(first.text, hops[0]), ("What company published Journal of Psychotherapy Integration?", hops[0]),
                    ("Who was the first president of American Psychological Association ?", hops[1])]
    assert all("#1" not in e.query for e in data["retrieval"])
    for example in data["expanded"]:  # ("question", hop-k paragraph) -> hop k+1, never the same paragraph
        question, hop = example.query
        ids = by_text[question].metadata["supporting_ids"]
        target = corpus[example.positive_id]
        assert example.positive_id in ids and hop != f"{target.title}, {target.text}"
    # links: the mention text names the linked paragraph's title (question links and answer -> next-hop links)
    passage_links = 0
    for example in data["linking"]:
        start, end = example.mention
        assert same_entity(example.query[start:end], corpus[example.positive_id].title)
        passage_links += example.query not in by_text
    assert passage_links > 20
    for example in data["span"]:
        assert example.spans and all(0 <= a < b <= len(example.query) for a, b in example.spans)


def test_train_cos_needs_some_data_and_existing_files(tmp_path, capsys):
    for args, fragment in ((["--out", str(tmp_path / "m")], "no training data"),
                           (["--musique", str(tmp_path / "missing.json"), "--out", str(tmp_path / "m")],
                            "missing.json")):
        with pytest.raises(SystemExit) as exit_info:
            main(["cos", "train", *args])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0]
