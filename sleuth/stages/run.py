"""Scored candidates: a Hit is one scored item, a Run maps each query id to its ranked hits."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.corpus.frames import frame_id, require_columns
from sleuth.errors import InputError, QueryError, SleuthError


@dataclass
class Hit:
    """One scored candidate: its id, score, and optional document id, title, text and stage-specific extras.

    ``extras`` holds what a stage wants to pass on or show: component scores, a passage's heading path,
    an evidence chain (a list of hits), the obfuscated query that found it ...
    """

    id: str
    score: float
    doc_id: str | None = None
    title: str | None = None
    text: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def record(self, rank: int, with_extras: bool = False) -> dict[str, Any]:
        """The JSON form of this hit at ``rank`` (the CLI and the service print the same fields); ``with_extras``
        adds the stage extras when there are any, made JSON-safe by :func:`jsonable`."""
        record = {"rank": rank, "id": self.id, "doc_id": self.doc_id, "score": self.score, "title": self.title,
                  "text": self.text}
        if with_extras and self.extras:
            record["extras"] = jsonable(self.extras)
        return record

    def with_score(self, score: float, **extras: Any) -> Hit:
        """A copy with a new score (and extra fields merged in)."""
        return Hit(self.id, float(score), self.doc_id, self.title, self.text, {**self.extras, **extras})


#: hit fields carried in results frames when any hit has them
TEXT_COLUMNS = ("title", "text")


def first_unscored(hits: Iterable[Hit]) -> Hit | None:
    """The first hit whose score is not a finite number (NaN, an infinity), which no ranking can order; else None."""
    return next((hit for hit in hits if not math.isfinite(hit.score)), None)


def ranking_key(hit: Hit) -> tuple[float, str]:
    """The one ranking order: descending score, ties broken by id for determinism."""
    return -hit.score, hit.id


def rank_hits(hits: Iterable[Hit]) -> list[Hit]:
    """``hits`` as a ranking: a new list sorted by :func:`ranking_key`."""
    return sorted(hits, key=ranking_key)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while many small objects are made (hits and their dicts, which hold
    no reference cycles): otherwise every few hundred allocations it rescans the live hits of every run in memory
    (a fusion of 809 queries x 2 x 1,000 hits: 10 s with it, 2.7 s without)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


MAX_DEPTH = 8
MAX_ITEMS = 1000


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` made JSON-safe: Hits -> ``{id, doc_id, score, title, text, extras?}``, numpy scalars and arrays ->
    Python numbers and lists, NaN and infinities -> None, other objects -> their ``str``; lists are cut at
    ``MAX_ITEMS`` items and nesting at ``MAX_DEPTH`` levels."""
    if depth > MAX_DEPTH:
        return None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Hit):
        record = {"id": value.id, "doc_id": value.doc_id, "score": jsonable(value.score), "title": value.title,
                  "text": value.text}
        if value.extras:
            record["extras"] = jsonable(value.extras, depth + 1)
        return record
    if isinstance(value, dict):
        return {str(key): jsonable(item, depth + 1) for key, item in list(value.items())[:MAX_ITEMS]}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(item, depth + 1) for item in list(value)[:MAX_ITEMS]]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return jsonable(value.tolist(), depth)
    return str(value)


def trec_id_problem(value: str) -> str | None:
    """Why a TREC run file (columns split on whitespace) cannot hold an id: "is empty", "has whitespace" or None."""
    if not value:
        return "is empty"
    return "has whitespace" if len(value.split()) != 1 or value.strip() != value else None


class Run(dict):
    """Query id -> list of Hits, best first. The value passed between stages and written as a TREC run."""

    @classmethod
    def from_scores(cls, scores: Mapping[str, Mapping[str, float]]) -> Run:
        """Build from ``{qid: {doc_id: score}}``, sorting each ranking by score (ties by id)."""
        with gc_paused():
            return cls({qid: [Hit(d, float(s)) for d, s in docs.items()] for qid, docs in scores.items()}).sorted()

    def sorted(self) -> Run:
        """A copy whose rankings are sorted by descending score, ties broken by id for determinism."""
        return Run({qid: rank_hits(hits) for qid, hits in self.items()})

    def cut(self, k: int) -> Run:
        """A copy keeping the first ``k`` hits of each ranking."""
        return Run({qid: hits[:k] for qid, hits in self.items()})

    def scores(self) -> dict[str, dict[str, float]]:
        """``{qid: {doc_id: score}}``, the form ir_measures and pytrec_eval take."""
        return {qid: {h.id: h.score for h in hits} for qid, hits in self.items()}

    def ids(self, qid: str) -> list[str]:
        """The ranked ids of one query (empty when the query is absent)."""
        return [h.id for h in self.get(qid, [])]

    # --- TREC run files ---------------------------------------------------------------------------------------
    def write_trec(self, path: str | Path, tag: str = "sleuth") -> None:
        """Write a TREC run file (``qid Q0 docid rank score tag``) atomically. An id or a tag that such a file
        cannot hold (:func:`trec_id_problem`) is an InputError naming it, and nothing is written (before: a line of
        more columns, which no reader takes back)."""
        from sleuth.io import atomic_write_text

        problem = self.trec_problem() or (f"tag {tag!r} {why}" if (why := trec_id_problem(tag)) else None)
        if problem:
            raise InputError(f"cannot write a TREC run file: {problem}", path=path)
        lines = []
        for qid, hits in self.items():
            for rank, hit in enumerate(hits, start=1):
                # the shortest text that reads back as the same float (before: 9 fixed decimals, which wrote every
                # score below 5e-10 as 0.000000000, so a file of small fused scores read back unranked; before
                # that 6, which tied RRF scores 1e-6 apart)
                lines.append(f"{qid} Q0 {hit.id} {rank} {float(hit.score)!r} {tag}\n")
        atomic_write_text(path, "".join(lines))

    def trec_problem(self) -> str | None:
        """Why a TREC run file cannot hold this run (its first query or document id that such a file cannot hold:
        :func:`trec_id_problem`), or None."""
        for qid, hits in self.items():
            ids = [("query", qid)] + [("document", hit.id) for hit in hits]
            bad = next(((what, value, why) for what, value in ids if (why := trec_id_problem(value))), None)
            if bad is not None:
                return f"{bad[0]} id {bad[1]!r} {bad[2]}"
        return None

    @classmethod
    def read_trec(cls, path: str | Path) -> Run:
        """Read a TREC run file (ranked by score; the rank column is not read); a malformed line, a missing file or
        a document ranked twice for one query (which trec_eval refuses) raises an InputError naming file and line."""
        from sleuth.io import text_lines

        scores: dict[str, dict[str, float]] = {}
        with gc_paused():  # a million lines of small objects
            for number, line in text_lines(path):
                parts = line.split()
                if len(parts) != 6:
                    raise InputError(f"expected 6 columns 'qid Q0 docid rank score tag', found {len(parts)}",
                                     path=path, line=number)
                try:
                    score = float(parts[4])
                except ValueError:
                    raise InputError(f"score '{parts[4]}' is not a number", path=path, line=number) from None
                if not math.isfinite(score):  # before: inf and 1e400 read, then fusion failed on its output
                    raise InputError("score is NaN" if math.isnan(score) else f"score '{parts[4]}' is not finite",
                                     path=path, line=number)
                qid, docid = parts[0], parts[2]
                ranking = scores.setdefault(qid, {})
                if docid in ranking:
                    first = next(n for n, earlier in text_lines(path) if earlier.split()[0:3:2] == [qid, docid])
                    raise InputError(f"document '{docid}' ranked twice for query '{qid}' (first on line {first:,})",
                                     path=path, line=number)
                ranking[docid] = score
        return cls.from_scores(scores)

    @classmethod
    def from_frame(cls, frame: Any, error: type[SleuthError] = QueryError, what: str = "results") -> Run:
        """A Run from a PyTerrier results frame (``qid``, ``docno``, ``score``; title / text when present, and the
        ``doc_id`` and ``extras`` columns :meth:`to_frame` writes), each ranking by descending score. A missing id, a
        score that is not a number, or a document ranked twice for one query (before: both rows were kept) raises
        ``error`` naming the row of the ``what`` frame."""
        require_columns(frame, ("qid", "docno", "score"), what, error)
        columns = [c for c in ("title", "text") if c in frame.columns]
        has_doc_ids, has_extras = "doc_id" in frame.columns, "extras" in frame.columns
        run: dict[str, list[Hit]] = {}
        rows: dict[tuple[str, str], Any] = {}
        for row, record in zip(frame.index, frame.itertuples(index=False)):
            qid = frame_id(record.qid, "qid", row, what, error)
            docno = frame_id(record.docno, "docno", row, what, error)
            try:
                score = float(record.score)
            except (TypeError, ValueError):
                score = math.nan
            if not math.isfinite(score):
                kind = "a number" if math.isnan(score) else "a finite number"
                raise error(f"row {row!r} of the {what} frame: score {record.score!r:.40} is not {kind}")
            if (qid, docno) in rows:
                raise error(f"row {row!r} of the {what} frame: document '{docno}' is ranked twice for query '{qid}' "
                            f"(first on row {rows[qid, docno]!r})")
            rows[qid, docno] = row
            fields = {c: getattr(record, c) for c in columns}
            doc_id = record.doc_id if has_doc_ids else None
            extras = record.extras if has_extras else None
            run.setdefault(qid, []).append(Hit(docno, score, doc_id if isinstance(doc_id, str) else docno, **fields,
                                               extras=dict(extras) if isinstance(extras, Mapping) else {}))
        return cls({qid: rank_hits(hits) for qid, hits in run.items()})

    def to_frame(self, queries: Iterable[Any] | None = None) -> Any:
        """The run as a PyTerrier results frame (the inverse of :meth:`from_frame`): ``qid``, ``docno``, ``score``,
        ``rank`` (from 0), ``query`` when ``queries`` are given, in any form a pipeline takes them (their order,
        else the run's), the ``title`` / ``text`` columns the hits carry, ``doc_id`` where a hit's document is not
        itself (a passage's) and ``extras`` (a dict a row) where hits carry extras: a Chain-of-Skills path's hops
        reach a later stage through a frame (``as_transformer(chain) >> as_transformer(path_passages)``)."""
        import pandas as pd

        from sleuth.stages.base import as_queries

        order = [(q.id, q.text) for q in as_queries(queries)] if queries is not None else [(qid, None) for qid in self]
        rows = [(qid, text, hit, rank) for qid, text in order for rank, hit in enumerate(self.get(qid, []))]
        frame = pd.DataFrame({"qid": [r[0] for r in rows], "docno": [r[2].id for r in rows],
                              "score": [float(r[2].score) for r in rows], "rank": [r[3] for r in rows]})
        if queries is not None:
            frame.insert(1, "query", [r[1] for r in rows])
        for column in TEXT_COLUMNS:
            values = [getattr(r[2], column) for r in rows]
            if any(value is not None for value in values):
                frame[column] = values
        if any(r[2].doc_id not in (None, r[2].id) for r in rows):
            frame["doc_id"] = [r[2].doc_id for r in rows]
        if any(r[2].extras for r in rows):
            frame["extras"] = [dict(r[2].extras) for r in rows]
        return frame

    @classmethod
    def concat(cls, runs: Iterable[Run]) -> Run:
        """Merge runs over disjoint query sets (e.g. from sharded evaluation)."""
        merged = cls()
        for run in runs:
            merged.update(run)
        return merged
