"""Score fusion of several branches that see the same input: weighted sum of normalised scores, or RRF."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.stages.base import Stage, check_k, folders_of, pipeline_hint
from sleuth.stages.run import Hit, Run, first_unscored, gc_paused


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; a constant list maps to 1."""
    low, high = scores.min(), scores.max()
    return np.ones_like(scores) if high == low else (scores - low) / (high - low)


def zscore(scores: np.ndarray) -> np.ndarray:
    """Centre and scale by the standard deviation; a constant list maps to 0."""
    std = scores.std()
    return np.zeros_like(scores) if std == 0 else (scores - scores.mean()) / std


NORMALISERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {"minmax": minmax, "zscore": zscore,
                                                               "none": lambda s: s}
METHODS = ("rrf", "weighted")


def weights_problem(weights: Sequence[object], branches: int) -> str | None:
    """What is wrong with fusion ``weights`` for ``branches`` branches (one finite number >= 0 each, not all 0), or
    None."""
    if len(weights) != branches:
        return f"{len(weights)} weights for {branches} branches (give one weight per branch)"
    numbers = [w for w in weights if isinstance(w, (int, float)) and not isinstance(w, bool) and np.isfinite(w)]
    if len(numbers) < branches or min(numbers) < 0 or max(numbers) == 0:
        return f"weights must be finite numbers >= 0, not all 0; got {list(weights)}"
    return None


def fusion_settings(method: str, weights: Sequence[float] | None, normalise: str | None,
                    branches: int) -> tuple[list[float], str]:
    """Checked fusion settings for ``branches`` rankings: the weights (default 1 each) and the normaliser (default
    ``minmax``; refused with ``rrf``, which reads ranks only); an unknown method or normaliser, or weights that are
    not one number >= 0 per ranking, is a ConfigError."""
    if method not in METHODS:
        raise ConfigError(f"fuse: unknown method '{method}' (known: {', '.join(METHODS)})")
    if normalise is not None and method == "rrf":  # before: accepted and without effect
        raise ConfigError(f"fuse: normalise '{normalise}' applies to method weighted; rrf fuses ranks")
    normalise = normalise or "minmax"
    if normalise not in NORMALISERS:
        raise ConfigError(f"fuse: unknown normalise '{normalise}' (known: {', '.join(NORMALISERS)})")
    weights = list(weights) if weights is not None else [1.0] * branches
    problem = weights_problem(weights, branches)
    if problem is not None:
        raise ConfigError(f"fuse: {problem}")
    return weights, normalise


def reciprocal_rank_fusion(rankings: Sequence[list[Hit]], weights: Sequence[float], k: int = 60) -> dict[str, float]:
    """RRF (Cormack et al. 2009): sum over rankings of weight / (k + rank)."""
    fused: dict[str, float] = {}
    for hits, weight in zip(rankings, weights):
        for rank, hit in enumerate(hits, start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + weight / (k + rank)
    return fused


def weighted_fusion(rankings: Sequence[list[Hit]], weights: Sequence[float], normalise: str) -> dict[str, float]:
    """Weighted sum of per-ranking normalised scores; a document missing from a ranking gets that ranking's minimum."""
    normalised = []
    for hits in rankings:
        scores = NORMALISERS[normalise](np.array([h.score for h in hits], dtype=np.float64)) if hits else np.zeros(0)
        normalised.append(({h.id: float(s) for h, s in zip(hits, scores)}, float(min(scores, default=0.0))))
    every = {hit.id for hits in rankings for hit in hits}
    return {doc: sum(w * table.get(doc, floor) for w, (table, floor) in zip(weights, normalised)) for doc in every}


def refuse_unscored(rankings: Sequence[list[Hit]], names: Sequence[str], qid: str) -> None:
    """A ConfigError naming the branch, query and document of a score that is not a finite number: weighted fusion
    adds scores (before: a NaN made the whole query's fused scores NaN, its ranking arbitrary, without a word)."""
    for name, hits in zip(names, rankings):
        if (bad := first_unscored(hits)) is not None:
            raise ConfigError(f"fuse: branch '{name}' scored document '{bad.id}' of query '{qid}' {bad.score!r}, not a "
                              "finite number; weighted fusion adds scores")


def component_names(names: Sequence[str]) -> list[str]:
    """Branch names as keys of a hit's components: a name two branches share gets ``#position`` (before: the second
    branch's score replaced the first's)."""
    return [f"{name}#{i}" if names.count(name) > 1 else name for i, name in enumerate(names, start=1)]


class Fuse(Stage):
    """Runs every branch on the same queries and candidates and fuses their rankings into one.

    ``method="rrf"`` (rank-based, ``rrf_k``) or ``"weighted"`` (sum of ``normalise``-d scores times ``weights``;
    ``normalise`` default ``minmax``, and refused with rrf, which reads ranks only). ``depth`` limits how many hits
    of each branch take part. Each hit's ``extras["components"]`` holds every branch's score by branch name
    (``bm25#1``, ``bm25#2`` where two branches share a name).
    """

    def __init__(self, branches: Sequence[Stage], method: str = "rrf", weights: Sequence[float] | None = None,
                 normalise: str | None = None, rrf_k: int = 60, depth: int = 1000, name: str | None = None):
        if isinstance(branches, (str, Stage)) or not isinstance(branches, Sequence):
            raise ConfigError(f"fuse: branches are a list of stages, got {type(branches).__name__}")
        if len(branches) < 2:
            raise ConfigError("fuse: needs at least two branches")
        for i, branch in enumerate(branches, start=1):  # before: an AttributeError ('str' has no attribute 'name')
            if not isinstance(branch, Stage):
                raise ConfigError(f"fuse: branch {i} is {type(branch).__name__} {branch!r:.40}, not a sleuth "
                                  f"stage{pipeline_hint(branch)}")
        weights, normalise = fusion_settings(method, weights, normalise, len(branches))
        self.branches, self.method, self.weights = list(branches), method, weights
        self.normalise, self.rrf_k = normalise, check_k(rrf_k, "fuse", "rrf_k")
        self.depth = check_k(depth, "fuse", "depth")
        self.name = name or f"{method}({', '.join(b.name for b in self.branches)})"
        self.component_names = component_names([b.name for b in self.branches])

    def index_folders(self) -> set[Path] | None:
        return folders_of(self.branches)

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        runs = [branch.transform(queries, candidates) for branch in self.branches]
        fused = Run()
        with gc_paused():  # a hit and a components dict for each of up to depth x branches documents a query
            for query in queries:
                rankings = [run.get(query.id, [])[:self.depth] for run in runs]
                if self.method == "rrf":
                    scores = reciprocal_rank_fusion(rankings, self.weights, self.rrf_k)
                else:
                    refuse_unscored(rankings, self.component_names, query.id)
                    scores = weighted_fusion(rankings, self.weights, self.normalise)
                first_seen: dict[str, Hit] = {}
                for hits in rankings:
                    for hit in hits:
                        first_seen.setdefault(hit.id, hit)
                components = [{h.id: h.score for h in hits} for hits in rankings]
                ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))  # ranking_key's order
                fused[query.id] = [
                    first_seen[d].with_score(s, components={n: c.get(d) for n, c in zip(self.component_names,
                                                                                         components)})
                    for d, s in ranked
                ]
        return fused
