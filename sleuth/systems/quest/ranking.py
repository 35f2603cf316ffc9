"""A QUEST pipeline's full ranking beside its predicted set.

A pipeline that ends in a set rule (``classify``, ``setops``) returns only the set's members, so their ranking for
Recall@K and MRecall@K would be the set itself (``quest-dense-classify``: Recall@100 = the set's recall). Its full
ranking is what it scored, uncut and best first, continued by the first-stage retriever's ranking beyond the
candidates it classified, as a reranker's ranking continues with the retrieval it did not rerank (PyTerrier's ``^``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path

from sleuth.corpus.model import Query
from sleuth.stages.base import Sequential, Stage
from sleuth.stages.retrieve import BM25Retrieve, DenseRetrieve
from sleuth.stages.run import Hit, Run
from sleuth.systems.quest.cut import CutsToSet

IN_SET = "in_set"  # the hit extra that marks the predicted set's members in a full ranking


class SetWithRanking(Stage):
    """Runs ``pipeline`` and returns its full ranking to at least ``depth`` hits, the predicted set's members first
    and marked ``extras["in_set"]`` (a pipeline without a set rule: every hit is a member, its ranking its own)."""

    def __init__(self, pipeline: Stage, depth: int):
        self.pipeline, self.depth = pipeline, depth
        self.name = pipeline.name

    def index_folders(self) -> set[Path] | None:
        return self.pipeline.index_folders()  # its deeper first stage reads the same folder

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        stages = self.pipeline.stages if isinstance(self.pipeline, Sequential) else [self.pipeline]
        last = stages[-1]
        if not isinstance(last, CutsToSet):
            run = self.pipeline.transform(queries, candidates)
            return Run({qid: [marked(h) for h in hits] for qid, hits in run.items()})
        pool = Sequential(stages[:-1]).transform(queries, candidates) if len(stages) > 1 else candidates
        members = last.transform(queries, pool)
        scored = last.uncut().transform(queries, pool)  # the same caches: nothing is classified twice
        deep = deeper(stages[0], self.depth) if candidates is None and len(stages) > 1 else None
        beyond = deep.transform(queries, None) if deep is not None else Run()
        run = Run()
        for query in queries:
            chosen = members.get(query.id, [])
            ranking, seen = [marked(h) for h in chosen], {h.id for h in chosen}
            for hit in [*scored.get(query.id, []), *beyond.get(query.id, [])]:
                if len(ranking) >= self.depth:
                    break
                if hit.id not in seen:
                    seen.add(hit.id)
                    ranking.append(hit)
            run[query.id] = ranking
        return run


def deeper(retriever: Stage, depth: int) -> Stage | None:
    """A copy of a first-stage BM25 or dense retriever that retrieves ``depth`` hits (None for other stages or
    when it already retrieves as many)."""
    if not isinstance(retriever, (BM25Retrieve, DenseRetrieve)) or retriever.k >= depth:
        return None
    deep = copy.copy(retriever)
    deep.k = depth
    return deep


def marked(hit: Hit) -> Hit:
    """``hit`` marked as a member of the predicted set."""
    return hit.with_score(hit.score, **{IN_SET: True})


def set_members(hits: Sequence[Hit]) -> list[Hit]:
    """The predicted set's members of a :class:`SetWithRanking` ranking, in their order."""
    return [h for h in hits if h.extras.get(IN_SET)]
