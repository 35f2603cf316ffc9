"""Relevance judgements: BEIR TSV (``query-id corpus-id score`` with a header) and TREC qrels (``qid 0 docid rel``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sleuth.corpus.model import Qrels
from sleuth.errors import InputError
from sleuth.io import open_text


@dataclass(frozen=True)
class _Flavour:
    """A qrels layout: how a line splits, how many fields it has, and where qid, docid and relevance are."""

    description: str
    separator: str | None  # None: any run of whitespace
    width: int
    columns: tuple[int, int, int]


BEIR = _Flavour("3 tab-separated columns 'query-id corpus-id score' (BEIR)", "\t", 3, (0, 1, 2))
TREC = _Flavour("4 columns 'qid 0 docid relevance' (TREC)", None, 4, (0, 2, 3))


def read_qrels(path: str | Path) -> Qrels:
    """Read a qrels file, detecting its flavour from the first non-blank line.

    BEIR: tab-separated ``query-id, corpus-id, score`` (the header line is skipped). TREC: whitespace-separated
    ``qid iteration docid relevance``. A later judgement of the same pair replaces an earlier one.
    """
    qrels: Qrels = {}
    for qid, docid, relevance in iter_judgements(path):
        qrels.setdefault(qid, {})[docid] = relevance
    return qrels


def iter_judgements(path: str | Path) -> Iterator[tuple[str, str, int]]:
    """Stream ``(qid, docid, relevance)`` from a qrels file; a malformed line raises InputError with file:line."""
    path = Path(path)
    flavour = None
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            if flavour is None:
                flavour = _detect(line)
                if flavour is BEIR and not _is_int(line.split("\t")[2]):
                    continue  # the BEIR header line
            fields = [f.strip() for f in line.split(flavour.separator)]
            if len(fields) != flavour.width:
                raise InputError(f"expected {flavour.description}, found {len(fields)} columns", path=path, line=number)
            qid, docid, relevance = (fields[i] for i in flavour.columns)
            if not _is_int(relevance):
                raise InputError(f"relevance must be an integer, found {relevance!r}", path=path, line=number)
            yield qid, docid, int(relevance)


def _detect(line: str) -> _Flavour:
    """BEIR when the line has exactly three tab-separated fields, TREC otherwise."""
    return BEIR if len(line.split("\t")) == 3 else TREC


def _is_int(text: str) -> bool:
    """True when ``text`` (surrounding whitespace allowed) is an integer such as ``2`` or ``-1``."""
    try:
        int(text)
    except ValueError:
        return False
    return True
