"""QUEST's dataset construction (Malaviya et al., ACL 2023, section 3.2): compose set-operation queries from entity -> category
labels with the seven templates, keeping only compositions whose sets meet the paper's size constraints.

Constraints (every bound is a field of :class:`SizeLimits`; the defaults are the paper's):

- every query: the answer set has 2..20 entities;
- intersection A ∩ B: |A| > 50 and |B| > 50 (the answer-set bound makes |A ∩ B| small);
- difference A \\ B: 50 < |A| < 200, 50 < |B| < 10000, and a bounded overlap 0 < |A ∩ B| / |A| < 0.8
  (Appendix B: with r_B = 0.95 an overlap below 0.8 keeps the difference's precision above 0.83);
- union A ∪ B: |A| >= 3, |B| >= 3, and 0 < |A ∩ B| < |A ∪ B| / 3.

Three-constraint templates apply the same checks recursively: the first operation's checks on A and B, then the
second operation's checks with the intermediate set as its left operand; the answer-set bound applies to the final
set only. Category sets are the direct members (the paper also closes categories transitively over the category
graph, which an article dump without category pages does not give).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import combinations

from sleuth.systems.quest.templates import (
    ATOMIC,
    DIFFERENCE,
    INTERSECTION,
    INTERSECTION3,
    INTERSECTION_DIFFERENCE,
    TEMPLATES,
    UNION,
    UNION3,
)

Sets = Mapping[str, frozenset[str]]
# Wikipedia maintenance and tracking categories, never query material.
MAINTENANCE = re.compile(r"^(?:All |Articles |Pages |Wikipedia |CS1 |Use |Webarchive |Commons |Short description"
                         r"|Coordinates |Good articles|Featured articles|Vague or ambiguous|Accuracy disputes|Official "
                         r"website|Wikipedia:)", re.I)


@dataclass(frozen=True)
class SizeLimits:
    """The size constraints of section 3.2 (strict bounds are named ``*_over`` / ``*_under``)."""

    answer_min: int = 2
    answer_max: int = 20
    intersection_operand_over: int = 50
    difference_left_over: int = 50
    difference_left_under: int = 200
    difference_right_over: int = 50
    difference_right_under: int = 10000
    difference_overlap_over: float = 0.0
    difference_overlap_under: float = 0.8
    union_operand_min: int = 3
    union_overlap_over: int = 0
    union_overlap_share_under: float = 1 / 3


PAPER = SizeLimits()
# For small label sets such as the 106-article test dump: the same checks with the large-set bounds lowered.
RELAXED = SizeLimits(intersection_operand_over=2, difference_left_over=2, difference_right_over=1,
                     difference_overlap_under=1.0, union_operand_min=2, union_overlap_share_under=0.5)


def answer_ok(answer: frozenset[str], limits: SizeLimits = PAPER) -> bool:
    """The answer set is big enough to be a list and small enough to judge (2..20 entities)."""
    return limits.answer_min <= len(answer) <= limits.answer_max


def intersection_ok(a: frozenset[str], b: frozenset[str], limits: SizeLimits = PAPER) -> bool:
    """Both operands are large (> 50 entities)."""
    return len(a) > limits.intersection_operand_over and len(b) > limits.intersection_operand_over


def difference_ok(a: frozenset[str], b: frozenset[str], limits: SizeLimits = PAPER) -> bool:
    """50 < |A| < 200, 50 < |B| < 10000, and |A ∩ B| / |A| strictly between the overlap bounds."""
    if not (limits.difference_left_over < len(a) < limits.difference_left_under):
        return False
    if not (limits.difference_right_over < len(b) < limits.difference_right_under):
        return False
    overlap = len(a & b) / len(a)
    return limits.difference_overlap_over < overlap < limits.difference_overlap_under


def union_ok(a: frozenset[str], b: frozenset[str], limits: SizeLimits = PAPER) -> bool:
    """Each operand has at least 3 entities; they overlap, but by less than a third of the union."""
    if len(a) < limits.union_operand_min or len(b) < limits.union_operand_min:
        return False
    overlap = len(a & b)
    return limits.union_overlap_over < overlap < len(a | b) * limits.union_overlap_share_under


def category_sets(labels: Mapping[str, Iterable[str]], exclude: re.Pattern | None = MAINTENANCE) -> dict[str, frozenset]:
    """Category -> its entities, from entity -> categories (maintenance categories left out)."""
    members: dict[str, set[str]] = defaultdict(set)
    for entity, categories in labels.items():
        for category in categories:
            if exclude is None or not exclude.match(category):
                members[category].add(entity)
    return {category: frozenset(entities) for category, entities in sorted(members.items())}


def overlapping_pairs(sets: Sets) -> set[tuple[str, str]]:
    """Unordered pairs of categories that share an entity (every set operation here needs an overlap)."""
    by_entity: dict[str, list[str]] = defaultdict(list)
    for category, entities in sets.items():
        for entity in entities:
            by_entity[entity].append(category)
    return {(a, b) for cats in by_entity.values() for a, b in combinations(sorted(cats), 2)}


def compositions(template: str, sets: Sets, limits: SizeLimits = PAPER) -> Iterator[tuple[tuple[str, ...], frozenset]]:
    """Every ``(categories, answer set)`` of ``template`` that meets the limits, in a deterministic order."""
    if template == ATOMIC:
        yield from (((c,), s) for c, s in sets.items() if answer_ok(s, limits))
        return
    pairs = sorted(overlapping_pairs(sets))
    ordered = pairs + [(b, a) for a, b in pairs]
    partners = defaultdict(set)
    for a, b in pairs:
        partners[a].add(b)
        partners[b].add(a)
    first = {UNION: (union_ok, frozenset.__or__), UNION3: (union_ok, frozenset.__or__),
             INTERSECTION: (intersection_ok, frozenset.__and__), INTERSECTION3: (intersection_ok, frozenset.__and__),
             INTERSECTION_DIFFERENCE: (intersection_ok, frozenset.__and__),
             DIFFERENCE: (difference_ok, frozenset.__sub__)}[template]
    check, operate = first
    for a, b in (ordered if template == DIFFERENCE else pairs):
        if not check(sets[a], sets[b], limits):
            continue
        inner = operate(sets[a], sets[b])
        if template in (UNION, INTERSECTION, DIFFERENCE):
            if answer_ok(inner, limits):
                yield (a, b), inner
            continue
        second = {UNION3: (union_ok, frozenset.__or__), INTERSECTION3: (intersection_ok, frozenset.__and__),
                  INTERSECTION_DIFFERENCE: (difference_ok, frozenset.__sub__)}[template]
        for c in sorted((partners[a] | partners[b]) - {a, b}):
            if template != INTERSECTION_DIFFERENCE and c < b:
                continue  # commutative: each unordered triple once
            if second[0](inner, sets[c], limits):
                answer = second[1](inner, sets[c])
                if answer_ok(answer, limits):
                    yield (a, b, c), answer


def query_text(template: str, categories: tuple[str, ...], marked: bool = False) -> str:
    """The templatic query ("A that are also B but not C"); with ``marked`` each category in <mark> tags, as
    QUEST's ``original_query``."""
    parts = iter(f"<mark>{c}</mark>" if marked else c for c in categories)
    return re.sub("_", lambda _: next(parts), template)


def build_queries(labels: Mapping[str, Iterable[str]], templates: Iterable[str] = TEMPLATES,
                  per_template: int = 200, limits: SizeLimits = PAPER, domain: str = "wikipedia", seed: int = 0,
                  exclude: re.Pattern | None = MAINTENANCE) -> list[dict]:
    """Up to ``per_template`` random valid compositions per template, as QUEST examples (query, docs,
    original_query, scores, metadata.template/domain). The paper samples 200 per template and domain."""
    sets = category_sets(labels, exclude)
    rng = random.Random(seed)
    examples = []
    for template in templates:
        found = list(compositions(template, sets, limits))
        for categories, answer in rng.sample(found, min(per_template, len(found))):
            examples.append({"query": query_text(template, categories),
                             "docs": sorted(answer),
                             "original_query": query_text(template, categories, marked=True),
                             "scores": None,
                             "metadata": {"template": template, "domain": domain,
                                          "category_sizes": [len(sets[c]) for c in categories]}})
    return examples
