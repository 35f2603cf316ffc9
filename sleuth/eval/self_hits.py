"""BEIR's self-exclusion convention: where the queries are documents of the corpus (ArguAna, Quora), a hit whose
id is the query's own id is ignored when measuring, since it would otherwise rank first for many queries.

A query "is" a document when the document with its id holds its text: numeric ids alone say nothing (Cranfield's
query 1 is not its document 1). Qrels that judge a query's own document relevant do not follow the convention."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sleuth.corpus.model import Qrels, Query
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


def judged_own_documents(qrels: Qrels) -> list[str]:
    """The query ids whose own document (the document with the same id) ``qrels`` judge relevant."""
    return [qid for qid, judged in qrels.items() if judged.get(qid, 0) > 0]


def default_exclusion(queries: Iterable[Query], corpus_texts: Mapping[str, str],
                      qrels: Qrels | None) -> tuple[bool, str | None]:
    """Whether a query's own document is dropped from its hits by default: where most queries are documents of the
    corpus (:func:`queries_are_documents`), unless the qrels judge any query's own document relevant (their
    dataset does not follow the convention; the note returned says so)."""
    if not queries_are_documents(queries, corpus_texts):
        return False, None
    own = judged_own_documents(qrels or {})
    if not own:
        return True, None
    return False, (f"the queries are corpus documents, but their own documents are kept in their hits: the qrels "
                   f"judge {len(own):,} of them relevant to their own query (e.g. query '{own[0]}'); --exclude-self "
                   "(exclude_self=True) drops them")


def exclusion_note(removed: int) -> str:
    """The note of an experiment whose queries' own documents were dropped from their hits."""
    return (f"a query's own document is excluded from its hits (BEIR convention, the queries are corpus "
            f"documents): {removed:,} hit(s) removed; --no-exclude-self (exclude_self=False) keeps them")


def drop_self_hits(run: Run) -> tuple[Run, int]:
    """The run without any hit whose id (or document id) is its query's id, and how many hits were removed."""
    kept = Run({qid: [hit for hit in hits if qid not in (hit.id, hit.doc_id)] for qid, hits in run.items()})
    return kept, sum(len(hits) for hits in run.values()) - sum(len(hits) for hits in kept.values())
