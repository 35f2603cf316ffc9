"""Fuzzy set operations on membership degrees in [0, 1]: a parsed query's constraint scores -> one score.

``t_norm="min"`` (Gödel): AND = min, OR = max. ``t_norm="product"``: AND = product, OR = probabilistic sum
1 - prod(1 - x). NOT = 1 - x in both, or the softer 1 - w * x with a ``not_weight`` w < 1 (a classifier's score for
the subtracted constraint is noisy: w < 1 keeps a true member that the noise half-excludes). A template's expression follows :mod:`sleuth.systems.quest.templates`: unions OR all
constraints; the others AND the positive constraints with the negation of the subtracted one.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sleuth.errors import ConfigError
from sleuth.systems.quest.templates import ParsedQuery

T_NORMS = ("min", "product")


def check_t_norm(t_norm: str) -> str:
    """``t_norm`` itself when known, else a ConfigError listing the known ones."""
    if t_norm not in T_NORMS:
        raise ConfigError(f"unknown t-norm '{t_norm}' (known: {', '.join(T_NORMS)})")
    return t_norm


def fuzzy_and(values: Sequence[np.ndarray], t_norm: str = "min") -> np.ndarray:
    """Conjunction of membership arrays (elementwise)."""
    stacked = np.stack([np.asarray(v, dtype=np.float64) for v in values])
    return stacked.min(axis=0) if check_t_norm(t_norm) == "min" else stacked.prod(axis=0)


def fuzzy_or(values: Sequence[np.ndarray], t_norm: str = "min") -> np.ndarray:
    """Disjunction of membership arrays: the t-conorm dual to ``t_norm``."""
    stacked = np.stack([np.asarray(v, dtype=np.float64) for v in values])
    return stacked.max(axis=0) if check_t_norm(t_norm) == "min" else 1.0 - (1.0 - stacked).prod(axis=0)


def fuzzy_not(values: np.ndarray, weight: float = 1.0) -> np.ndarray:
    """Negation 1 - weight * x (the standard 1 - x with weight 1)."""
    return 1.0 - weight * np.asarray(values, dtype=np.float64)


def combine(parsed: ParsedQuery, memberships: Sequence[np.ndarray], t_norm: str = "min",
            not_weight: float = 1.0) -> np.ndarray:
    """One membership per candidate from per-constraint memberships (``memberships[i]`` for constraint i)."""
    if len(memberships) != len(parsed.constraints):
        raise ConfigError(f"{len(parsed.constraints)} constraints but {len(memberships)} score arrays")
    if parsed.is_union:
        return fuzzy_or(memberships, t_norm)
    terms = [fuzzy_not(m, not_weight) if negated else np.asarray(m, dtype=np.float64)
             for m, negated in zip(memberships, parsed.negated)]
    return fuzzy_and(terms, t_norm)


def combine_anchored(parsed: ParsedQuery, memberships: Sequence[np.ndarray], whole: np.ndarray, t_norm: str = "min",
                     not_weight: float = 1.0, constraint_weight: float = 1.0) -> np.ndarray:
    """The whole query's membership ANDed with :func:`combine` of its constraints; a union or an atomic query keeps
    the whole query's membership (its constraints could only widen it). With ``constraint_weight`` c < 1 the
    result is ``(1 - c) * whole + c * that AND``: the set operation only partly overrides the whole query."""
    whole = np.asarray(whole, dtype=np.float64)
    if not parsed.is_set_operation:
        return whole
    anded = fuzzy_and([whole, combine(parsed, memberships, t_norm, not_weight)], t_norm)
    return anded if constraint_weight == 1.0 else (1.0 - constraint_weight) * whole + constraint_weight * anded
