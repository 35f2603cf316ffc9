"""DHR's title grouping says what it merged: on the bundled SciFact, the three abstracts titled "Summary" (distinct
documents) become one DHR document, and the note counts them; grouping by document keeps them apart silently."""

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
