"""Which hop-2 candidates the HotpotQA chain reranks under a budget (``ChainLimits.k_hop2_rerank``), as pure functions.

Not in the paper (it reranks every candidate). A candidate is a (hop-1 passage, hop-2 passage) pair; ``partial`` is
the score the rules pick by (:func:`selection_scores`: by default its path score without the hop-2 rerank term);
``groups`` gives each candidate's hop-1 passage as its rank in the hop-1 order (0 = best). Every rule returns
candidate indices in their original order.

* ``path``: the best ``budget`` candidates by ``partial`` (ties: the earlier one).
* ``per-hop1``: round robin over the hop-1 passages in hop-1 order, each giving its next best candidate by
  ``partial``: with 30 kept hop-1 passages and a budget of 30, the best hop-2 candidate of each.
* ``mixed``: half the budget (rounded up) by ``path``, the rest by ``per-hop1`` among the candidates left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from sleuth.errors import ConfigError

HOP2_SELECTIONS = ("path", "per-hop1", "mixed")
#: the rule the chain uses by default
DEFAULT_HOP2_SELECTION = "path"


def parse_selection_weights(text: str, field: str = "--selection-weights") -> tuple[float, float]:
    """"A,B" -> (A, B); a ConfigError naming ``field`` otherwise."""
    parts = text.split(",")
    try:
        a, b = (float(part) for part in parts)
    except ValueError:
        a = b = math.nan
    if not (math.isfinite(a) and math.isfinite(b)):  # nan ranked every candidate by a nan score, silently
        raise ConfigError(f"{field} takes two finite numbers A,B (the weights of hop1_rerank and hop2), got '{text}'")
    return a, b


def selection_scores(terms: Sequence[tuple[float, float, float]], weights: tuple[float, float]) -> list[float]:
    """Each candidate's score for the budget rules from its (hop1, hop1_rerank, hop2) terms:
    ``hop1 + a * hop1_rerank + b * hop2`` with ``weights`` = (a, b); the chain's default is (its hop-1 rerank
    weight, 1), its path score without the hop-2 rerank term."""
    a, b = weights
    return [hop1 + a * hop1_rerank + b * hop2 for hop1, hop1_rerank, hop2 in terms]


def best_by_partial(partial: Sequence[float], budget: int, among: Sequence[int] | None = None) -> list[int]:
    """The ``budget`` indices (of ``among``, default all) with the highest ``partial`` (ties: the lower index)."""
    pool = range(len(partial)) if among is None else among
    return sorted(pool, key=lambda i: (-partial[i], i))[:budget]


def round_robin(partial: Sequence[float], groups: Sequence[int], budget: int,
                among: Sequence[int] | None = None) -> list[int]:
    """Up to ``budget`` indices (of ``among``, default all): each group's best by ``partial``, groups in ascending
    order, then each group's second best, and so on."""
    by_group: dict[int, list[int]] = {}
    for i in best_by_partial(partial, len(partial), among):
        by_group.setdefault(groups[i], []).append(i)
    queues = [by_group[g] for g in sorted(by_group)]
    chosen: list[int] = []
    depth = 0
    while len(chosen) < budget and any(depth < len(q) for q in queues):
        chosen.extend(q[depth] for q in queues if depth < len(q))
        depth += 1
    return chosen[:budget]


def select_hop2(partial: Sequence[float], groups: Sequence[int], budget: int | None,
                rule: str = DEFAULT_HOP2_SELECTION) -> list[int]:
    """Indices of the candidates to rerank under ``rule`` (one of :data:`HOP2_SELECTIONS`), ascending; all of them
    where ``budget`` is None or not below their number."""
    if rule not in HOP2_SELECTIONS:
        raise ValueError(f"unknown hop-2 selection '{rule}' (use one of {', '.join(HOP2_SELECTIONS)})")
    if budget is None or len(partial) <= budget:
        return list(range(len(partial)))
    if rule == "path":
        chosen = best_by_partial(partial, budget)
    elif rule == "per-hop1":
        chosen = round_robin(partial, groups, budget)
    else:
        first = best_by_partial(partial, (budget + 1) // 2)
        taken = set(first)
        rest = [i for i in range(len(partial)) if i not in taken]
        chosen = first + round_robin(partial, groups, budget - len(first), rest)
    return sorted(chosen)
