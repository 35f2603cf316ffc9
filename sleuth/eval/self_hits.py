"""BEIR's self-exclusion convention: where the queries are documents of the corpus (ArguAna, Quora), a hit whose
id is the query's own id is ignored when measuring, since it would otherwise rank first for many queries.

A query "is" a document when the document with its id holds its text: numeric ids alone say nothing (Cranfield's
query 1 is not its document 1)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sleuth.corpus.model import Query
from sleuth.stages.run import Run


def is_own_document(query: Query, document_text: str | None) -> bool:
    """Whether ``document_text`` (of the document with the query's id) holds the query's text."""
    if document_text is None:
        return False
    text = " ".join(query.text.split()).lower()
    return bool(text) and text in " ".join(document_text.split()).lower()


def queries_are_documents(queries: Iterable[Query], corpus_texts: Mapping[str, str]) -> bool:
    """Whether most (more than half) of the queries are documents of the corpus: ``corpus_texts`` maps document
    ids to their text (title and text; the documents with the queries' ids suffice)."""
    queries = list(queries)
    return bool(queries) and sum(is_own_document(q, corpus_texts.get(q.id)) for q in queries) * 2 > len(queries)


def drop_self_hits(run: Run) -> tuple[Run, int]:
    """The run without any hit whose id (or document id) is its query's id, and how many hits were removed."""
    kept = Run({qid: [hit for hit in hits if qid not in (hit.id, hit.doc_id)] for qid, hits in run.items()})
    return kept, sum(len(hits) for hits in run.values()) - sum(len(hits) for hits in kept.values())
