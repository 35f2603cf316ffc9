"""Passage-level and document-level top-k answer accuracy of hierarchical retrieval runs (DHR Tables 2-5 and 3).

Document level: a run's distinct documents in rank order (a passage run is mapped to the documents of its passages);
a document counts as correct when any of its passages contains an answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sleuth.eval.answers import DEFAULT_KS, top_k_accuracy
from sleuth.stages.run import Hit, Run


def document_run(run: Run) -> Run:
    """Each ranking reduced to its distinct documents (``doc_id``, else ``id``), first occurrence first, no text."""
    reduced = Run()
    for qid, hits in run.items():
        seen: dict[str, Hit] = {}
        for hit in hits:
            doc_id = hit.doc_id or hit.id
            if doc_id not in seen:
                seen[doc_id] = Hit(doc_id, hit.score, doc_id, hit.title)
        reduced[qid] = list(seen.values())
    return reduced


def hierarchical_accuracy(run: Run, answers: Mapping[str, Sequence[str]], document_texts: Mapping[str, str],
                          ks: Iterable[int] = DEFAULT_KS, passages: bool = True) -> dict[str, float]:
    """``{"P Top-k": ..., "D Top-k": ...}``: passage-level accuracy (on the hits' own texts; left out when
    ``passages`` is False, e.g. for a document run) and document-level accuracy (on ``document_texts``)."""
    ks = list(ks)
    result = {}
    if passages:
        result.update({f"P {name}": value for name, value in top_k_accuracy(run, None, answers, ks).items()})
    documents = top_k_accuracy(document_run(run), document_texts, answers, ks)
    result.update({f"D {name}": value for name, value in documents.items()})
    return result
