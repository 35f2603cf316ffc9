"""Passage splitters: DHR section-aware chunks and fixed word windows, on hand-made and real documents."""

from __future__ import annotations

import pytest

from sleuth.corpus.mediawiki import read_mediawiki
from sleuth.corpus.model import Document, Section
from sleuth.corpus.splitters import SectionSplitter, WindowSplitter
from sleuth.errors import ConfigError


def words(prefix: str, n: int) -> str:
    """``n`` distinct words, so that every word can be traced to its place."""
    return " ".join(f"{prefix}{i}" for i in range(n))


@pytest.fixture
def doc() -> Document:
    return Document(id="d", title="Title", text=words("lead", 30), sections=[
        Section("Long", words("long", 250), children=[Section("Short", words("short", 99), level=2)]),
        Section("Tiny", words("tiny", 8)),
        Section("references", words("ref", 150), children=[Section("Inside refs", words("in", 150), level=2)]),
        Section("Exact", words("exact", 10)),
        Section("Big", words("big", 399)),
    ])


def test_section_splitter_follows_dhr(doc):
    passages = SectionSplitter().split(doc)
    by_path = {}
    for p in passages:
        by_path.setdefault(p.title_path, []).append(p)
    assert list(by_path) == [("Title",), ("Title", "Long"), ("Title", "Long", "Short"), ("Title", "Big")]
    assert [len(p.text.split()) for p in by_path[("Title", "Long")]] == [125, 125]
    assert [len(p.text.split()) for p in by_path[("Title", "Long", "Short")]] == [99]  # under 100, kept whole
    assert [len(p.text.split()) for p in by_path[("Title", "Big")]] == [133, 133, 133]
    assert [len(p.text.split()) for p in by_path[("Title",)]] == [30]  # the lead, path ()
    # Tiny (8 words) and Exact (10 words, not more than 10) are dropped; References and its subsection skipped.
    assert not any("tiny" in p.text or "exact" in p.text or "ref" in p.text or "in0" in p.text for p in passages)
    assert [p.id for p in passages] == [f"d#{i}" for i in range(len(passages))]
    assert all(p.doc_id == "d" for p in passages)
    assert by_path[("Title", "Long", "Short")][0].metadata["headings"] == ["Long", "Short"]
    assert by_path[("Title", "Long")][0].full_title() == "Title, Long"


def test_every_word_of_a_kept_section_appears_once_in_order(doc):
    for passage_group, prefix, count in (("Long", "long", 250), ("Big", "big", 399)):
        chunks = [p.text.split() for p in SectionSplitter().split(doc) if p.title_path == ("Title", passage_group)]
        assert [w for chunk in chunks for w in chunk] == words(prefix, count).split()
        assert all(100 <= len(chunk) <= 199 for chunk in chunks)


def test_section_splitter_parameters(doc):
    splitter = SectionSplitter(chunk_words=50, min_words=5, skip_headings=("Long",))
    paths = {p.title_path for p in splitter.split(doc)}
    assert ("Title", "Long") not in paths and ("Title", "Long", "Short") not in paths
    assert ("Title", "Tiny") in paths and ("Title", "references") in paths
    with pytest.raises(ConfigError):
        SectionSplitter(chunk_words=0)


def test_section_splitter_streams_many_documents(doc):
    other = Document(id="e", title="Other", text=words("x", 12))
    passages = list(SectionSplitter()([doc, other]))
    assert passages[-1].id == "e#0" and passages[-1].title_path == ("Other",)


def test_window_splitter(doc):
    flat = Document(id="w", title="W", text=words("w", 250))
    windows = WindowSplitter().split(flat)
    assert [len(p.text.split()) for p in windows] == [100, 100, 50]
    assert [p.id for p in windows] == ["w#0", "w#1", "w#2"] and windows[0].title_path == ("W",)
    overlapping = WindowSplitter(words=100, stride=50).split(flat)
    assert [p.text.split()[0] for p in overlapping] == ["w0", "w50", "w100", "w150"]
    assert overlapping[-1].text.split()[-1] == "w249"
    assert len(WindowSplitter().split(doc)) == -(-len(doc.full_text().split()) // 100)
    assert WindowSplitter().split(Document(id="empty")) == []
    with pytest.raises(ConfigError):
        WindowSplitter(words=10, stride=0)


def test_section_splitter_on_real_wikipedia(data_dir):
    path = data_dir / "wikipedia" / "enwiki-table-markup.xml.bz2"
    docs = list(read_mediawiki(path))
    passages = list(SectionSplitter()(docs))
    assert passages and all(len(p.text.split()) > 10 for p in passages)
    assert not any(p.title_path[1:2] == ("References",) or p.title_path[1:2] == ("See also",) for p in passages)
    long_chunks = [p for p in passages if len(p.text.split()) >= 100]
    assert long_chunks and all(len(p.text.split()) <= 199 for p in long_chunks)
    assert {p.title for p in passages} == {d.title for d in docs}
