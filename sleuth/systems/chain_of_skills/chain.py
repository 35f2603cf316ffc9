"""Chain-of-Skills inference chains (Ma et al., ACL 2023, Appendix A) built from the skill stages.

* ``retrieval-2hop``: the paper's retrieval-only baseline (§5.2, Table 6: "two rounds of retrieval-only
  inference"): hop 1 = top ``k_hop1`` by single retrieval, hop 2 = top ``k_expanded`` by expanded retrieval per
  hop-1 passage; no linking, no reranking; path score = retrieval + expanded score; paths as for ``hotpotqa``.
* ``retrieval``: top ``k_retrieval`` by single retrieval + top ``k_link`` linked passages per question mention,
  link scores aligned to the retrieval scale, a passage found by both promoted (``alpha``).
* ``nq``: the same candidates reranked; final = ``beta * rerank + score``.
* ``hotpotqa``: hop 1 as ``retrieval``, reranked, ordered by ``rerank_weight * rerank + score``, keep ``k_hop1``;
  hop 2 per hop-1 passage = expanded retrieval top ``k_expanded`` + top ``k_hop2_link`` links per passage mention
  (aligned, promoted), reranked over "question [SEP] hop-1 passage"; path score = hop1 + rerank_weight *
  hop1_rerank + hop2 + hop2_rerank; paths of two same-title passages and duplicate unordered pairs dropped.
  A path is one hit: id "id1||id2", ``extras["path"]`` = [hop-1 hit, hop-2 hit] with their per-hop scores
  (``merged`` = aligned and promoted skill score, ``retrieval``/``expanded``, ``link``, ``rerank``; the hop-1 hit's
  ``hop1_rank`` = its rank among the kept hop-1 passages).
  Not in the paper, on by default (``fusion``): these paths fused by reciprocal rank with ``retrieval-2hop``'s over
  the same hop-1 retrieval (``fuse_paths``: RRF k 10, the chain's list weighted 2; the score becomes the fused one,
  ``extras["components"]`` keeps both lists' scores); ``fusion=None`` or ``ablate=["fusion"]`` is the paper's order.

Cost: the hop-1 reranking reads ("question", "hop-1 passage") through the expert the expanded queries use (shared
in the paper's routing), so its [CLS] vectors serve as the kept passages' expanded queries (no second pass), and
as those of the fused two-round list's hop-1 passages (every retrieved passage is a hop-1 candidate); each
hop's pairs and triples go through the encoder in one bucketed call (``bucketing``). ``ChainLimits.k_hop2_rerank``
optionally caps the hop-2 reranking, the dominant cost at the paper's limits (~2,000 triples of ~250 tokens).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.stages.base import Stage
from sleuth.stages.cancel import check_cancelled
from sleuth.stages.fusion import reciprocal_rank_fusion
from sleuth.stages.run import Hit, Run, rank_hits
from sleuth.systems.chain_of_skills.chain_scores import (
    FUSION_CHAIN_WEIGHT,
    FUSION_RRF_K,
    HOP1_RERANK_WEIGHT,
    NQ_RERANK_BETA,
    PROMOTION_ALPHA,
    aligned_links,
    distinct_paths,
    hop1_score,
    merge_skill_scores,
    nq_score,
    path_score,
)
from sleuth.systems.chain_of_skills.hop2_budget import (
    DEFAULT_HOP2_SELECTION,
    HOP2_SELECTIONS,
    select_hop2,
    selection_scores,
)
from sleuth.systems.chain_of_skills.stages import EntityLink, ExpandedRetrieve, Rerank, SingleRetrieve, passage_text

CHAINS = ("hotpotqa", "nq", "retrieval", "retrieval-2hop")
NO_RERANK = ("retrieval", "retrieval-2hop")
EXPANDING = ("hotpotqa", "retrieval-2hop")
PATH_SEPARATOR = "||"


@dataclass(frozen=True)
class ChainLimits:
    """Hop limits (Ma et al., ACL 2023, Appendix A, HotpotQA): 200 retrieved + 5 links per mention at hop 1, keep 30;
    50 expanded + 2 links per mention at hop 2; ``k`` results returned. ``k_hop2_rerank`` (not in the paper; None =
    all) caps the hop-2 reranking: only the best that many (hop-1, hop-2) candidates by the path score without the
    hop-2 rerank term (hop1 + 1.5 * hop1_rerank + hop2) are reranked and become paths; ``hop2_selection`` names
    how those are picked (:mod:`hop2_budget`: "path" as just said, "per-hop1" round robin over the kept hop-1
    passages, "mixed" half of each); ``selection_weights`` = (a, b) makes that score hop1 + a * hop1_rerank + b *
    hop2 (None: the path score's own, the chain's ``rerank_weight`` and 1)."""

    k_retrieval: int = 200
    k_link: int = 5
    k_hop1: int = 30
    k_expanded: int = 50
    k_hop2_link: int = 2
    k: int = 100
    k_hop2_rerank: int | None = None
    hop2_selection: str = DEFAULT_HOP2_SELECTION
    selection_weights: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.hop2_selection not in HOP2_SELECTIONS:
            raise ConfigError(f"cos_chain: unknown hop2_selection '{self.hop2_selection}' "
                              f"(use one of {', '.join(HOP2_SELECTIONS)})")


def merged_hits(scored: Sequence[Sequence[Hit]], alpha: float) -> list[Hit]:
    """Retrieval-like hits (first list) merged with link hits (second list): aligned, promoted, best first."""
    found, links = scored
    link_by_id = {h.id: h for h in links}
    by_id = {**link_by_id, **{h.id: h for h in found}}
    retrieved = {h.id: h.score for h in found}
    aligned = aligned_links(retrieved, {h.id: h.score for h in links})
    scores = merge_skill_scores(retrieved, aligned, alpha)
    out = []
    for hit_id, score in scores.items():
        hit = by_id[hit_id]
        link = link_by_id.get(hit_id)
        # the aligned score, as the "link" extra is declared and merged (before: the raw one)
        extras: dict = {"link": aligned[hit_id]} if link is not None else {}
        if link is not None and "mention" in link.extras:
            extras["mention"] = link.extras["mention"]
        out.append(hit.with_score(score, merged=score, **extras))
    return rank_hits(out)


def fuse_paths(chain: Sequence[Hit], two_round: Sequence[Hit], k: int = FUSION_RRF_K,
               chain_weight: float = FUSION_CHAIN_WEIGHT) -> list[Hit]:
    """Two path rankings fused by reciprocal rank (``chain_weight`` / (k + rank) + 1 / (k + rank)), a path being its
    unordered pair of ids (the first list's hit kept where both have it), best first; ties keep the chain's order."""
    by_pair: dict[frozenset[str], Hit] = {}
    rankings: list[list[Hit]] = []
    parts: list[dict[str, float]] = []  # each list's score of a path, by the kept hit's id
    for paths in (chain, two_round):
        ranking, scores_of = [], {}
        for hit in paths:
            kept = by_pair.setdefault(frozenset(hit.id.split(PATH_SEPARATOR)), hit)
            if kept.id not in scores_of:
                scores_of[kept.id] = hit.score
                ranking.append(kept)
        rankings.append(ranking)
        parts.append(scores_of)
    scores = reciprocal_rank_fusion(rankings, [chain_weight, 1.0], k)  # keyed in first-seen order: the chain's first
    hits = {h.id: h for h in by_pair.values()}
    return [hits[i].with_score(scores[i], components={"chain": parts[0].get(i), "retrieval-2hop": parts[1].get(i)})
            for i in sorted(scores, key=lambda i: -scores[i])]  # a stable sort: ties keep that order


#: skills a chain can run without, one at a time, to measure what each adds (the skill ablation): entity linking
#: (at both hops), expanded-query retrieval (hop 2 then comes from links alone; no fused two-round list either), the
#: hop-2 reranking (paths then scored without the hop-2 rerank term) and the fusion with two rounds of retrieval
ABLATIONS = ("linking", "expanded", "hop2-rerank", "fusion")


class CosChain(Stage):
    """One of :data:`CHAINS` over the four skill stages (which share one model); ``ablate`` names skills of
    :data:`ABLATIONS` the chain runs without; ``fusion`` = (RRF k, chain weight) of the hotpotqa chain's fusion with
    two rounds of retrieval (:func:`fuse_paths`), None for the paper's order; ``hop2_ensemble``: rerankers of other
    models whose hop-2 scores are averaged with ``rerank``'s (hop 1 and the budget's selection stay ``rerank``'s)."""

    hits_bound, config_stage = "k", "cos_chain"

    def __init__(self, chain: str, retrieve: SingleRetrieve, link: EntityLink, rerank: Rerank | None = None,
                 expanded: ExpandedRetrieve | None = None, limits: ChainLimits = ChainLimits(),
                 alpha: float = PROMOTION_ALPHA, rerank_weight: float = HOP1_RERANK_WEIGHT,
                 beta: float = NQ_RERANK_BETA, name: str | None = None, ablate: Sequence[str] = (),
                 fusion: tuple[int, float] | None = (FUSION_RRF_K, FUSION_CHAIN_WEIGHT),
                 hop2_ensemble: Sequence[Rerank] = ()):
        unknown = [skill for skill in ablate if skill not in ABLATIONS]
        if unknown:
            raise ConfigError(f"cos_chain: cannot ablate '{unknown[0]}' (use one of {', '.join(ABLATIONS)})")
        self.ablate = frozenset(ablate)
        if chain not in CHAINS:
            raise ConfigError(f"cos_chain: unknown chain '{chain}' for key 'chain' (use one of {', '.join(CHAINS)})")
        if chain not in NO_RERANK and rerank is None:
            raise ConfigError(f"cos_chain: the '{chain}' chain needs a reranker")
        if chain in EXPANDING and expanded is None:
            raise ConfigError(f"cos_chain: the '{chain}' chain needs expanded retrieval")
        self.chain, self.retrieve, self.link, self.rerank, self.expanded = chain, retrieve, link, rerank, expanded
        self.limits, self.alpha, self.rerank_weight, self.beta = limits, alpha, rerank_weight, beta
        self.fusion = None if {"fusion", "expanded"} & self.ablate else fusion
        if hop2_ensemble and chain != "hotpotqa":  # loaded for nothing and ignored otherwise
            raise ConfigError(f"cos_chain: hop2_ensemble reranks the hotpotqa chain's hop 2; the '{chain}' chain has none")
        self.hop2_ensemble = tuple(hop2_ensemble)
        self.name = name or f"cos-{chain}"

    def hits_limit(self) -> int:
        """The chain's ``k`` (its limits' last)."""
        return self.limits.k

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is not None:
            raise ConfigError(f"{self.name}: a chain is a first stage; it takes no candidates")
        texts = [q.text for q in queries]
        if self.chain == "retrieval-2hop":
            found = self.retrieve.retrieve(texts, self.limits.k_hop1)
            return Run({q.id: self.retrieval_paths(q, hop1)[:self.limits.k] for q, hop1 in zip(queries, found)})
        run = Run()
        for query, (retrieved, hop1) in zip(queries, self.first_hop(texts)):
            check_cancelled()  # a search given up stops between queries (and hops: model batches check too)
            if self.chain == "retrieval":
                run[query.id] = hop1[:self.limits.k]
            elif self.chain == "nq":
                run[query.id] = self.nq(query, hop1)[:self.limits.k]
            elif self.fusion is None:
                run[query.id] = self.paths(query, hop1)[:self.limits.k]
            else:  # two rounds of retrieval over the same hop-1 search (its top k_hop1), whose expanded queries
                # the hop-1 reranking pass has already encoded (every retrieved passage is a hop-1 candidate)
                vectors: dict[str, np.ndarray] = {}
                paths = self.paths(query, hop1, vectors)
                two_round = self.retrieval_paths(query, retrieved[:self.limits.k_hop1], vectors)
                run[query.id] = fuse_paths(paths, two_round, *self.fusion)[:self.limits.k]
        return run

    def first_hop(self, texts: Sequence[str]) -> list[tuple[list[Hit], list[Hit]]]:
        """Per question: its top ``k_retrieval`` retrieved passages, and hop 1 = those merged with the top
        ``k_link`` linked passages per question mention (aligned, promoted; no links where linking is ablated)."""
        found = self.retrieve.retrieve(texts, self.limits.k_retrieval)
        linked = ([[] for _ in texts] if "linking" in self.ablate else self.link.link(texts, self.limits.k_link))
        return [(retrieved, merged_hits([retrieved, links], self.alpha)) for retrieved, links in zip(found, linked)]

    def retrieval_paths(self, query: Query, hop1: list[Hit],
                        vectors: Mapping[str, np.ndarray] | None = None) -> list[Hit]:
        """Two rounds of retrieval only: path score = hop-1 retrieval score + hop-2 expanded-retrieval score;
        ``vectors``: expanded-query vectors by hop-1 passage id, already encoded (the rest are encoded here)."""
        assert self.expanded is not None
        hop1 = [h.with_score(h.score, merged=h.score) for h in hop1]
        if vectors and hop1 and all(h.id in vectors for h in hop1):
            expanded = self.expanded.from_vectors(hop1, np.stack([vectors[h.id] for h in hop1]),
                                                  self.limits.k_expanded)
        else:
            expanded = self.expanded.retrieve(query.text, hop1, self.limits.k_expanded)
        scored, pairs = [], {}
        for first, found in zip(hop1, expanded):
            for second in found:
                second = second.with_score(second.score, merged=second.score)
                pairs[(first.id, second.id)] = (first, second)
                scored.append((first.id, first.title or first.id, second.id, second.title or second.id,
                               first.score + second.score))
        return self.path_hits(scored, pairs)

    def path_hits(self, scored: list[tuple[str, str, str, str, float]],
                  pairs: dict[tuple[str, str], tuple[Hit, Hit]]) -> list[Hit]:
        """Distinct paths (``distinct_paths``) as hits "id1||id2" with ``extras["path"]``."""
        out = []
        for id1, _, id2, _, score in distinct_paths(scored):
            first, second = pairs[(id1, id2)]
            out.append(Hit(f"{id1}{PATH_SEPARATOR}{id2}", score, None, f"{first.title} / {second.title}", None,
                           {"path": [first, second]}))
        return out

    def reranked(self, firsts: Sequence[str], hits: Sequence[Hit]) -> list[Hit]:
        assert self.rerank is not None
        values = self.rerank.scores(firsts, hits)
        return [h.with_score(h.score, rerank=v) for h, v in zip(hits, values)]

    def nq(self, query: Query, hop1: list[Hit]) -> list[Hit]:
        hits = self.reranked([query.text] * len(hop1), hop1)
        out = [h.with_score(nq_score(h.extras["rerank"], h.extras["merged"], self.beta)) for h in hits]
        return rank_hits(out)

    def paths(self, query: Query, hop1: list[Hit], vectors_out: dict[str, np.ndarray] | None = None) -> list[Hit]:
        """The hotpotqa chain's own paths (the paper's order); ``vectors_out`` receives the hop-1 candidates'
        expanded-query vectors by id where the reranking pass gives them (``Rerank.expanded_vectors_reusable``)."""
        candidates = self.rerank_budget(self.hop2_candidates(query, hop1, vectors_out))
        return self.scored_paths(candidates, self.hop2_rerank_values(query, candidates))

    def hop2_candidates(self, query: Query, hop1: list[Hit],
                        vectors_out: dict[str, np.ndarray] | None = None) -> list[tuple[Hit, Hit]]:
        """Every (hop-1, hop-2) candidate before the reranking budget: hop 1 reranked and cut to ``k_hop1``, hop 2
        = expanded retrieval + links per kept passage (aligned, promoted), in hop-1 order."""
        assert self.expanded is not None and self.rerank is not None
        hop1_values, vectors = self.rerank.score_pairs([(query.text, passage_text(h)) for h in hop1])
        reusable = self.rerank.expanded_vectors_reusable(self.expanded)
        if vectors_out is not None and reusable:
            vectors_out.update((h.id, vectors[i]) for i, h in enumerate(hop1))
        hits = [h.with_score(hop1_score(float(v), h.extras["merged"], self.rerank_weight), rerank=float(v))
                for h, v in zip(hop1, hop1_values)]
        order = sorted(range(len(hits)), key=lambda i: (-hits[i].score, hits[i].id))[:self.limits.k_hop1]
        kept = [hits[i].with_score(hits[i].score, hop1_rank=rank) for rank, i in enumerate(order)]
        if "expanded" in self.ablate:
            expanded: list[list[Hit]] = [[] for _ in kept]
        elif reusable:  # the hop-1 rerank already read (question, passage) through the expanded-query expert
            expanded = self.expanded.from_vectors(kept, vectors[order], self.limits.k_expanded)
        else:
            expanded = self.expanded.retrieve(query.text, kept, self.limits.k_expanded)
        linked = ([[] for _ in kept] if "linking" in self.ablate else
                  self.link.link([h.text or "" for h in kept], self.limits.k_hop2_link, exclude=[h.id for h in kept]))
        check_cancelled()
        candidates: list[tuple[Hit, Hit]] = []
        for first, found, links in zip(kept, expanded, linked):
            candidates.extend((first, second) for second in merged_hits([found, links], self.alpha))
        return candidates

    def hop2_rerank_values(self, query: Query, candidates: Sequence[tuple[Hit, Hit]]) -> list[float]:
        """The hop-2 rerank score of each candidate over "question [SEP] hop-1 passage" (0 where ablated; the mean
        over ``rerank`` and ``hop2_ensemble``)."""
        assert self.rerank is not None, "a chain with an expanded hop reranks (CHAINS)"
        if "hop2-rerank" in self.ablate or not candidates:
            return [0.0] * len(candidates)
        firsts = [f"{query.text} [SEP] {passage_text(first)}" for first, _ in candidates]
        seconds = [second for _, second in candidates]
        values = np.mean([reranker.scores(firsts, seconds) for reranker in (self.rerank, *self.hop2_ensemble)], axis=0)
        return [float(v) for v in values]

    def scored_paths(self, candidates: Sequence[tuple[Hit, Hit]], values: Sequence[float]) -> list[Hit]:
        """Candidates with their hop-2 rerank values as distinct paths scored by ``path_score``, best first."""
        scored, pairs = [], {}
        for (first, second), value in zip(candidates, values):
            second = second.with_score(second.score, rerank=value)
            score = path_score(first.extras["merged"], first.extras["rerank"], second.extras["merged"], value,
                               self.rerank_weight)
            pairs[(first.id, second.id)] = (first, second)
            scored.append((first.id, first.title or first.id, second.id, second.title or second.id, score))
        return self.path_hits(scored, pairs)

    def rerank_budget(self, candidates: list[tuple[Hit, Hit]]) -> list[tuple[Hit, Hit]]:
        """The hop-2 candidates to rerank: all, or ``k_hop2_rerank`` of them picked by ``hop2_selection``
        (:func:`hop2_budget.select_hop2`), in their order."""
        partial, groups = self.budget_inputs(candidates)
        chosen = select_hop2(partial, groups, self.limits.k_hop2_rerank, self.limits.hop2_selection)
        return [candidates[i] for i in chosen]

    def budget_inputs(self, candidates: Sequence[tuple[Hit, Hit]]) -> tuple[list[float], list[int]]:
        """What the budget rules read: each candidate's selection score (:func:`hop2_budget.selection_scores`; by
        default its path score without the hop-2 rerank term), and its hop-1 passage's rank among the kept ones."""
        partial = selection_scores(self.selection_terms(candidates),
                                   self.limits.selection_weights or (self.rerank_weight, 1.0))
        return partial, self.hop1_ranks(candidates)

    @staticmethod
    def hop1_ranks(candidates: Sequence[tuple[Hit, Hit]]) -> list[int]:
        """Each candidate's hop-1 passage's rank among the kept ones (the budget rules' groups)."""
        return [first.extras["hop1_rank"] for first, _ in candidates]

    @staticmethod
    def selection_terms(candidates: Sequence[tuple[Hit, Hit]]) -> list[tuple[float, float, float]]:
        """Each candidate's (hop1, hop1_rerank, hop2) terms, which the selection score weighs."""
        return [(first.extras["merged"], first.extras["rerank"], second.extras["merged"]) for first, second in candidates]
