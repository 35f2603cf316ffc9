"""Turning index rows into Hits, and candidate ids back into index rows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sleuth.index.docstore import DocStore
from sleuth.stages.run import Hit, ranking_key


def hits_from_rows(docstore: DocStore, positions: Sequence[int], scores: Sequence[float],
                   drop_zero: bool = False) -> list[Hit]:
    """Hits for index rows (skipping FAISS's -1 padding, and zero scores when ``drop_zero``), best first."""
    hits = []
    for position, score in zip(np.asarray(positions).tolist(), np.asarray(scores).tolist()):
        if position < 0 or (drop_zero and score <= 0.0):
            continue
        hits.append(Hit(docstore.ids[position], float(score), docstore.doc_ids[position],
                        docstore.titles[position], docstore.texts[position]))
    hits.sort(key=ranking_key)
    return hits


def candidate_rows(docstore: DocStore, hits: Sequence[Hit]) -> tuple[list[Hit], list[int]]:
    """The candidates this index holds, with their rows (candidates unknown to the index are left out)."""
    kept, rows = [], []
    for hit, row in zip(hits, docstore.positions([hit.id for hit in hits])):
        if row is not None:
            kept.append(hit)
            rows.append(row)
    return kept, rows


INPUT_SCORE = "{stage}_input_score"  # declared (type, display) in sleuth.pipelines.extras


def input_score_key(stage: str) -> str:
    """The extras key of a hit's score before the stage named ``stage`` rescored it: ``<stage>_input_score``."""
    return INPUT_SCORE.format(stage=stage)


def rescored(hits: Sequence[Hit], scores: Sequence[float] | np.ndarray, stage: str) -> list[Hit]:
    """Candidates with new scores (the previous score kept in extras under the stage name), best first."""
    key = input_score_key(stage)
    out = [h.with_score(s, **{key: h.score}) for h, s in zip(hits, np.asarray(scores).tolist())]
    out.sort(key=ranking_key)
    return out
