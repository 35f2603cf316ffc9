"""`sleuth dhr compare` as two :class:`~sleuth.eval.experiment.Experiment` s over the same questions: passage-level
("P Top-k") and document-level ("D Top-k") answer accuracy, each row tested against BM25.

Rows (the paper's Tables 2-5):

- BM25: sleuth's BM25 over the passages.
- flat dense: sleuth's dense retrieval over the passages ("title text", the DPR-style baseline) with --flat-encoder.
- DHR-D: the document stage alone (document level only; Table 3).
- DHR-P: exhaustive passage search with hierarchical passage titles, no document stage (Table 4).
- DHR w/o rerank: passages of the top-k1 documents ranked by passage score only (lambda = 0; Table 5).
- DHR serial: passages of the top-k1 documents ranked by passage + lambda * document score (Table 5 "w rerank").
- DHR parallel: every passage and document scored, passage + lambda * document score (Table 5 "para rerank").

Each pipeline runs once: the document level reads the passage runs of the first experiment (a passage run becomes
the distinct documents of its passages, in rank order; a document is correct when any of its passages holds an
answer). Runs are measured whole (no cut to a common depth), so a row whose depth differs from BM25's is not tested.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sleuth.corpus.model import Query
from sleuth.eval.experiment import Experiment, ExperimentResult
from sleuth.stages.base import Stage
from sleuth.stages.run import Run
from sleuth.systems.dhr.accuracy import document_run

DOCUMENTS_ONLY = "DHR-D (documents)"


class Replayed(Stage):
    """A run already computed, replayed as a stage (so the document level does not search again)."""

    def __init__(self, run: Run, name: str):
        self.run, self.name = run, name

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        return Run({q.id: self.run.get(q.id, []) for q in queries})


class AsDocuments(Stage):
    """A run mapped to its documents: hits get their hierarchical index's document (``with_documents``), then the
    ranking keeps each document's first hit."""

    def __init__(self, stage: Stage, with_documents: Callable[[Run], Run]):
        self.stage, self.with_documents, self.name = stage, with_documents, stage.name

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        return document_run(self.with_documents(self.stage.transform(queries, candidates)))


def comparison_pipelines(setup: Any, k1: int, lam: float, depth: int, flat_encoder: str) -> dict[str, Stage]:
    """The rows' stages by name, over the setup's workspace and hierarchical index."""
    from sleuth.pipelines.index_stage import bm25_retrieve, dense_retrieve
    from sleuth.systems.dhr.stages import DocumentRetrieve, PassageRetrieve, dhr

    index, doc_enc, psg_enc = setup.index, setup.document_encoder, setup.passage_encoder
    encoders = {"document_encoder": doc_enc, "passage_encoder": psg_enc}
    return {
        "BM25": bm25_retrieve(setup.ws, depth),
        f"flat dense ({flat_encoder})": dense_retrieve(setup.ws, depth, encoder=flat_encoder),
        DOCUMENTS_ONLY: DocumentRetrieve(index, doc_enc, k=depth),
        "DHR-P": PassageRetrieve(index, psg_enc, k=depth),
        f"DHR w/o rerank (k1={k1})": dhr(index, k1=k1, k2=depth, lam=0.0, **encoders),
        f"DHR serial (k1={k1}, lambda={lam:g})": dhr(index, k1=k1, k2=depth, lam=lam, **encoders),
        f"DHR parallel (lambda={lam:g})": dhr(index, mode="parallel", k2=depth, lam=lam, **encoders),
    }


@dataclass
class Comparison:
    """The passage-level and document-level experiments of one comparison (``DHR-D`` is in the second only)."""

    passages: ExperimentResult
    documents: ExperimentResult

    def rows(self) -> list[dict[str, Any]]:
        """One dict per row: ``name``, ``measures`` (``P Top-k`` and ``D Top-k``), ``pvalues`` against BM25,
        ``seconds`` and ``queries_per_second`` (of the row's one run)."""
        rows = []
        for name in self.documents.names:
            timed = self.passages if name in self.passages.names else self.documents
            measures, pvalues = {}, {}
            for result in (self.passages, self.documents):
                if name in result.names:
                    measures.update(result.aggregate[name])
                    pvalues.update(result.pvalues.get(name, {}))
            rows.append({"name": name, "measures": measures, "pvalues": pvalues, "seconds": timed.seconds[name],
                         "queries_per_second": timed.queries_per_second(name)})
        return rows


def prefixed(result: ExperimentResult, level: str) -> ExperimentResult:
    """The result with its metrics named ``"<level> <metric>"`` (``P Top-5``, ``D Top-5``)."""
    return replace(result, metrics=[f"{level} {m}" for m in result.metrics],
                   per_query={name: {f"{level} {m}": v for m, v in scores.items()}
                              for name, scores in result.per_query.items()},
                   pvalues={name: {f"{level} {m}": p for m, p in values.items()}
                            for name, values in result.pvalues.items()})


def compare(setup: Any, questions: list[Query], k1: int, lam: float, ks: list[int], flat_encoder: str) -> Comparison:
    """Run every row once on ``questions`` and measure both levels."""
    answers = {q.id: q.metadata["answers"] for q in questions}
    pipelines = comparison_pipelines(setup, k1, lam, max(ks), flat_encoder)
    passage_level = {name: stage for name, stage in pipelines.items() if name != DOCUMENTS_ONLY}
    passages = Experiment(passage_level, questions, answers=answers, ks=ks, same_depth=False,
                          show_progress=True).run()
    replayed = {name: Replayed(passages.runs[name], name) if name in passage_level else stage
                for name, stage in pipelines.items()}
    documents = Experiment({name: AsDocuments(stage, setup.with_documents) for name, stage in replayed.items()},
                           questions, answers=answers, ks=ks, texts=setup.document_texts(), same_depth=False,
                           show_progress=False).run()
    return Comparison(prefixed(passages, "P"), prefixed(documents, "D"))
