"""Deterministic splits of questions by hashed id: the train/dev split ``sleuth dhr`` trains on, and the tuning /
report parts of a dev set (every choice made on the tuning part, figures reported on the other), shared by every
system that must keep the same questions apart."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError

#: the share of a dev set's questions in its tuning part (HotpotQA dev 1,712 -> 499 tune, 1,213 report;
#: 2WikiMultihopQA dev 157 -> 43 tune, 114 report)
TUNING_FRACTION = 0.29
#: the parts :func:`question_part` selects
PARTS = ("all", "tune", "report")


def id_digest(salt: str | int, question_id: str) -> str:
    """The SHA-256 hex digest of ``"salt:id"`` (every split here orders or cuts by it)."""
    return hashlib.sha256(f"{salt}:{question_id}".encode()).hexdigest()


def split_questions(questions: Sequence[Query], dev_fraction: float = 0.2,
                    seed: int = 13) -> tuple[list[Query], list[Query]]:
    """A deterministic train/dev split: questions ordered by SHA-256 of ``seed:id``; the first ``dev_fraction`` are
    dev. Independent of file order, stable when questions are added."""
    if not 0 < dev_fraction < 1:
        raise ConfigError(f"dev_fraction must be between 0 and 1, got {dev_fraction}")
    ranked = sorted(questions, key=lambda q: id_digest(seed, q.id))
    n_dev = round(len(ranked) * dev_fraction)
    dev_ids = {q.id for q in ranked[:n_dev]}
    return [q for q in questions if q.id not in dev_ids], [q for q in questions if q.id in dev_ids]


def in_tuning_part(question_id: str) -> bool:
    """Whether a dev question belongs to the tuning part: the first 8 hex digits of SHA-256 of ``"tune:id"``, read as
    a fraction of 16^8, are below :data:`TUNING_FRACTION`. A property of the id alone, so a question keeps its part
    whichever files or subsets it is evaluated with."""
    return int(id_digest("tune", question_id)[:8], 16) / 16 ** 8 < TUNING_FRACTION


def question_part(questions: Sequence[Query], part: str) -> list[Query]:
    """The questions of ``part``: "tune" (:func:`in_tuning_part`), "report" (the others) or "all"."""
    if part not in PARTS:
        raise ConfigError(f"unknown part '{part}' (use one of {', '.join(PARTS)})")
    return [q for q in questions if part == "all" or in_tuning_part(q.id) == (part == "tune")]
