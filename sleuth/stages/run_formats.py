"""Run files on disk, by suffix: TREC (``qid Q0 docid rank score tag``, what trec_eval and ir_measures read) or
JSON Lines (``.jsonl``: one hit a line, ``{"qid", "docno", "rank", "score", "tag"}``, PyTerrier's column names),
which holds ids a TREC file cannot: a HotpotQA paragraph's id is its title, spaces and all."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError, InputError
from sleuth.io import uncompressed_name
from sleuth.stages.run import Hit, Run


def run_name(path: str | Path) -> str:
    """The name a run file goes by (a table row, a stage): its file name without its suffixes of format and
    compression (``runs/bm25.trec.gz`` -> ``bm25``)."""
    return Path(uncompressed_name(path)).stem


def is_jsonl_run(path: str | Path) -> bool:
    """Whether a run file is written and read as JSON Lines (its name ends in ``.jsonl``, or ``.jsonl.gz`` /
    ``.jsonl.bz2``: compressed, as any text file sleuth reads and writes)."""
    return uncompressed_name(path).lower().endswith(".jsonl")


def check_trec_ids(run: Run, name: str, what: str = "pipeline") -> None:
    """A ConfigError naming the first query or document id of ``what`` ``name``'s ``run`` (a pipeline's, or ``the
    fused run``) that a TREC run file cannot hold, and the way out: a ``.jsonl`` file."""
    if problem := run.trec_problem():
        owner = f"{what} '{name}'" if name else what
        raise ConfigError(f"cannot write {owner} as a TREC run file: {problem}; name the --out file .jsonl to write "
                          "JSON Lines, which holds any id")


def write_run(run: Run | Mapping[str, Sequence[Hit]] | Any, path: str | Path, tag: str = "sleuth") -> None:
    """Write ``run`` (a Run, a ``{query id: [Hit, ...]}`` mapping or a PyTerrier results frame, as stages take
    candidates) atomically as JSON Lines (``.jsonl``) or as a TREC run file (any other name; an id it cannot hold is
    an InputError, see :meth:`Run.write_trec`); a score that is not a finite number, which :func:`read_run` would
    refuse, is an InputError, and nothing is written."""
    from sleuth.stages.base import as_candidates

    if run is None:
        raise InputError("write_run: no run given", path=path)
    run = as_candidates(run) or Run()
    for qid, hits in run.items():  # before: "nan" written, then refused on reading ("score is NaN")
        bad = next((hit for hit in hits if not math.isfinite(hit.score)), None)
        if bad is not None:
            raise InputError(f"cannot write a run file: query '{qid}', document '{bad.id}' has score {bad.score}, "
                             "which no run file reader takes", path=path)
    if not is_jsonl_run(path):
        run.write_trec(path, tag=tag)
        return
    from sleuth.io import atomic_write_text

    atomic_write_text(path, "".join(json.dumps({"qid": qid, "docno": hit.id, "rank": rank, "score": hit.score,
                                                "tag": tag}, ensure_ascii=False) + "\n"
                                    for qid, hits in run.items() for rank, hit in enumerate(hits, start=1)))


def read_run(path: str | Path) -> Run:
    """A run file as written by :func:`write_run` (or any TREC run file), each ranking by descending score; a
    malformed line, a score that is not a number or a document ranked twice for one query is an InputError naming
    file and line."""
    if not is_jsonl_run(path):
        return Run.read_trec(path)
    from sleuth.corpus.jsonl import iter_jsonl, require_id

    scores: dict[str, dict[str, float]] = {}
    lines: dict[tuple[str, str], int] = {}
    for number, record in iter_jsonl(path):
        qid, docno = require_id(record, "qid", path, number), require_id(record, "docno", path, number)
        score = record.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
            raise InputError(f"score {score!r:.40} is not a finite number", path=path, line=number, field="score")
        if (qid, docno) in lines:
            raise InputError(f"document '{docno}' ranked twice for query '{qid}' (first on line "
                             f"{lines[qid, docno]:,})", path=path, line=number)
        lines[qid, docno] = number
        scores.setdefault(qid, {})[docno] = float(score)
    return Run.from_scores(scores)
