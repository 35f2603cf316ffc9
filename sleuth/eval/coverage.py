"""Which topics an evaluation covers: topics without judgements are left out, judgements without a topic are
unused and judged documents missing from the corpus are never retrieved; each is counted so that a mismatch
between topic ids, qrels and corpus never passes silently."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from sleuth.corpus.model import Query


@dataclass(frozen=True)
class Coverage:
    """Counts of one evaluation: ``topics`` given, ``evaluated`` (topics with judgements), ``unjudged`` (topics
    without), ``orphans`` (judged query ids with no topic); with the corpus's ids known (:meth:`with_documents`),
    ``judged_docs`` (distinct document ids the evaluated topics' qrels judge) and ``missing_docs`` (those not in
    the corpus; None: not checked)."""

    topics: int
    evaluated: int
    unjudged: int
    orphans: int
    judged_docs: int = 0
    missing_docs: int | None = None

    @classmethod
    def of(cls, queries: Sequence[Query], judged: Collection[str]) -> Coverage:
        """The coverage of ``queries`` by the judged query ids."""
        ids = {query.id for query in queries}
        evaluated = sum(query.id in judged for query in queries)
        return cls(topics=len(queries), evaluated=evaluated, unjudged=len(queries) - evaluated,
                   orphans=sum(qid not in ids for qid in judged))

    def with_documents(self, qrels: Mapping[str, Mapping[str, int]], corpus_ids: Collection[str]) -> Coverage:
        """This coverage with the documents ``qrels`` judge counted, and those of them not in ``corpus_ids``."""
        docs = {doc for judged in qrels.values() for doc in judged}
        return replace(self, judged_docs=len(docs), missing_docs=sum(doc not in corpus_ids for doc in docs))

    @property
    def poor(self) -> bool:
        """Whether the topics, the qrels and the corpus look as if they do not belong together: see
        :attr:`topics_poor` and :attr:`documents_poor`."""
        return self.topics_poor or self.documents_poor

    @property
    def topics_poor(self) -> bool:
        """Whether fewer than half the topics have judgements, or half the judged ids have no topic: a sign that
        the topic ids and the qrels' ids do not match."""
        return self.evaluated * 2 < self.topics or self.orphans * 2 > self.orphans + self.evaluated

    @property
    def documents_poor(self) -> bool:
        """Whether most judged documents are not in the corpus."""
        return (self.missing_docs or 0) * 2 > self.judged_docs

    def warnings(self) -> list[str]:
        """One line per problem (none when every topic is judged, every judgement has a topic and every judged
        document counted is in the corpus)."""
        lines = []
        if self.unjudged:
            lines.append(f"{self.unjudged} of {self.topics} topics have no qrels; evaluating on {self.evaluated}")
        if self.orphans:
            lines.append(f"{self.orphans} judged query id(s) have no topic (their judgements are unused)")
        if self.missing_docs:
            lines.append(f"{self.missing_docs:,} of {self.judged_docs:,} judged document id(s) are not in the corpus, "
                         "so no pipeline can retrieve them")
        if self.topics_poor:
            lines.append("most topic ids do not match the qrels' query ids: check that the topics and the qrels "
                         "belong together (and number the queries the same way)")
        if self.documents_poor:
            lines.append("most judged document ids are not in the corpus: check that the qrels belong to this corpus")
        return lines
