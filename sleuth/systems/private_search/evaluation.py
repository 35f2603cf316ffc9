"""Evaluation of private search (Faggioli & Ferro, ECIR 2024): obfuscation, pooled recall and nDCG@10 after local reranking.

- similarity of an obfuscated query = dot product of the normalised MiniLM embeddings of it and the original query;
  a query's similarity is the mean over its obfuscations; obfuscation = 1 - similarity;
- pooled recall = |relevant documents in the union of the top ``depth`` (100) of every obfuscated query| /
  |relevant documents|, averaged over queries;
- nDCG@10 of the pool reranked locally with the original query by a model other than the engine's.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from sleuth.corpus.model import Qrels, Query
from sleuth.eval.measures import evaluate, mean
from sleuth.models.encoder import Encoder
from sleuth.pipelines.workspace import Workspace
from sleuth.progress import track
from sleuth.stages.base import Stage
from sleuth.stages.run import Run
from sleuth.systems.private_search.client import PrivateSearch
from sleuth.systems.private_search.obfuscator import QueryObfuscator, Seed, make_rng, tokenize


class NoObfuscation(QueryObfuscator):
    """The reference without privacy: the original query itself is sent (once)."""

    name = "original"

    def obfuscate(self, queries: Sequence[str], n: int = 20, epsilon: float | None = None,
                  seed: Seed = None) -> list[list[str]]:
        return [[query] for query in queries]


def similarities(originals: Sequence[str], obfuscated: Sequence[Sequence[str]], encoder: Encoder) -> list[float]:
    """Per query, the mean similarity between the original and each of its obfuscated queries (texts encoded
    once each; a query without obfuscations scores 0)."""
    texts = list(dict.fromkeys([*originals, *(t for group in obfuscated for t in group)]))
    vectors = dict(zip(texts, encoder.encode(texts, side="query")))
    return [float(np.mean([vectors[o] @ vectors[t] for t in group])) if group else 0.0
            for o, group in zip(originals, obfuscated)]


def pooled_recall(pool: Run, qrels: Qrels) -> dict[str, float]:
    """Per judged query, the share of its relevant documents (relevance > 0) found in its pool."""
    recall = {}
    for qid, judged in qrels.items():
        relevant = {doc for doc, rel in judged.items() if rel > 0}
        if relevant:
            found = {h.id for h in pool.get(qid, [])}
            recall[qid] = len(relevant & found) / len(relevant)
    return recall


@dataclass
class SystemResult:
    """One obfuscation system (mechanism at an epsilon, or a baseline) on one collection."""

    system: str
    epsilon: float | None
    similarity: float
    pooled_recall: float
    ndcg10: float
    queries: int
    sent_per_query: float
    identical_fraction: float
    per_query: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)

    @property
    def obfuscation(self) -> float:
        return max(0.0, 1.0 - self.similarity)

    def to_dict(self, per_query: bool = False) -> dict:
        data = asdict(self)
        data["obfuscation"] = self.obfuscation
        if not per_query:
            data.pop("per_query")
        return data


def identical_share(originals: Sequence[str], obfuscated: Sequence[Sequence[str]]) -> float:
    """Share of obfuscated queries whose words equal the original query's words."""
    pairs = [(tokenize(o), tokenize(t)) for o, group in zip(originals, obfuscated) for t in group]
    return mean(float(a == b) for a, b in pairs)


def evaluate_system(label: str, obfuscator: QueryObfuscator, epsilon: float | None, queries: Sequence[Query],
                    qrels: Qrels, engine, reranker: Stage, encoder: Encoder, n: int = 20, depth: int = 100,
                    seed: Seed = None, show_progress: bool = False) -> SystemResult:
    """Obfuscate every query ``n`` times, pool the engine's top ``depth`` per obfuscated query (the queries done
    shown with ``show_progress``), rerank locally, and measure similarity, pooled recall and nDCG@10
    (paper-faithful: identical obfuscations are sent too)."""
    qrels = {q.id: qrels[q.id] for q in queries if q.id in qrels}  # measure over these queries only
    client = PrivateSearch(obfuscator, engine, reranker, n=n, epsilon=epsilon, depth=depth, seed=make_rng(seed),
                           withhold_original=False)
    obfuscated = client.obfuscations(queries)
    sims = similarities([q.text for q in queries], obfuscated, encoder)
    pools, sent = client.pools(queries, obfuscated, show_progress)
    reranked = client.rerank(list(queries), pools, sent)
    recall = pooled_recall(pools, qrels)
    ndcg = evaluate(reranked, qrels, ["nDCG@10"])["nDCG@10"]
    per_query = {q.id: {"similarity": s, "pooled_recall": recall.get(q.id, 0.0)} for q, s in zip(queries, sims)}
    return SystemResult(label, epsilon, mean(sims), mean(recall.values()), ndcg, len(queries),
                        mean(len(s) for s in sent.values()), identical_share([q.text for q in queries], obfuscated),
                        per_query)


def similarity_table(queries: Sequence[str], obfuscators: dict[str, QueryObfuscator], epsilons: Sequence[float],
                     encoder: Encoder, n: int = 20, seed: Seed = None,
                     show_progress: bool = True) -> dict[str, dict[float | None, float]]:
    """Table 1: ``{system: {epsilon: mean similarity}}`` (key None for systems without epsilon). With an integer
    ``seed`` each cell draws from its own generator (:func:`cell_rng`), so a cell's value is the same whatever other
    cells the table holds."""
    table: dict[str, dict[float | None, float]] = {}
    jobs = [(name, eps) for name, o in obfuscators.items() for eps in (epsilons if o.uses_epsilon else [None])]
    shared = make_rng(seed)  # checks the seed; drawn from by every cell where it is a Generator or None
    for name, eps in track(jobs, "privacy eval: table 1", unit="cells", enabled=show_progress):
        rng = cell_rng(int(seed), name, eps) if isinstance(seed, (int, np.integer)) else shared
        obfuscated = obfuscators[name].obfuscate(list(queries), n, eps, rng)
        table.setdefault(name, {})[eps] = mean(similarities(queries, obfuscated, encoder))
    return table


def cell_rng(seed: int, name: str, epsilon: float | None) -> np.random.Generator:
    """The generator of one Table 1 cell: seeded by the experiment's seed, the system's name and the epsilon
    (before: one generator for the whole grid, so a cell's value depended on the cells computed before it)."""
    key = zlib.crc32(f"{name}@{epsilon!r}".encode())
    return np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([seed, key])))


def orderings(table: dict[str, dict[float | None, float]], epsilons: Sequence[float]) -> dict[str, bool]:
    """Whether the paper's two orderings hold in a Table 1: similarity grows with epsilon for every mechanism;
    CMP > Mahalanobis > Vickrey-CMP > Vickrey-Mahalanobis at every epsilon (only for mechanisms present)."""
    checks = {}
    for name, row in table.items():
        values = [row[e] for e in epsilons if e in row]
        if len(values) > 1:
            checks[f"{name}: grows with epsilon"] = all(b >= a for a, b in zip(values, values[1:]))
    chain = [m for m in ("cmp", "mahalanobis", "vickrey-cmp", "vickrey-mahalanobis") if m in table]
    for eps in epsilons:
        found = [table[m].get(eps) for m in chain]
        values = [v for v in found if v is not None]
        if len(chain) > 1 and len(values) == len(found):
            checks[f"eps {eps:g}: {' > '.join(chain)}"] = all(a > b for a, b in zip(values, values[1:]))
    return checks


def matching_epsilon(row: dict[float | None, float], similarity: float) -> float | None:
    """The epsilon at which a mechanism's similarity curve (``{epsilon: similarity}``, increasing) reaches
    ``similarity``, by linear interpolation between measured epsilons; None outside the measured range."""
    points = sorted((e, v) for e, v in row.items() if e is not None)
    for (e1, v1), (e2, v2) in zip(points, points[1:]):
        if v1 <= similarity <= v2:
            return e1 if v2 == v1 else e1 + (similarity - v1) * (e2 - e1) / (v2 - v1)
    return None


def run_effectiveness(systems: Sequence[tuple[str, float | None]], obfuscators: dict[str, QueryObfuscator],
                      queries: Sequence[Query], qrels: Qrels, ws: Workspace, reranker: str, encoder: Encoder,
                      n: int = 20, depth: int = 100, seed: Seed = None) -> list[SystemResult]:
    """Each ``(name, epsilon)`` system (``original``: no obfuscation) through the private-search client: engine =
    BM25 over the workspace corpus (in process, standing in for the remote server), local reranking = dense
    rescoring of the whole pool with ``reranker`` vectors of the texts the engine returned (encoded as they come,
    each once: before, the whole corpus was encoded into a dense index first, 11,413 Vaswani documents for a
    5-query check)."""
    from sleuth.pipelines.index_stage import bm25_retrieve
    from sleuth.systems.private_search.remote import StageEngine
    from sleuth.systems.private_search.rescore import TextRescore

    engine = StageEngine(bm25_retrieve(ws, depth), name="bm25")
    local = TextRescore(ws.encoder(reranker), name=f"rerank-{reranker}")
    results = []
    for name, eps in track(systems, "privacy eval: systems", unit="systems", enabled=ws.show_progress):
        obfuscator = NoObfuscation() if name == "original" else obfuscators[name]
        results.append(evaluate_system(name, obfuscator, eps, queries, qrels, engine, local, encoder, n=n,
                                       depth=depth, seed=seed, show_progress=ws.show_progress))
    return results
