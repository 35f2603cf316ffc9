"""Chain-of-Skills self-supervised data from the real Wikipedia dump fragment: random crops for single retrieval,
anchors for linking, span proposal and expanded queries; `sleuth train cos --wikipedia` argument errors and (slow)
a 2-step run."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from sleuth.cli.main import main
from sleuth.corpus.splitters import SectionSplitter
from sleuth.systems.chain_of_skills.training_data import counts
from sleuth.systems.chain_of_skills.wiki_data import (
    MAX_LINKS_PER_TARGET,
    WIKI_SKILLS,
    find_anchor,
    load_wikipedia,
    wikipedia_examples,
    wikitext_anchors,
)

DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


@pytest.fixture(scope="module")
def dump(data_dir):
    path = data_dir / "wikipedia" / DUMP
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path


@pytest.fixture(scope="module")
def wiki(dump):
    articles, redirects = load_wikipedia(dump)
    return articles, redirects, wikipedia_examples(articles, redirects=redirects)


def flat(text: str) -> str:
    return " ".join(text.split())


def test_anchors_are_displayed_link_texts_with_their_trail():
    text = ("An [[Anarchism|anarchist]]s view of [[aristotle]], [[Category:Greeks]] [[File:A.jpg|thumb|x]] "
            "[[de:Aristoteles]] [[wikt:polis|polis]] and [[Plato#Life|Plato]].")
    assert wikitext_anchors(text) == [("anarchists", "Anarchism"), ("aristotle", "Aristotle"), ("Plato", "Plato")]
    assert find_anchor("state", "the statement of a state") == (19, 24)  # word boundaries, case-sensitive
    assert find_anchor("State", "the statement of a state") is None


def test_every_skill_has_examples_from_the_real_dump(wiki):
    articles, redirects, data = wiki
    assert len(articles) == 106 and len(redirects) == 100
    sizes = counts(data)
    assert set(sizes) == set(WIKI_SKILLS) and all(sizes[skill] > 0 for skill in WIKI_SKILLS), sizes
    assert sizes == {"retrieval": 2251, "expanded": 110, "linking": 113, "span": 2159}
    for skill, examples in data.items():
        assert all(e.skill == skill for e in examples)
        assert all(len(e.negatives) == len(e.negative_ids) for e in examples)


def test_retrieval_crops_are_two_views_of_one_passage(wiki):
    articles, _, data = wiki
    passages = {p.id: p for doc in articles for p in SectionSplitter().split(doc)}
    texts = {doc.id: flat(doc.full_text()) for doc in articles}
    for example in data["retrieval"]:
        passage = passages[example.positive_id]
        title = passage.title
        assert example.positive.startswith(f"{title} ")
        second = example.positive[len(title) + 1:]
        assert example.query in passage.text and second in passage.text and example.query in texts[title]
        assert 0 < len(example.query.split()) <= max(5, len(passage.text.split()) // 2 + 1)
        for negative, pid in zip(example.negatives, example.negative_ids):
            other = passages[pid]
            assert other.title != title and negative[len(other.title) + 1:] in other.text


def test_links_point_from_a_real_anchor_to_a_real_article(wiki):
    articles, redirects, data = wiki
    by_title = {doc.id: doc for doc in articles}
    first = {doc.id: SectionSplitter().split(doc)[0].text for doc in articles}
    source = {p.text: doc for doc in articles for p in SectionSplitter().split(doc)}
    per_source: dict[tuple[str, str], int] = {}
    for example in data["linking"]:
        start, end = example.mention
        mention = example.query[start:end]
        doc = source[example.query]  # the query is a passage of the source article
        assert (mention, example.positive_id) in {(text, redirects.get(t, t)) for text, t in doc.metadata["anchors"]}
        assert example.positive_id in by_title and example.positive_id != doc.id
        assert example.positive == f"{example.positive_id} {first[example.positive_id]}"
        assert all(t in by_title and t not in (doc.id, example.positive_id) for t in example.negative_ids)
        key = (doc.id, example.positive_id)
        per_source[key] = per_source.get(key, 0) + 1
    assert max(per_source.values()) <= MAX_LINKS_PER_TARGET
    assert len({e.positive_id for e in data["linking"]}) > 10
    for example in data["expanded"]:  # (crop of A's first passage, "A, passage linking to B") -> B's description
        snippet, hop = example.query
        title, _, text = hop.partition(", ")
        assert snippet in first[title] and source[text].id == title
        target = example.positive_id
        assert target in by_title and target != title and example.positive == f"{target} {first[target]}"
        anchors = [a for a, t in by_title[title].metadata["anchors"] if redirects.get(t, t) == target]
        assert any(find_anchor(a, text) for a in anchors)
    for example in data["span"]:
        doc = source[example.query]
        shown = {text for text, _ in doc.metadata["anchors"]}
        assert all(example.query[a:b] in shown for a, b in example.spans)
        assert all(b1 <= a2 for (_, b1), (a2, _) in zip(example.spans, example.spans[1:]))  # sorted, no overlap


def test_examples_are_seeded_and_fall_back_to_link_titles(wiki):
    articles, redirects, data = wiki
    some = articles[:20]
    again = wikipedia_examples(some, redirects=redirects, seed=13)
    assert again == wikipedia_examples(some, redirects=redirects, seed=13)
    assert again["retrieval"] != wikipedia_examples(some, redirects=redirects, seed=14)["retrieval"]
    capped = wikipedia_examples(some, redirects=redirects, max_per_article=2, negatives=2)
    assert all(len(e.negatives) == 2 for e in capped["retrieval"] + capped["linking"] + capped["expanded"])
    assert len(capped["retrieval"]) <= 40 and len(capped["span"]) <= 40
    plain = [replace(doc, metadata={k: v for k, v in doc.metadata.items() if "anchors" not in k}) for doc in articles]
    titles_only = wikipedia_examples(plain, redirects=redirects)
    assert titles_only["linking"]  # without parsed anchors, link titles found verbatim are the mentions
    links = {link for doc in articles for link in doc.metadata["links"]}
    for example in titles_only["linking"]:
        start, end = example.mention
        assert example.query[start:end] in links


def test_max_articles_reads_only_the_first_ones(dump):
    articles, redirects = load_wikipedia(dump, max_articles=3)
    assert [doc.id for doc in articles] == ["Anarchism", "Autism", "Albedo"] and redirects
    assert all(doc.metadata["section_anchors"] for doc in articles)


def test_train_cos_wikipedia_errors(tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text("<mediawiki><page><title>A</title>")
    for args, fragment in ((["--wikipedia", str(tmp_path / "missing.xml.bz2")], "missing.xml.bz2"),
                           (["--wikipedia-max-articles", "3"], "no training data"),
                           (["--musique", str(bad), "--wikipedia-max-articles", "3"], "--wikipedia-max-articles"),
                           (["--wikipedia", str(bad)], "bad.xml")):
        with pytest.raises(SystemExit) as exit_info:
            main(["cos", "train", *args, "--out", str(tmp_path / "m")])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and fragment in err[0], err


@pytest.mark.slow
def test_two_step_run_on_a_tiny_slice(dump, tmp_path, capsys):
    out = tmp_path / "model"
    main(["cos", "train", "--wikipedia", str(dump), "--wikipedia-max-articles", "3", "--max-steps", "2",
          "--batch-size", "2", "--max-length", "64", "--sampling", "round-robin", "--out", str(out)])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 2
    log = json.loads((out / "cos_training.json").read_text())
    assert set(log["examples"]) <= set(WIKI_SKILLS) and sum(log["examples"]["retrieval"].values()) > 0
