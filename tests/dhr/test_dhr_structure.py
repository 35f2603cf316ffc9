"""DHR's structured documents: section-aware passages, hierarchical titles, document representation, NQ grouping."""

from __future__ import annotations

import itertools
import json

import pytest

from sleuth.corpus.beir import read_beir_corpus
from sleuth.corpus.mediawiki import read_mediawiki
from sleuth.corpus.model import Document, Passage, Section
from sleuth.corpus.splitters import DEFAULT_SKIP_HEADINGS, SectionSplitter
from sleuth.errors import ConfigError
from sleuth.systems.dhr.index import passage_text
from sleuth.systems.dhr.structure import (
    document_representation,
    documents_to_groups,
    group_passages_into_documents,
    split_documents,
    table_of_contents,
)

WIKI = "wikipedia/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
SKIPPED = {h.casefold() for h in DEFAULT_SKIP_HEADINGS}


def words(prefix: str, n: int) -> str:
    return " ".join(f"{prefix}{i}" for i in range(n))


@pytest.fixture(scope="module")
def articles(data_dir) -> list[Document]:
    """The first six real articles of the Wikipedia dump fragment (Anarchism, Autism, Albedo, A, Alabama, ...)."""
    return list(itertools.islice(read_mediawiki(data_dir / WIKI), 6))


@pytest.fixture
def handmade() -> Document:
    return Document(id="h", title="Handmade", text=words("lead", 150), sections=[
        Section("History", words("hist", 320), children=[Section("Early years", words("early", 11), level=2),
                                                          Section("Too short", words("short", 10), level=2)]),
        Section("Notes", words("note", 200)),
        Section("External links", "", children=[Section("Inside", words("inside", 120), level=2)]),
        Section("Legacy", words("legacy", 199)),
    ])


def test_dhr_splits_a_real_article_by_section(articles):
    groups = list(split_documents(articles))
    assert [g.document.title for g in groups] == [a.title for a in articles]
    for group in groups:
        doc = group.document
        units = [((), doc.text)] + [(path, s.text) for path, s in doc.walk_sections()]
        for passage in group.passages:
            headings = passage.title_path[1:]
            assert passage.title_path[0] == doc.title and passage.doc_id == doc.id
            assert not SKIPPED & {h.casefold() for h in headings}, "passages of skipped sections"
            n = len(passage.text.split())
            # 100-199 words from a section of 100+ words; a shorter section whole when it has more than 10 words
            assert any(passage.text in " ".join(text.split())
                       and ((100 <= n <= 199) if len(text.split()) >= 100 else n == len(text.split()) > 10)
                       for path, text in units if path == headings)
        # every word of every kept section appears exactly once, in order
        kept = [w for path, text in units
                if not SKIPPED & {h.casefold() for h in path} and len(text.split()) > 10 for w in text.split()]
        assert [w for p in group.passages for w in p.text.split()] == kept
    anarchism = groups[0]
    assert any(len(p.title_path) >= 3 for p in anarchism.passages), "nested headings give deeper title paths"


def test_handmade_document_follows_the_rules(handmade):
    passages = SectionSplitter().split(handmade)
    by_path: dict[tuple, list[int]] = {}
    for p in passages:
        by_path.setdefault(p.title_path, []).append(len(p.text.split()))
    # 320 words -> 3 chunks; 11 words kept whole, 10 dropped; Notes and External links (with Inside) skipped
    assert by_path == {("Handmade",): [150], ("Handmade", "History"): [107, 107, 106],
                       ("Handmade", "History", "Early years"): [11], ("Handmade", "Legacy"): [199]}
    assert passages[1].full_title() == "Handmade, History" and passages[1].full_title(" [SEP] ") == \
        "Handmade [SEP] History"
    assert passage_text(passages[1]).startswith("Handmade, History, hist0 hist1 ")
    assert passages[4].title_path == ("Handmade", "History", "Early years")


def test_document_representation(handmade):
    assert table_of_contents(handmade) == ["History", "Early years", "Too short", "Legacy"]
    assert table_of_contents(handmade, skip_headings=()) == ["History", "Early years", "Too short", "Notes",
                                                              "External links", "Inside", "Legacy"]
    text = document_representation(handmade)
    assert text == "Handmade, " + words("lead", 150) + ", History, Early years, Too short, Legacy"
    assert document_representation(handmade, " [SEP] ").endswith(" [SEP] History [SEP] Early years [SEP] Too short "
                                                                  "[SEP] Legacy")
    assert document_representation(handmade, include_toc=False) == "Handmade, " + words("lead", 150)
    assert document_representation(handmade, include_lead=False) == "Handmade, History, Early years, Too short, Legacy"
    assert document_representation(handmade, max_lead_words=3) == "Handmade, lead0 lead1 lead2, History, " \
                                                                  "Early years, Too short, Legacy"
    assert document_representation(Document(id="x", title="Only")) == "Only"


def test_representation_of_a_real_article_lists_its_headings_in_pre_order(articles):
    albedo = next(a for a in articles if a.title == "Albedo")
    text = document_representation(albedo)
    toc = table_of_contents(albedo)
    assert text.startswith("Albedo, " + albedo.text.split()[0]) and text.endswith(", ".join(toc))
    assert toc == [path[-1] for path, _ in albedo.walk_sections() if not SKIPPED & {h.casefold() for h in path}]
    assert "References" not in toc and "See also" not in toc and len(toc) >= 5


def test_nq_passages_grouped_into_documents_by_title(data_dir):
    rows = [json.loads(line) for line in open(data_dir / "nq" / "corpus.jsonl", encoding="utf-8")]
    groups = documents_to_groups(read_beir_corpus(data_dir / "nq" / "corpus.jsonl"), None)  # auto -> by title
    titles = {r["title"] for r in rows}
    assert len(groups) == len(titles) and sum(len(g.passages) for g in groups) == len(rows)
    multi = next(g for g in groups if len(g.passages) > 2)
    first = next(r for r in rows if r["title"] == multi.document.title)
    assert multi.document.id == multi.document.title and multi.document.text == first["text"]
    assert multi.document.sections == [] and all(p.doc_id == multi.document.id for p in multi.passages)
    assert multi.passages[0].id == first["_id"]
    assert document_representation(multi.document) == f"{first['title']}, {first['text']}"


def test_grouping_choices():
    flat = [Passage("p1", "p1", "one", ("T",)), Passage("p2", "p2", "two", ("T",)), Passage("p3", "p3", "three")]
    groups = group_passages_into_documents(flat)
    assert [(g.document.id, [p.id for p in g.passages]) for g in groups] == [("T", ["p1", "p2"]), ("p3", ["p3"])]
    docs = [Document("a", "Same", "x " * 20), Document("b", "Same", "y " * 20)]
    assert len(documents_to_groups(docs, None, "title")) == 1
    assert len(documents_to_groups(docs, None, "document")) == 2
    with pytest.raises(ConfigError):
        documents_to_groups(docs, None, "sections")
