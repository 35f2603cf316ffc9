"""Relevance judgements: BEIR TSV (``query-id corpus-id score`` with a header), TREC qrels (``qid 0 docid rel``)
and the SMART collections' relevance files: Cranfield's ``cranqrel`` (``qid docid rel``, whitespace-separated)
and CISI.REL / CACM's qrels.text (``qid docid 0 0.000000``: every listed pair is relevant, relevance 1)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.corpus.model import Qrels
from sleuth.errors import ConfigError, InputError
from sleuth.io import text_lines


@dataclass(frozen=True)
class _Flavour:
    """A qrels layout: how a line splits, how many fields it has, and where qid, docid and relevance are."""

    description: str
    separator: str | None  # None: any run of whitespace
    width: int
    columns: tuple[int, int, int | None]  # qid, docid, relevance (None: every listed pair has relevance 1)
    numeric_ids: bool = False  # SMART files: "01" and "1" are the same query, as the query files' .I ids


BEIR = _Flavour("3 tab-separated columns 'query-id corpus-id score' (BEIR)", "\t", 3, (0, 1, 2))
TREC = _Flavour("4 columns 'qid 0 docid relevance' (TREC)", None, 4, (0, 2, 3))
CRANFIELD = _Flavour("3 columns 'qid docid relevance' (Cranfield cranqrel)", None, 3, (0, 1, 2), numeric_ids=True)
SMART = _Flavour("4 columns 'qid docid 0 score' (CISI.REL, CACM qrels.text)", None, 4, (0, 1, None),
                 numeric_ids=True)


def read_qrels(path: str | Path) -> Qrels:
    """Read a qrels file, detecting its flavour from the first non-blank line.

    BEIR: tab-separated ``query-id, corpus-id, score`` (a first line whose score is not a number is the header,
    skipped). TREC: whitespace-separated ``qid iteration docid relevance``. A pair judged twice with the same
    relevance is read once; with two relevances it is an InputError naming both lines (two qrels files joined by
    mistake, for example).
    """
    qrels: Qrels = {}
    lines: dict[tuple[str, str], int] = {}
    for number, (qid, docid, relevance) in iter_judgements(path):
        judged = qrels.setdefault(qid, {})
        if docid in judged and judged[docid] != relevance:
            raise InputError(f"query '{qid}', document '{docid}' judged {relevance} here and {judged[docid]} on line "
                             f"{lines[qid, docid]:,}", path=path, line=number)
        judged[docid] = relevance
        lines.setdefault((qid, docid), number)
    if not qrels:
        raise InputError("no judgements (a first tab-separated line of three fields whose third is not a number is "
                         "read as BEIR's header: query-id, corpus-id, score)", path=path)
    return qrels


def checked_qrels(qrels: Mapping[Any, Any]) -> Qrels:
    """Judgements given in Python, ``{query id: {doc id: relevance}}``, as the readers return them: ids as strings
    (an int id is written as one), relevances whole numbers (``2.0`` is 2); anything else is a ConfigError naming
    the query and document (pytrec_eval would fail later with a ValueError or TypeError naming neither, or
    truncate 1.5 to 1)."""
    checked: Qrels = {}
    for qid, judged in qrels.items():
        if not isinstance(judged, Mapping):
            raise ConfigError(f"qrels of query '{qid}' must be {{doc id: relevance}}, got {type(judged).__name__}")
        docs = checked.setdefault(_id(qid, "query id"), {})
        for docid, relevance in judged.items():
            whole = isinstance(relevance, float) and relevance.is_integer()
            if not (isinstance(relevance, int) and not isinstance(relevance, bool)) and not whole:
                raise ConfigError(f"qrels of query '{qid}', document '{docid}': relevance {relevance!r} is not a "
                                  "whole number")
            docs[_id(docid, f"document id of query '{qid}'")] = int(relevance)
    return checked


def _id(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ConfigError(f"qrels: {what} {value!r} is not a string")
    return str(value)


def iter_judgements(path: str | Path) -> Iterator[tuple[int, tuple[str, str, int]]]:
    """Stream ``(line number, (qid, docid, relevance))`` from a qrels file; a malformed line raises InputError with
    file:line."""
    path = Path(path)
    flavour = None
    for number, line in text_lines(path):
        if flavour is None:
            flavour = _detect(line)
            if flavour is BEIR and not _is_number(line.split("\t")[2]):
                continue  # the BEIR header line ('score'); a relevance such as 1.5 is read, and refused, below
        fields = [f.strip() for f in line.split(flavour.separator)]
        if len(fields) != flavour.width:
            raise InputError(f"expected {flavour.description}, found {len(fields)} columns", path=path, line=number)
        qid, docid = fields[flavour.columns[0]], fields[flavour.columns[1]]
        relevance = "1" if flavour.columns[2] is None else fields[flavour.columns[2]]
        if flavour.numeric_ids:
            qid, docid = (str(int(x)) if x.isdigit() else x for x in (qid, docid))
        if not _is_int(relevance):
            raise InputError(f"relevance must be an integer, found {relevance!r}", path=path, line=number)
        yield number, (qid, docid, int(relevance))


def _detect(line: str) -> _Flavour:
    """BEIR when the line has exactly three tab-separated fields; else, split on whitespace, Cranfield for three
    fields, SMART for four whose second is not a TREC iteration ("0", "Q0") but whose third is "0", TREC otherwise."""
    if len(line.split("\t")) == 3:
        return BEIR
    fields = line.split()
    if len(fields) == 3:
        return CRANFIELD
    if len(fields) == 4 and fields[1] not in ("0", "Q0") and fields[2] == "0":
        return SMART
    return TREC


def _is_number(text: str) -> bool:
    """True when ``text`` reads as any number (``1.5``, ``-1``, ``1e3``), as a relevance (never a header) does."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_int(text: str) -> bool:
    """True when ``text`` (surrounding whitespace allowed) is an integer such as ``2`` or ``-1``."""
    try:
        int(text)
    except ValueError:
        return False
    return True
