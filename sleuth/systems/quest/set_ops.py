"""Set-operation-aware scoring (beyond QUEST, as its conclusion asks): parse each query into a template over atomic
constraints, score every candidate against every constraint, and combine the scores with fuzzy set operations.

The constraint scorer is any stage that rescores given candidates: the relevance classifier (probabilities, used as
they are) or a retriever (BM25 / dense scores, min-max normalised per constraint over the candidate pool). With an
``expand`` retriever, the top ``expand_depth`` documents of every positive constraint join the candidate pool first
(a union query's second disjunct may be missing from the whole query's top 100).

``anchor=True`` also scores the whole query and ANDs that score with the constraints' combination: a candidate must
fit the query as written *and* its parsed structure (a union or an atomic query keeps the whole-query score, since
its constraints could only widen it). The constraint scores then refine what the whole-query classifier decides,
instead of replacing it; ``not_weight`` < 1 softens the subtraction (see :mod:`sleuth.systems.quest.fuzzy`).

With ``retriever_weight`` w the combined score votes with the retriever as the ``classify`` stage does:
``(1 - w) * combined + w * min-max retriever score`` (the candidates' input scores); anchored, an atomic or union
query then scores exactly as ``classify`` with the same weight. ``constraint_weight`` c < 1 (anchored only) takes
``(1 - c) * whole + c * anchored`` before the vote: the set operation adjusts the whole query's score by a share.
``set_threshold`` is the set rule of the queries parsed as intersections or differences (the ones the set operation
rescores), ``threshold`` that of the others; without it ``threshold`` rules them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.stages.base import Stage, folders_of
from sleuth.stages.hits import input_score_key
from sleuth.stages.run import Hit, Run
from sleuth.systems.quest.classify import fused
from sleuth.systems.quest.cut import CutsToSet, SetCut, as_cut
from sleuth.systems.quest.fuzzy import check_t_norm, combine, combine_anchored
from sleuth.systems.quest.query_parser import parse_query
from sleuth.systems.quest.templates import ParsedQuery

NORMALISATIONS = ("none", "minmax")
SEPARATOR = "\x1f"  # joins a query id and a constraint number into a sub-query id
WHOLE = "whole"  # the sub-query number of the whole query (anchor=True)


class SetOperations(Stage, CutsToSet):
    """Ranks candidates by the fuzzy combination of their constraint scores; keeps the members of the set
    ``threshold`` (a number or a :class:`~sleuth.systems.quest.cut.SetCut`) gives, or every candidate with None
    (``set_threshold``, when given, for the queries parsed as intersections or differences)."""

    config_stage = "setops"

    def __init__(self, scorer: Stage, parser: Callable[[str], ParsedQuery] = parse_query, t_norm: str = "min",
                 normalise: str = "none", expand: Stage | None = None, expand_depth: int = 0,
                 threshold: float | SetCut | None = None, anchor: bool = False, not_weight: float = 1.0,
                 retriever_weight: float = 0.0, constraint_weight: float = 1.0,
                 set_threshold: float | SetCut | None = None, name: str = "setops"):
        if normalise not in NORMALISATIONS:
            raise ConfigError(f"setops: unknown normalise '{normalise}' (known: {', '.join(NORMALISATIONS)})")
        if expand_depth < 0 or (expand_depth and expand is None):
            raise ConfigError("setops: expand_depth needs an expand retriever and must not be negative")
        if not 0.0 <= not_weight <= 1.0:
            raise ConfigError(f"setops: not_weight must be between 0 and 1, got {not_weight}")
        if not 0.0 <= retriever_weight <= 1.0:
            raise ConfigError(f"setops: retriever_weight must be in [0, 1], got {retriever_weight}")
        if not 0.0 <= constraint_weight <= 1.0 or (constraint_weight < 1.0 and not anchor):
            raise ConfigError(f"setops: constraint_weight must be in [0, 1] (below 1 only with anchor), "
                              f"got {constraint_weight}")
        self.retriever_weight, self.constraint_weight = retriever_weight, constraint_weight
        self.scorer, self.parser, self.t_norm = scorer, parser, check_t_norm(t_norm)
        self.anchor, self.not_weight = anchor, not_weight
        self.normalise, self.expand, self.expand_depth = normalise, expand, expand_depth
        self.hits_bound = None if expand_depth else "rescore"  # expanding adds candidates
        self.cut = None if threshold is None else as_cut(threshold)
        self.set_cut = self.cut if set_threshold is None else as_cut(set_threshold)
        self.name = name

    def index_folders(self) -> set[Path] | None:
        return folders_of([self.scorer, *([self.expand] if self.expand is not None and self.expand_depth else [])])

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is None:
            raise ConfigError("setops: needs candidates from a retriever before it")
        parsed = {q.id: self.parser(q.text) for q in queries}
        pools = self.expanded(queries, parsed, candidates)
        sub_queries, sub_candidates = [], Run()
        for query in queries:
            constraints = parsed[query.id].constraints
            for i, constraint in enumerate(constraints if len(constraints) > 1 else (query.text,)):
                sub = Query(f"{query.id}{SEPARATOR}{i}", constraint)  # an atomic query is scored as written
                sub_queries.append(sub)
                sub_candidates[sub.id] = pools[query.id]
            if self.anchor and len(constraints) > 1:
                whole_query = Query(f"{query.id}{SEPARATOR}{WHOLE}", query.text)
                sub_queries.append(whole_query)
                sub_candidates[whole_query.id] = pools[query.id]
        scored = self.scorer.transform(sub_queries, sub_candidates) if sub_queries else Run()
        run = Run()
        for query in queries:
            structure, pool = parsed[query.id], pools[query.id]
            memberships = [self.memberships(scored.get(f"{query.id}{SEPARATOR}{i}", []), pool)
                           for i in range(len(structure.constraints))]
            whole = None
            if self.anchor:
                whole = (self.memberships(scored.get(f"{query.id}{SEPARATOR}{WHOLE}", []), pool)
                         if len(structure.constraints) > 1 else memberships[0])
            run[query.id] = self.ranked(pool, structure, memberships, whole)
        return run

    def expanded(self, queries: Sequence[Query], parsed: dict[str, ParsedQuery], candidates: Run) -> Run:
        """Each query's candidates, followed by the new documents of its positive constraints' top results."""
        pools = Run({q.id: list(candidates.get(q.id, [])) for q in queries})
        if not self.expand_depth:
            return pools
        subs = [Query(f"{q.id}{SEPARATOR}{i}", c) for q in queries
                for i, (c, neg) in enumerate(zip(parsed[q.id].constraints, parsed[q.id].negated)) if not neg]
        assert self.expand is not None, "expand_depth needs an expansion retriever (checked in __init__)"
        found = self.expand.transform(subs, None)
        for sub in subs:
            qid = sub.id.split(SEPARATOR)[0]
            seen = {h.id for h in pools[qid]}
            for hit in found.get(sub.id, [])[:self.expand_depth]:
                if hit.id not in seen:
                    seen.add(hit.id)
                    pools[qid].append(hit)
        return pools

    def memberships(self, scored: list[Hit], pool: list[Hit]) -> np.ndarray:
        """Constraint membership of every pool candidate (in pool order); unscored candidates get the minimum."""
        by_id = {h.id: h.score for h in scored}
        raw = np.array([by_id.get(h.id, np.nan) for h in pool], dtype=np.float64)
        floor = np.nanmin(raw) if np.isfinite(raw).any() else 0.0
        raw = np.where(np.isnan(raw), floor, raw)
        if self.normalise == "minmax":
            return minmax(raw)
        return np.clip(raw, 0.0, 1.0)

    def combined(self, structure: ParsedQuery, memberships: list[np.ndarray], whole: np.ndarray | None
                 ) -> np.ndarray:
        """The fuzzy combination of the constraints, ANDed with the whole query's score when anchored."""
        if whole is None:
            return combine(structure, memberships, self.t_norm, self.not_weight)
        return combine_anchored(structure, memberships, whole, self.t_norm, self.not_weight, self.constraint_weight)

    def ranked(self, pool: list[Hit], structure: ParsedQuery, memberships: list[np.ndarray],
               whole: np.ndarray | None = None) -> list[Hit]:
        """Pool hits with the combined score, best first (ties keep pool order), cut to the set if a cut is set."""
        combined = self.combined(structure, memberships, whole) if pool else np.zeros(0)
        combined = fused(combined, np.array([h.score for h in pool], dtype=np.float64), self.retriever_weight)
        hits = []
        for position, hit in enumerate(pool):
            constraint_scores = [float(m[position]) for m in memberships]
            hits.append((-combined[position], position, hit.with_score(
                combined[position], template=structure.template, constraints=list(structure.constraints),
                constraint_scores=constraint_scores, **self.whole_extra(whole, position),
                **{input_score_key(self.name): hit.score})))
        hits.sort(key=lambda item: (item[0], item[1]))
        ranked = [h for _, _, h in hits]
        cut = self.set_cut if structure.is_set_operation else self.cut
        return ranked if cut is None else cut.members(ranked)

    @staticmethod
    def whole_extra(whole: np.ndarray | None, position: int) -> dict[str, float]:
        """The whole query's score of the candidate at ``position``, as a hit extra, when anchored."""
        return {} if whole is None else {"whole_score": float(whole[position])}


def minmax(values: np.ndarray) -> np.ndarray:
    """Scale to [0, 1] by the minimum and maximum (all equal -> all 0)."""
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    return (values - low) / (high - low) if high > low else np.zeros_like(values)
