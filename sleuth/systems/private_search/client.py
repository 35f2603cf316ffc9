"""The private-search client (Faggioli & Ferro's setting): the original query never leaves the user's machine.

For each query: obfuscate it ``n`` times, send only the obfuscated queries to the (untrusted) engine, pool the top
``depth`` hits of every response, and rerank the pool locally with the ORIGINAL query using a local model that
differs from the engine's (e.g. engine BM25, local MiniLM). Hits carry the obfuscated queries that were sent
(``extras["obfuscated_queries"]``), how many of them retrieved the hit (``extras["found_by"]``), what the engine saw
of the query (``extras["privacy"]``: :class:`~sleuth.systems.private_search.exposure.Exposure` as JSON) and how the
queries were made (``extras["obfuscation"]``: :meth:`PrivateSearch.described`), as ``sleuth privacy search --json``
reports them; the service answers the last three once per query.

Safety rule (``withhold_original=True``, the default): an obfuscated query whose words equal the original query's
words is not sent (at a large epsilon a mechanism may return the query unchanged). This conditions on the original
query, so experiments that reproduce the paper's measures turn it off.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sleuth.corpus.model import Query
from sleuth.stages.base import Stage
from sleuth.stages.run import Hit, Run
from sleuth.systems.private_search.exposure import Exposure
from sleuth.systems.private_search.obfuscator import (
    QueryObfuscator,
    Seed,
    check_count,
    make_rng,
    text_rng,
    tokenize,
)
from sleuth.systems.private_search.remote import SearchEngine

DEFAULT_N = 20
POOL_DEPTH = 100


def queries_to_send(original: str, obfuscated: Sequence[str], withhold_original: bool = True) -> list[str]:
    """The distinct non-empty obfuscated queries, in order; without those equal to the original when withheld."""
    words = tokenize(original)
    sent: dict[str, None] = {}
    for text in obfuscated:
        if not text.strip() or (withhold_original and tokenize(text) == words):
            continue
        sent.setdefault(text, None)
    return list(sent)


def pool_hits(responses: Sequence[Sequence[Hit]], depth: int = POOL_DEPTH) -> list[Hit]:
    """The union of the top ``depth`` hits of every response (first occurrence kept), with ``found_by`` counts."""
    pooled: dict[str, Hit] = {}
    for hits in responses:
        for hit in hits[:depth]:
            if hit.id in pooled:
                pooled[hit.id].extras["found_by"] += 1
            else:
                pooled[hit.id] = Hit(hit.id, hit.score, hit.doc_id, hit.title, hit.text, {"found_by": 1})
    return list(pooled.values())


class PrivateSearch(Stage):
    """Obfuscate, query the engine with obfuscated queries only, pool, rerank locally with the original query."""

    progress_every = 1  # each query sends n obfuscations: an evaluation's bar moves per query

    def __init__(self, obfuscator: QueryObfuscator, engine: SearchEngine, reranker: Stage, n: int = DEFAULT_N,
                 epsilon: float | None = None, depth: int = POOL_DEPTH, seed: Seed = None,
                 withhold_original: bool = True, name: str = "private"):
        self.obfuscator, self.engine, self.reranker = obfuscator, engine, reranker
        self.n, self.epsilon, self.depth = check_count(n), epsilon, check_count(depth, maximum=None)
        self.seed, self.withhold_original, self.name = seed, withhold_original, name

    def obfuscations(self, queries: Sequence[Query]) -> list[list[str]]:
        """``n`` obfuscated queries per query (nothing is sent yet). Under an integer seed each query draws from its
        own generator (:func:`text_rng`), so its obfuscations are the same whatever queries share the call (before:
        one stream a call, so an evaluation counted in chunks, or a batch, gave a query other obfuscations than it
        got alone, and `sleuth eval --quiet` other figures); a Generator seed (or none) is one stream."""
        if isinstance(self.seed, (int, np.integer)) and not isinstance(self.seed, bool):
            texts = [q.text for q in queries]
            return self.obfuscator.obfuscate_each(texts, self.n, self.epsilon,
                                                  [text_rng(int(self.seed), text) for text in texts])
        return self.obfuscator.obfuscate([q.text for q in queries], self.n, self.epsilon, make_rng(self.seed))

    def pools(self, queries: Sequence[Query], obfuscated: Sequence[Sequence[str]],
              show_progress: bool = False) -> tuple[Run, dict[str, list[str]]]:
        """Send the obfuscated queries; the pooled candidates of each query and the queries sent for it (the
        queries done shown by :mod:`sleuth.progress` with ``show_progress``)."""
        from sleuth.progress import track

        pools, sent = Run(), {}
        for query, candidates in track(list(zip(queries, obfuscated)), f"{self.name}: sending obfuscated queries",
                                       unit="queries", enabled=show_progress):
            sent[query.id] = queries_to_send(query.text, candidates, self.withhold_original)
            pools[query.id] = pool_hits(self.engine.search_many(sent[query.id], self.depth), self.depth)
        return pools, sent

    def described(self, sent: Sequence[str]) -> dict:
        """How the queries ``sent`` for one query were made: the obfuscator's parameters, its mechanism and epsilon
        (None where it takes none), n, seed, depth, and how many were sent and withheld (own words, or repeated)."""
        epsilon = self.epsilon if self.obfuscator.uses_epsilon else None
        seed = self.seed if isinstance(self.seed, int) else None
        return {**self.obfuscator.describe(), "mechanism": self.obfuscator.name, "epsilon": epsilon, "n": self.n,
                "seed": seed, "depth": self.depth, "sent": len(sent), "withheld": self.n - len(sent)}

    def rerank(self, queries: Sequence[Query], pools: Run, sent: dict[str, list[str]]) -> Run:
        """The pools reranked locally with the original queries; hits carry what was sent and what it exposed."""
        reranked = self.reranker.transform(queries, pools)
        found_by = {qid: {h.id: h.extras["found_by"] for h in hits} for qid, hits in pools.items()}
        seen = {q.id: {"privacy": Exposure.of(q.text, sent[q.id]).to_dict(), "obfuscation": self.described(sent[q.id])}
                for q in queries if q.id in sent}
        return Run({qid: [h.with_score(h.score, obfuscated_queries=sent[qid], found_by=found_by[qid].get(h.id, 0),
                                       **seen[qid]) for h in hits] for qid, hits in reranked.items()})

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        pools, sent = self.pools(queries, self.obfuscations(queries))
        return self.rerank(queries, pools, sent)
