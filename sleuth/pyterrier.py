"""PyTerrier both ways (the optional extra ``sleuth[pyterrier]``; nothing here starts Java).

``as_transformer(stage)`` makes any sleuth stage or pipeline a ``pt.Transformer``: it takes a queries frame
(``qid``, ``query``) or a results frame (plus ``docno``, ``score``; its rows become the stage's candidates) and
returns a results frame (``qid``, ``query``, ``docno``, ``score``, ``rank`` from 0, and ``title`` / ``text`` /
``doc_id`` / ``extras`` when the hits carry them: :meth:`~sleuth.stages.run.Run.to_frame`).
``from_transformer(transformer)`` makes any ``pt.Transformer`` a sleuth stage::

    import pyterrier as pt
    from sleuth.pyterrier import as_transformer, from_transformer

    bm25 = as_transformer(ws.pipeline("bm25"))
    pt.Experiment([bm25, bm25 >> pt.apply.doc_score(my_scorer)], topics, qrels, ["nDCG@10"])
    stage = from_transformer(pt.apply.doc_score(my_scorer))       # a sleuth reranker: ws.pipeline("bm25") >> stage
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from sleuth.corpus.frames import frame_queries, is_frame, require_columns
from sleuth.corpus.model import Qrels, Query
from sleuth.errors import ConfigError, MissingExtraError, QueryError
from sleuth.stages.base import Stage, as_queries, pipeline_hint
from sleuth.stages.run import Run


def pyterrier() -> Any:
    """The ``pyterrier`` module, or a MissingExtraError naming the extra to install."""
    try:
        import pyterrier as pt
    except ImportError:
        raise MissingExtraError("pyterrier==1.1.2", "pyterrier", "PyTerrier transformers") from None
    return pt


def queries_frame(queries: str | Query | Iterable[str | Query] | Mapping[str, str]) -> Any:
    """A PyTerrier queries frame (``qid``, ``query``) of queries in any form a stage takes (:func:`as_queries`:
    Queries, strings, ``{id: text}``), checked alike."""
    import pandas as pd

    queries = as_queries(queries)  # before: anything but a list of Queries was an AttributeError
    return pd.DataFrame({"qid": [q.id for q in queries], "query": [q.text for q in queries]})


def results_frame(queries: Sequence[Query], run: Run) -> Any:
    """A PyTerrier results frame of ``run``: ``qid``, ``query``, ``docno``, ``score``, ``rank`` (from 0), and the
    title / text / doc_id / extras columns that the hits carry (:meth:`Run.to_frame`)."""
    return run.to_frame(queries)


def qrels_frame(qrels: Qrels) -> Any:
    """sleuth qrels (``{qid: {docno: label}}``) as PyTerrier's frame: ``qid``, ``docno``, ``label``; checked as an
    Experiment checks them (a relevance that is not a whole number is a ConfigError)."""
    import pandas as pd

    from sleuth.eval.experiment import as_qrels

    qrels = as_qrels(qrels)  # before: a relevance of 1.5 was written as 1
    rows = [(qid, docno, label) for qid, docs in qrels.items() for docno, label in docs.items()]
    return pd.DataFrame(rows, columns=["qid", "docno", "label"])


@cache
def transformer_class() -> type:
    """The ``pt.Transformer`` subclass that runs a sleuth stage (made on first use: pyterrier is optional)."""
    pt = pyterrier()

    class StageTransformer(pt.Transformer):  # type: ignore[name-defined]
        """A sleuth stage as a PyTerrier transformer (a results frame in gives the stage its candidates)."""

        def __init__(self, stage: Stage):
            self.stage = stage

        def transform(self, inp: Any) -> Any:
            if inp.empty:  # PyTerrier inspects a transformer's output columns with an empty frame
                return results_frame([], Run())
            if "docno" in inp.columns:  # before: a KeyError or an AttributeError naming no column
                require_columns(inp, ("qid", "query", "docno", "score"), "results", QueryError)
            else:
                require_columns(inp, ("qid", "query"), "queries", QueryError)
            queries = as_queries(frame_queries(inp))  # checked as a stage's call checks them (an empty query)
            candidates = Run.from_frame(inp) if "docno" in inp.columns else None
            return results_frame(queries, self.stage.transform(queries, candidates))

        def __repr__(self) -> str:
            return f"sleuth({self.stage.name})"

    return StageTransformer


def as_transformer(stage: Stage) -> Any:
    """``stage`` (any sleuth stage or pipeline) as a ``pt.Transformer``; anything else is a ConfigError."""
    if not isinstance(stage, Stage):  # before: an AttributeError ('...' object has no attribute 'name')
        raise ConfigError(f"as_transformer takes a sleuth Stage, got {type(stage).__name__}{pipeline_hint(stage)}")
    return transformer_class()(stage)


class TransformerStage(Stage):
    """A PyTerrier transformer as a sleuth stage: it gets a queries frame (first stage) or the candidates as a
    results frame (reranker), and its results frame becomes the Run."""

    def __init__(self, transformer: Any, name: str | None = None):
        pyterrier()
        if not callable(transformer):  # before: accepted, then a TypeError at the first query
            raise ConfigError(f"from_transformer takes a PyTerrier transformer, got {type(transformer).__name__}")
        self.transformer = transformer
        self.name = name or type(transformer).__name__

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        frame = queries_frame(queries) if candidates is None else results_frame(queries, candidates)
        output = self.transformer(frame)
        columns = [str(c) for c in output.columns] if is_frame(output) else None
        if columns is None or not {"qid", "docno", "score"} <= set(columns):  # before: an AttributeError
            got = f"a frame with the columns {', '.join(columns)}" if columns is not None else type(output).__name__
            raise ConfigError(f"stage '{self.name}': the PyTerrier transformer returned {got}; a stage needs a "
                              "results frame with the columns qid, docno and score")
        return Run.from_frame(output, ConfigError, f"stage '{self.name}' output")


def from_transformer(transformer: Any, name: str | None = None) -> Stage:
    """Any ``pt.Transformer`` as a sleuth stage."""
    return TransformerStage(transformer, name)
