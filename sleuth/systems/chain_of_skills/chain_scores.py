"""Chain-of-Skills score arithmetic (Ma et al., ACL 2023, Appendix A), as pure functions.

Every constant is a named, documented default that callers (and the ``cos_chain`` stage config) may override.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

#: a passage found by both retrieval and entity linking gets max(scores) * PROMOTION_ALPHA
PROMOTION_ALPHA = 1.06
#: hop-1 order: HOP1_RERANK_WEIGHT * rerank + retrieval (also the weight of the hop-1 rerank in a path score)
HOP1_RERANK_WEIGHT = 1.5
#: NQ final score: NQ_RERANK_BETA * rerank + score
NQ_RERANK_BETA = 0.5
#: not in the paper: the hotpotqa chain's paths fused by reciprocal rank with two rounds of retrieval's, the chain's
#: list weighted FUSION_CHAIN_WEIGHT, RRF constant FUSION_RRF_K (chosen on HotpotQA dev's tuning part, docs/cos)
FUSION_RRF_K = 10
FUSION_CHAIN_WEIGHT = 2.0

Key = TypeVar("Key", bound=Hashable)


def align_link_scores(link_scores: Sequence[float], max_retrieval: float) -> list[float]:
    """Link scores on the retrieval scale: ``link * max_retrieval / max(max_link, max_retrieval)``."""
    if not link_scores:
        return []
    denominator = max(max(link_scores), max_retrieval)
    if denominator == 0:
        return [float(s) for s in link_scores]
    return [float(s) * max_retrieval / denominator for s in link_scores]


def merge_skill_scores(retrieval: Mapping[Key, float], links: Mapping[Key, float],
                       alpha: float = PROMOTION_ALPHA) -> dict[Key, float]:
    """Union of retrieval and (already aligned) link scores; a key found by both gets ``max(scores) * alpha``."""
    merged = dict(retrieval)
    for key, score in links.items():
        merged[key] = max(merged[key], score) * alpha if key in merged else score
    return merged


def aligned_merge(retrieval: Mapping[Key, float], links: Mapping[Key, float],
                  alpha: float = PROMOTION_ALPHA) -> dict[Key, float]:
    """Align the link scores against the best retrieval score, then merge with promotion."""
    return merge_skill_scores(retrieval, aligned_links(retrieval, links), alpha)


def aligned_links(retrieval: Mapping[Key, float], links: Mapping[Key, float]) -> dict[Key, float]:
    """The link scores aligned against the best retrieval score (what :func:`aligned_merge` merges)."""
    max_retrieval = max(retrieval.values()) if retrieval else 0.0
    keys = list(links)
    return dict(zip(keys, align_link_scores([links[k] for k in keys], max_retrieval)))


def hop1_score(rerank: float, retrieval: float, weight: float = HOP1_RERANK_WEIGHT) -> float:
    """Hop-1 ordering score: ``weight * rerank + retrieval``."""
    return weight * rerank + retrieval


def path_score(hop1: float, hop1_rerank: float, hop2: float, hop2_rerank: float,
               hop1_rerank_weight: float = HOP1_RERANK_WEIGHT) -> float:
    """Score of a two-hop path: ``hop1 + 1.5 * hop1_rerank + hop2 + hop2_rerank``."""
    return hop1 + hop1_rerank_weight * hop1_rerank + hop2 + hop2_rerank


def nq_score(rerank: float, score: float, beta: float = NQ_RERANK_BETA) -> float:
    """NQ final score: ``beta * rerank + score``."""
    return beta * rerank + score


def distinct_paths(paths: Sequence[tuple[str, str, str, str, float]]) -> list[tuple[str, str, str, str, float]]:
    """Paths ``(id1, title1, id2, title2, score)`` best first, without same-title paths and duplicate pairs.

    Of two paths over the same unordered pair of ids the better-scoring one is kept (ties: the earlier one).
    """
    kept, seen = [], set()
    order = sorted(range(len(paths)), key=lambda i: (-paths[i][4], i))
    for i in order:
        id1, title1, id2, title2, _ = paths[i]
        pair = frozenset((id1, id2))
        if title1 == title2 or id1 == id2 or pair in seen:
            continue
        seen.add(pair)
        kept.append(paths[i])
    return kept
