"""Queries and qrels from pandas frames in PyTerrier's layout (``qid``, ``query``; ``qid``, ``docno``, ``label``),
read without importing pandas or PyTerrier (:mod:`sleuth.pyterrier` makes such frames)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sleuth.corpus.model import Qrels, Query
from sleuth.errors import SleuthError


def is_frame(value: Any) -> bool:
    """Whether ``value`` is a pandas frame (duck-typed)."""
    return hasattr(value, "columns") and hasattr(value, "itertuples")


def require_columns(frame: Any, needed: Sequence[str], what: str, error: type[SleuthError]) -> None:
    """An ``error`` naming the columns a ``what`` frame needs and those it has, unless it has all of ``needed``."""
    columns = [str(column) for column in frame.columns]
    if not set(needed) <= set(columns):
        names = f"{', '.join(needed[:-1])} and {needed[-1]}"
        raise error(f"a {what} frame needs the columns {names} (it has: {', '.join(columns)})")


def frame_queries(frame: Any) -> list[Query]:
    """The distinct queries of a queries or results frame, in order of first appearance."""
    seen: dict[str, str] = {}
    for qid, text in zip(frame["qid"].astype(str), frame["query"]):
        seen.setdefault(qid, text)
    return [Query(qid, text) for qid, text in seen.items()]


def frame_qrels(frame: Any) -> Qrels:
    """PyTerrier's qrels frame (``qid``, ``docno``, ``label``) as sleuth qrels."""
    qrels: dict[str, dict[str, int]] = {}
    for row in frame.itertuples(index=False):
        qrels.setdefault(str(row.qid), {})[str(row.docno)] = int(row.label)
    return qrels
