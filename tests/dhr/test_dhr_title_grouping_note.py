"""DHR's title grouping says what it merged: on the bundled SciFact, the three abstracts titled "Summary" (distinct
documents) become one DHR document, and the note counts them; grouping by document keeps them apart silently. SQuAD's
paragraphs, which their reader puts in their article, group by title without a note."""

from __future__ import annotations

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.corpus.formats import read_documents
from sleuth.systems.dhr.structure import documents_to_groups


def test_title_grouping_counts_the_documents_it_merges(capsys):
    docs = list(read_documents(bundled_dataset_dir(), "beir"))
    groups = documents_to_groups(docs, None, "auto")
    assert len(groups) == len(docs) - 2
    summary = next(g for g in groups if g.document.title == "Summary")
    assert len(summary.passages) == 3
    err = " ".join(capsys.readouterr().err.split())
    assert "3 documents with distinct ids share 1 title(s) and were merged" in err
    assert "grouping: document keeps every document apart" in err
    assert len(documents_to_groups(docs, None, "document")) == len(docs)
    assert capsys.readouterr().err == ""


def test_paragraphs_of_one_declared_article_group_without_a_note(data_dir, capsys):
    """Before: every first `dhr` index of a SQuAD file said "N documents with distinct ids share T title(s) and were
    merged", though a paragraph's article is what DHR groups it by."""
    docs = list(read_documents(data_dir / "squad2" / "dev-v2.0.json", "squad"))
    groups = documents_to_groups(docs, None, "auto")
    assert len(groups) == len({d.title for d in docs}) < len(docs)
    assert capsys.readouterr().err == ""
