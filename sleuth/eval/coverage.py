"""Which topics an evaluation covers: topics without judgements are left out and judgements without a topic are
unused, and both are counted so that a mismatch between topic ids and qrels never passes silently."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sleuth.corpus.model import Query


@dataclass(frozen=True)
class Coverage:
    """Counts of one evaluation: ``topics`` given, ``evaluated`` (topics with judgements), ``unjudged`` (topics
    without), ``orphans`` (judged query ids with no topic)."""

    topics: int
    evaluated: int
    unjudged: int
    orphans: int

    @classmethod
    def of(cls, queries: Sequence[Query], judged: Collection[str]) -> Coverage:
        """The coverage of ``queries`` by the judged query ids."""
        ids = {query.id for query in queries}
        evaluated = sum(query.id in judged for query in queries)
        return cls(topics=len(queries), evaluated=evaluated, unjudged=len(queries) - evaluated,
                   orphans=sum(qid not in ids for qid in judged))

    @property
    def poor(self) -> bool:
        """Whether fewer than half the topics have judgements, or half the judged ids have no topic: a sign that
        the topic ids and the qrels' ids do not match."""
        return self.evaluated * 2 < self.topics or self.orphans * 2 > self.orphans + self.evaluated

    def warnings(self) -> list[str]:
        """One line per problem (none when every topic is judged and every judgement has a topic)."""
        lines = []
        if self.unjudged:
            lines.append(f"{self.unjudged} of {self.topics} topics have no qrels; evaluating on {self.evaluated}")
        if self.orphans:
            lines.append(f"{self.orphans} judged query id(s) have no topic (their judgements are unused)")
        if self.poor:
            lines.append("most topic ids do not match the qrels' query ids: check that the topics and the qrels "
                         "belong together (and number the queries the same way)")
        return lines
