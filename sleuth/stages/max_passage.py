"""Passages to documents: a ranking of passages (a corpus split with ``--splitter window`` or ``sections``) read as a
ranking of the documents they come from, each at its best passage's score (MaxP; PyTerrier's
``pt.text.max_passage()``, Pyserini's ``--max-passage``), so that document qrels can measure it."""

from __future__ import annotations

from collections.abc import Sequence

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.stages.base import ReadsNoIndex, Stage
from sleuth.stages.run import Hit, Run


class MaxPassage(ReadsNoIndex, Stage):
    """Each query's passages grouped by their document (``Hit.doc_id``; a hit without one is its own document):
    one hit per document, at the rank and score of its best passage, with that passage's title and text and its id
    in ``extras["passage"]``."""

    hits_bound, config_stage = "rescore", "max_passage"

    name = "max_passage"

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is None:
            raise ConfigError(f"{self.name} groups the passages of an earlier stage's ranking; run it after one "
                              "(e.g. bm25 >> max_passage)")
        return Run({q.id: max_passage(candidates.get(q.id, [])) for q in queries})


def max_passage(hits: Sequence[Hit]) -> list[Hit]:
    """The documents of a passage ranking, each once, at its first (best) passage."""
    documents: dict[str, Hit] = {}
    for hit in hits:
        document = hit.doc_id or hit.id
        if document not in documents:
            documents[document] = Hit(document, hit.score, document, hit.title, hit.text,
                                      {**hit.extras, "passage": hit.id})
    return list(documents.values())
