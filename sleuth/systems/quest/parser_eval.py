"""How well the query parser recovers QUEST's gold structure (``original_query``): template accuracy per template
and the token F1 of the predicted constraints against the marked ones (best one-to-one alignment)."""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sleuth.corpus.model import Query
from sleuth.eval.measures import mean
from sleuth.systems.quest.query_parser import parse_query
from sleuth.systems.quest.templates import ParsedQuery, parse_marked

WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Lowercase alphanumeric words."""
    return WORD.findall(text.lower())


def token_f1(predicted: str, gold: str) -> float:
    """Bag-of-words F1 of two constraint strings."""
    p, g = tokens(predicted), tokens(gold)
    common = sum(min(p.count(t), g.count(t)) for t in set(p))
    if not common:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def constraint_f1(predicted: ParsedQuery, gold: ParsedQuery) -> float:
    """Mean token F1 of the best one-to-one alignment of predicted to gold constraints, divided by the larger count
    (an extra or missing constraint scores 0). Negated constraints only align with negated ones."""
    pairs = list(zip(predicted.constraints, predicted.negated))
    golds = list(zip(gold.constraints, gold.negated))
    best = 0.0
    for order in itertools.permutations(range(len(pairs)), min(len(pairs), len(golds))):
        total = sum(token_f1(pairs[i][0], g[0]) if pairs[i][1] == g[1] else 0.0 for i, g in zip(order, golds))
        best = max(best, total)
    return best / max(len(pairs), len(golds))


def parser_accuracy(examples: Iterable[Query], parser: Callable[[str], ParsedQuery] = parse_query,
                    where: Callable[[str], Mapping[str, Any]] = lambda qid: {}) -> dict:
    """``{"overall": {...}, "per_template": {template: {...}}}`` with ``count``, ``template_accuracy`` and
    ``constraint_f1`` for the examples that have an ``original_query``; plus a confusion of templates. A bad
    original_query is an InputError naming, by ``where(query id)``, its ``path`` and ``line``."""
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    confusion: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for example in examples:
        original = example.metadata.get("original_query")
        if not original:
            continue
        gold = parse_marked(original, **where(example.id))
        predicted = parser(example.text)
        rows[gold.template].append((float(predicted.template == gold.template), constraint_f1(predicted, gold)))
        confusion[gold.template][predicted.template] += 1

    def summary(values: list[tuple[float, float]]) -> dict[str, float]:
        return {"count": len(values), "template_accuracy": mean(v[0] for v in values),
                "constraint_f1": mean(v[1] for v in values)}

    everything = [v for values in rows.values() for v in values]
    return {"overall": summary(everything), "per_template": {t: summary(v) for t, v in rows.items()},
            "confusion": {t: dict(c) for t, c in confusion.items()}}
