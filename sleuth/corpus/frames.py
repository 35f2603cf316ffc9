"""Queries and qrels from pandas frames in PyTerrier's layout (``qid``, ``query``; ``qid``, ``docno``, ``label``),
read without importing pandas or PyTerrier (:mod:`sleuth.pyterrier` makes such frames)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sleuth.corpus.model import Query, id_string
from sleuth.errors import ConfigError, QueryError, SleuthError


def is_frame(value: Any) -> bool:
    """Whether ``value`` is a pandas frame (duck-typed)."""
    return hasattr(value, "columns") and hasattr(value, "itertuples")


def require_columns(frame: Any, needed: Sequence[str], what: str, error: type[SleuthError]) -> None:
    """An ``error`` naming the columns a ``what`` frame needs and those it has, unless it has all of ``needed``."""
    columns = [str(column) for column in frame.columns]
    if not set(needed) <= set(columns):
        names = f"{', '.join(needed[:-1])} and {needed[-1]}"
        raise error(f"a {what} frame needs the columns {names} (it has: {', '.join(columns)})")


def frame_id(value: Any, column: str, row: Any, what: str, error: type[SleuthError]) -> str:
    """An id cell of a ``what`` frame as a string (see :func:`id_string`); a missing one (None, NaN) or a float is
    an ``error`` naming the row (its index label) and the column (before: ``nan`` became a query id, and a float
    column's 1.0 the id '1.0')."""
    text = id_string(value)
    if text is None:
        raise error(f"row {row!r} of the {what} frame: {column} {value!r} is not an id (a string or a whole number)")
    return text


def frame_queries(frame: Any, error: type[SleuthError] = QueryError) -> list[Query]:
    """The distinct queries of a queries or results frame, in order of first appearance. An id that is missing, or
    given with two different texts (before: the second was dropped without a word), raises ``error``."""
    seen: dict[str, Any] = {}
    for row, value, text in zip(frame.index, frame["qid"], frame["query"]):
        qid = frame_id(value, "qid", row, "queries", error)
        first = seen.setdefault(qid, text)
        if first is not text and first != text and (isinstance(first, str) or isinstance(text, str)):
            raise error(f"row {row!r} of the queries frame: query id '{qid}' is given twice, with the texts "
                        f"{first!r:.60} and {text!r:.60}; a run holds one ranking per id")
    return [Query(qid, text) for qid, text in seen.items()]


def frame_qrels(frame: Any, error: type[SleuthError] = ConfigError) -> dict[str, dict[str, Any]]:
    """PyTerrier's qrels frame (``qid``, ``docno``, ``label``) as ``{qid: {docno: label}}``, labels as given (numpy
    scalars made Python's; :func:`sleuth.corpus.qrels.checked_qrels` checks them). A missing or float id, or a pair
    judged twice with two labels (before: the last row won without a word), raises ``error``."""
    qrels: dict[str, dict[str, Any]] = {}
    for row, qid_cell, docno_cell, label in zip(frame.index, frame["qid"], frame["docno"], frame["label"]):
        qid, docno = frame_id(qid_cell, "qid", row, "qrels", error), frame_id(docno_cell, "docno", row, "qrels", error)
        judged = qrels.setdefault(qid, {})
        label = label.item() if hasattr(label, "item") else label
        if docno in judged and judged[docno] != label:
            raise error(f"row {row!r} of the qrels frame: query '{qid}', document '{docno}' is judged {label!r} "
                        f"here and {judged[docno]!r} on an earlier row")
        judged[docno] = label
    return qrels
