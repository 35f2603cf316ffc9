"""A deterministic train/dev split of questions by hashed id (the split ``sleuth dhr`` trains on, shared by every
system that must keep the same questions apart)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError


def split_questions(questions: Sequence[Query], dev_fraction: float = 0.2,
                    seed: int = 13) -> tuple[list[Query], list[Query]]:
    """A deterministic train/dev split: questions ordered by SHA-256 of ``seed:id``; the first ``dev_fraction`` are
    dev. Independent of file order, stable when questions are added."""
    if not 0 < dev_fraction < 1:
        raise ConfigError(f"dev_fraction must be between 0 and 1, got {dev_fraction}")
    ranked = sorted(questions, key=lambda q: hashlib.sha256(f"{seed}:{q.id}".encode()).hexdigest())
    n_dev = round(len(ranked) * dev_fraction)
    dev_ids = {q.id for q in ranked[:n_dev]}
    return [q for q in questions if q.id not in dev_ids], [q for q in questions if q.id in dev_ids]
