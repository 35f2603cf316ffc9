"""A stage that answers from a run file (TREC or JSON Lines): someone else's system (or an earlier run) as a pipeline
stage, to evaluate beside sleuth's pipelines, fuse with them, or rerank (``RunFile("bm25.trec") >> dense``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sleuth.corpus.model import Query
from sleuth.stages.base import ReadsNoIndex, Stage, check_k
from sleuth.stages.run import Run
from sleuth.stages.run_formats import read_run, run_name


class RunFile(ReadsNoIndex, Stage):
    """The rankings of a run file (TREC ``qid Q0 docid rank score tag``, or JSON Lines when named ``.jsonl``:
    :mod:`sleuth.stages.run_formats`), read once, ranked by score, cut to ``k`` (None: whole).

    A query the file does not rank gets no hits (as trec_eval scores it). Given candidates, it scores only those,
    as a retriever does: the candidates the file ranks for the query, with the file's scores, the others left out.
    Hits carry ids and scores only (a run file has no texts)."""

    def __init__(self, run: str | Path | Run, k: int | None = None, name: str | None = None):
        self.k = None if k is None else check_k(k, "run_file")
        self.path = None if isinstance(run, Run) else Path(run)
        self.run = run if isinstance(run, Run) else read_run(run)
        self.name = name or (run_name(self.path) if self.path is not None else "run")

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is None:
            return Run({q.id: self.run.get(q.id, [])[:self.k] for q in queries})
        scored = Run()
        for query in queries:
            mine = {hit.id: hit for hit in self.run.get(query.id, [])}
            scored[query.id] = [hit.with_score(mine[hit.id].score) for hit in candidates.get(query.id, [])
                                if hit.id in mine]
        return scored.sorted()

    def query_ids(self) -> set[str]:
        """The ids of the queries the file ranks."""
        return set(self.run)
