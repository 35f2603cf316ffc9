"""Dense Hierarchical Retrieval (Liu et al., EMNLP Findings 2021) as stages over a :class:`HierarchicalIndex`.

- :class:`DocumentRetrieve`: stage 1, the top-k1 documents (dense over document representations; BM25 as an option).
- :class:`PassageInDocuments`: stage 2, the passages of the candidate documents scored with one matrix product;
  final score = passage score + lambda * document score (Eq. 3), top k2. ``lam=0`` is "DHR w/o rerank".
- :class:`ParallelDHR`: the paper's parallel variant: every passage and every document is scored exactly and the two
  scores are added (no passage is left out, so no stand-in score is needed for passages of unretrieved documents).
- :class:`PassageRetrieve`: DHR-P alone, exhaustive passage search with hierarchical passage titles.

``DocumentRetrieve(index, k=100) >> PassageInDocuments(index, lam=1.0, k=100)`` is the serial DHR of the paper; with
k1 covering every document it ranks exactly as :class:`ParallelDHR`.

``length_prior`` (beta, both modes) adds ``beta * log(passages of the document)`` to every passage's final score: a
document-length prior, not a relevance score (sleuth's measured addition for corpora mixing long and short documents;
see the system README). ``length_prior_below`` gates it per query: the prior is added only for a query whose best
passage score is below that value (a query that one passage already matches well keeps its passage ranking). Hits
then carry the prior added to them in ``document_prior`` (0 where the gate left it out).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Index
from sleuth.models.encoder import Encoder
from sleuth.models.registry import encoder_from_spec
from sleuth.stages.base import Stage
from sleuth.stages.run import Hit, Run
from sleuth.systems.dhr.index import (
    COMBINATIONS,
    DOCUMENT_SCORES,
    HierarchicalIndex,
    combine_scores,
    prior_applies,
    top_k,
)

DEFAULT_K1 = 100  # documents passed to stage 2 (the paper's best k1 on NQ)
DEFAULT_LAMBDA = 1.0  # weight of the document score in Eq. 3 (the recipe's value; the paper finds 0.5..1 robust)
MODES = ("serial", "parallel")


def check_choice(value: str, known: tuple[str, ...], what: str) -> str:
    """``value`` when it is one of ``known``, else a ConfigError naming them."""
    if value not in known:
        raise ConfigError(f"dhr: unknown {what} '{value}' (known: {', '.join(known)})")
    return value


def check_encoder(encoder: Encoder, dim: int, what: str) -> Encoder:
    """The encoder itself when its vectors have the index's dimension, else a ConfigError."""
    if encoder.dim != dim:
        raise ConfigError(f"dhr: {what} encoder '{encoder.name}' gives {encoder.dim}-d vectors, the index holds "
                          f"{dim}-d {what} vectors")
    return encoder


def require_whole(index: Any, name: str) -> HierarchicalIndex:
    """``index`` when it is one hierarchical index; a sharded one serves the parallel mode and dhr_p only."""
    if not isinstance(index, HierarchicalIndex):
        raise ConfigError(f"{name}: a sharded hierarchical index serves mode parallel and dhr_p; the serial mode, "
                          "document stages and BM25 documents need the unsharded index")
    return index


def resolve_document_encoder(index: HierarchicalIndex, encoder: Encoder | None, device: str) -> Encoder:
    """The given document encoder (checked against the index), or the one the index was built with."""
    encoder = encoder or encoder_from_spec(index.document_encoder_spec, device=device)
    return check_encoder(encoder, index.document_dim, "document")


def resolve_passage_encoder(index: HierarchicalIndex, encoder: Encoder | None, device: str) -> Encoder:
    """The given passage encoder (checked against the index), or the one the index was built with."""
    encoder = encoder or encoder_from_spec(index.passage_encoder_spec, device=device)
    return check_encoder(encoder, index.passage_dim, "passage")


def check_weight(value: float, field: str, name: str) -> float:
    """A weight (``lam``, ``length_prior``) as a float when it is a finite number >= 0, else a ConfigError naming
    the stage and the field."""
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise ConfigError(f"{name}: {field} must be a number >= 0, got {value}")
    return value


def check_prior_gate(below: float | None, name: str) -> float | None:
    """``below`` as a float when it is a finite number (or None: no gate), else a ConfigError naming the stage."""
    if below is None:
        return None
    below = float(below)
    if not np.isfinite(below):
        raise ConfigError(f"{name}: length_prior_below must be a finite number (or left out), got {below}")
    return below


def document_priors(index: HierarchicalIndex, beta: float) -> np.ndarray | None:
    """The index's per-document length prior for ``beta`` (None when ``beta`` is 0: no prior)."""
    return index.length_prior(beta) if beta else None


def passage_hit(index: HierarchicalIndex, row: int, score: float, **extras) -> Hit:
    """A Hit for a passage row, carrying its document id and hierarchical title."""
    store = index.passages
    return Hit(store.ids[row], float(score), store.doc_ids[row], store.titles[row], store.texts[row], dict(extras))


class DocumentRetrieve(Stage):
    """Stage 1: the top-``k`` documents of each query (hits: id = doc_id = document id, text = representation).

    Dense by default (the index's FAISS document index, exact inner product unless built with HNSW/IVF); with
    ``bm25`` (a BM25Index built over the same documents' representations) documents are ranked by BM25 instead.
    """

    hits_bound, config_stage = "k", "dhr_documents"

    def __init__(self, index: HierarchicalIndex, encoder: Encoder | None = None, k: int = DEFAULT_K1,
                 name: str = "dhr_documents", device: str = "cpu", bm25: BM25Index | None = None,
                 document: str = "summary"):
        if k < 1:
            raise ConfigError(f"{name}: k must be at least 1, got {k}")
        check_choice(document, DOCUMENT_SCORES, "document score")
        require_whole(index, name)
        if document != "summary" and bm25 is not None:
            raise ConfigError(f"{name}: {document} documents are dense; BM25 documents need document: summary")
        self.index, self.k, self.name, self.bm25, self.document = index, k, name, bm25, document
        self.encoder: Encoder | None
        if bm25 is not None:
            self.encoder = None
        elif document != "summary":
            self.encoder = resolve_passage_encoder(index, encoder, device)
        else:
            self.encoder = resolve_document_encoder(index, encoder, device)

    def _encode(self, queries: Sequence[Query]) -> np.ndarray:
        """The query vectors (a dense stage always has an encoder; only a BM25 stage has none)."""
        if self.encoder is None:
            raise ConfigError(f"{self.name}: BM25 document retrieval has no query encoder")
        return self.encoder.encode_queries([q.text for q in queries])

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is not None:
            raise ConfigError(f"{self.name} retrieves documents itself: put it first in the pipeline")
        rows: Sequence[Sequence[int | None]] | Sequence[np.ndarray] | np.ndarray
        scores: Sequence[Sequence[float]] | Sequence[np.ndarray] | np.ndarray
        if self.bm25 is not None:
            bm25_rows, bm25_scores = self.bm25.search([q.text for q in queries], k=self.k)
            rows = [[self.index.documents.position(self.bm25.docstore.ids[r]) for r, s in zip(rr, ss) if s > 0]
                    for rr, ss in zip(bm25_rows, bm25_scores)]
            scores = [[s for s in ss if s > 0] for ss in bm25_scores]
        elif self.document != "summary":  # exact centroid or best-passage scores (the passage encoder's space)
            all_scores = self.index.document_scores(self._encode(queries), self.document)
            rows = [top_k(row, self.k) for row in all_scores]
            scores = [row[r] for row, r in zip(all_scores, rows)]
        else:
            rows, scores = self.index.search_documents(self._encode(queries), self.k)
        run = Run()
        for query, query_rows, query_scores in zip(queries, rows, scores):
            hits = []
            for rank, (row, score) in enumerate(zip(np.asarray(query_rows).tolist(), np.asarray(query_scores).tolist()),
                                                start=1):
                if row is None or row < 0:
                    continue
                store = self.index.documents
                hits.append(Hit(store.ids[row], float(score), store.ids[row], store.titles[row], store.texts[row],
                                {"document_row": row, "document_rank": rank}))
            run[query.id] = hits
        return run


class PassageInDocuments(Stage):
    """Stage 2: score the passages of each query's candidate documents and rank them by Eq. 3.

    Candidates are document hits (their id, or else doc_id, names a document of the index; their score is the
    document score). Each query's passages are gathered by the index's offsets and scored with one matrix product.
    Final hits carry ``passage_score``, ``document_score`` and ``document_rank`` in extras. The length prior's gate
    (``length_prior_below``) reads the query's best score among these passages.
    """

    hits_bound, config_stage = "k", "dhr_passages"

    def __init__(self, index: HierarchicalIndex, encoder: Encoder | None = None, lam: float = DEFAULT_LAMBDA,
                 k: int = 100, name: str = "dhr_passages", device: str = "cpu", combine: str = "add",
                 length_prior: float = 0.0, length_prior_below: float | None = None):
        if k < 1:
            raise ConfigError(f"{name}: k must be at least 1, got {k}")
        self.index, self.lam, self.k, self.name = require_whole(index, name), check_weight(lam, "lam", name), k, name
        self.length_prior = check_weight(length_prior, "length_prior", name)
        self.length_prior_below = check_prior_gate(length_prior_below, name)
        self.combine = check_choice(combine, COMBINATIONS, "score combination")
        self.encoder = resolve_passage_encoder(index, encoder, device)

    def document_rows(self, hits: Sequence[Hit]) -> tuple[np.ndarray, np.ndarray]:
        """Rows and scores of the candidate documents this index holds (unknown ones are left out)."""
        rows, scores = [], []
        for hit in hits:
            row = self.index.documents.position(hit.id)
            if row is None and hit.doc_id is not None:
                row = self.index.documents.position(hit.doc_id)
            if row is not None:
                rows.append(row)
                scores.append(hit.score)
        return np.asarray(rows, dtype=np.int64), np.asarray(scores, dtype=np.float32)

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is None:
            raise ConfigError(f"{self.name} needs candidate documents: put a document stage before it "
                              "(dhr_documents, or use the dhr stage)")
        vectors = self.encoder.encode_queries([q.text for q in queries])
        prior = document_priors(self.index, self.length_prior)
        run = Run()
        for query, vector in zip(queries, vectors):
            doc_rows, doc_scores = self.document_rows(candidates.get(query.id, []))
            ranked = rank_passages_in_documents(self.index, vector, doc_rows, doc_scores, self.lam, self.k,
                                                self.combine, prior, self.length_prior_below)
            run[query.id] = [passage_hit(self.index, row, final, passage_score=p, document_score=d, document_rank=r,
                                         **({} if prior is None else {"document_prior": added}))
                             for row, final, p, d, r, added in zip(*(a.tolist() for a in ranked))]
        return run


def rank_passages_in_documents(index: HierarchicalIndex, query_vector: np.ndarray, document_rows: np.ndarray,
                               document_scores: np.ndarray, lam: float, k: int,
                               combine: str = "add", document_prior: np.ndarray | None = None,
                               prior_below: float | None = None) -> tuple[np.ndarray, ...]:
    """Stage 2 for one query: gather the passages of the given documents, score them with one matrix product,
    combine (Eq. 3, or the gate: :func:`combine_scores`), add ``document_prior`` (one value per document of the index,
    e.g. :meth:`HierarchicalIndex.length_prior`) when given (with ``prior_below``: only when the best of these passage
    scores is below it, :func:`prior_applies`) and keep the top ``k``. Returns passage rows, final scores, passage
    scores, document scores, 1-based document ranks (the documents' order as given) and the prior added to each
    passage (0 without one), best first."""
    counts = index.offsets[document_rows + 1] - index.offsets[document_rows]
    rows = index.passage_rows(document_rows)
    passage_scores = index.score_passages(query_vector, rows)
    per_passage = np.repeat(np.asarray(document_scores, dtype=np.float32), counts)
    final = combine_scores(passage_scores, per_passage, lam, combine)
    added = np.zeros_like(final)
    if document_prior is not None and passage_scores.size and prior_applies(passage_scores.max(), prior_below):
        added = np.repeat(document_prior[document_rows], counts)
    final = final + added
    best = top_k(final, k)
    ranks = np.repeat(np.arange(1, len(document_rows) + 1), counts)
    return rows[best], final[best], passage_scores[best], per_passage[best], ranks[best], added[best]


@dataclass(frozen=True)
class ParallelParams:
    """What a parallel DHR ranking takes besides the query vectors (see :class:`ParallelDHR`)."""

    k: int
    lam: float = DEFAULT_LAMBDA
    document: str = "summary"
    combine: str = "add"
    length_prior: float = 0.0
    length_prior_below: float | None = None

    @property
    def gated(self) -> bool:
        """Whether the length prior is added per query by its best passage score (then that score is needed)."""
        return bool(self.length_prior) and self.length_prior_below is not None


@dataclass
class ParallelRanking:
    """A parallel DHR ranking, arrays of queries x hits: passage rows, final scores, passage scores, document scores
    and the prior added (zeros without one)."""

    rows: np.ndarray
    scores: np.ndarray
    passage_scores: np.ndarray
    document_scores: np.ndarray
    priors: np.ndarray


def parallel_document_scores(index: HierarchicalIndex, document_query_vectors: np.ndarray,
                             passage_query_vectors: np.ndarray,
                             params: ParallelParams) -> tuple[np.ndarray, np.ndarray | None]:
    """Every document's score for every query, and each query's best passage score when the prior's gate needs it
    (else None): the best "max" document score, or one more scan of the passages."""
    document_scores = index.document_scores(document_query_vectors, params.document)
    if not params.gated:
        return document_scores, None
    best = document_scores if params.document == "max" else index.max_passage_scores(passage_query_vectors)
    return document_scores, best.max(axis=1)


def rank_parallel(index: HierarchicalIndex, document_scores: np.ndarray, passage_query_vectors: np.ndarray,
                  params: ParallelParams, applies: np.ndarray | None) -> ParallelRanking:
    """Every passage scored and combined with its document's score (Eq. 3 or the gate), the length prior added for
    the queries ``applies`` marks (every query when None), top ``k``."""
    prior = document_priors(index, params.length_prior)
    priors = None
    if prior is not None:
        priors = (np.broadcast_to(prior, document_scores.shape) if applies is None
                  else applies.astype(np.float32)[:, None] * prior[None, :])
    rows, scores = index.scan_passages(passage_query_vectors, params.k, document_weight=params.lam,
                                       document_scores=document_scores, combine=params.combine,
                                       document_prior=priors)
    owners = index.passage_document[rows]
    own = [index.score_passages(vector, query_rows) for vector, query_rows in zip(passage_query_vectors, rows)]
    return ParallelRanking(rows, scores, np.array(own, dtype=np.float32).reshape(rows.shape),
                           np.take_along_axis(document_scores, owners, axis=1),
                           np.zeros_like(scores) if priors is None else np.take_along_axis(priors, owners, axis=1))


def parallel_ranking(index: Any, document_query_vectors: np.ndarray, passage_query_vectors: np.ndarray,
                     params: ParallelParams) -> ParallelRanking:
    """The parallel DHR ranking over a hierarchical index, or over a sharded one (its ``parallel_search``: every
    shard ranks its own documents' passages, merged exactly)."""
    if not isinstance(index, HierarchicalIndex):
        return index.parallel_search(document_query_vectors, passage_query_vectors, params)
    document_scores, best = parallel_document_scores(index, document_query_vectors, passage_query_vectors, params)
    applies = None if best is None else prior_applies(best, params.length_prior_below)
    return rank_parallel(index, document_scores, passage_query_vectors, params, applies)


class ParallelDHR(Stage):
    """DHR's parallel variant: all passages and all documents scored exactly, added by Eq. 3, top ``k``. The length
    prior's gate (``length_prior_below``) reads the query's best passage score over the whole index. ``index``: a
    hierarchical index or a sharded one (in this process or on shard actors: :mod:`sleuth.systems.dhr.sharded`)."""

    hits_bound, config_stage = "k", "dhr"

    def __init__(self, index: HierarchicalIndex, document_encoder: Encoder | None = None,
                 passage_encoder: Encoder | None = None, lam: float = DEFAULT_LAMBDA, k: int = 100,
                 name: str = "dhr_parallel", device: str = "cpu", document: str = "summary", combine: str = "add",
                 length_prior: float = 0.0, length_prior_below: float | None = None):
        self.index, self.k, self.name = index, k, name
        self.params = ParallelParams(k, check_weight(lam, "lam", name),
                                     check_choice(document, DOCUMENT_SCORES, "document score"),
                                     check_choice(combine, COMBINATIONS, "score combination"),
                                     check_weight(length_prior, "length_prior", name),
                                     check_prior_gate(length_prior_below, name))
        self.passage_encoder = resolve_passage_encoder(index, passage_encoder, device)
        self.document_encoder = (self.passage_encoder if document != "summary"
                                 else resolve_document_encoder(index, document_encoder, device))

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        texts = [q.text for q in queries]
        document_vectors = self.document_encoder.encode_queries(texts)
        ranked = parallel_ranking(self.index, document_vectors, self.passage_encoder.encode_queries(texts),
                                  self.params)
        run = Run()
        for i, query in enumerate(queries):
            run[query.id] = [passage_hit(self.index, row, score, passage_score=p, document_score=d,
                                         **({"document_prior": added} if self.params.length_prior else {}))
                             for row, score, p, d, added in zip(ranked.rows[i].tolist(), ranked.scores[i].tolist(),
                                                                ranked.passage_scores[i].tolist(),
                                                                ranked.document_scores[i].tolist(),
                                                                ranked.priors[i].tolist())]
        return run


class PassageRetrieve(Stage):
    """DHR-P alone: exhaustive inner-product search over every passage (hierarchical titles), no document stage."""

    hits_bound, config_stage = "k", "dhr_p"

    def __init__(self, index: HierarchicalIndex, encoder: Encoder | None = None, k: int = 100, name: str = "dhr_p",
                 device: str = "cpu"):
        self.index, self.k, self.name = index, k, name
        self.encoder = resolve_passage_encoder(index, encoder, device)

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        rows, scores = self.index.scan_passages(self.encoder.encode_queries([q.text for q in queries]), self.k)
        return Run({q.id: [passage_hit(self.index, r, s, passage_score=float(s))
                           for r, s in zip(rows[i].tolist(), scores[i].tolist())] for i, q in enumerate(queries)})


def dhr(index: HierarchicalIndex, *, mode: str = "serial", k1: int = DEFAULT_K1, k2: int = 100,
        lam: float = DEFAULT_LAMBDA, document_encoder: Encoder | None = None, passage_encoder: Encoder | None = None,
        bm25: BM25Index | None = None, device: str = "cpu", name: str = "dhr", document: str = "summary",
        combine: str = "add", length_prior: float = 0.0, length_prior_below: float | None = None) -> Stage:
    """The DHR pipeline: serial ``DocumentRetrieve(k1) >> PassageInDocuments(lam, k2)`` or :class:`ParallelDHR`;
    ``length_prior`` adds ``beta * log(passages of the document)`` to each passage's score in both modes, for every
    query or, with ``length_prior_below``, for the queries whose best passage score is below it."""
    if mode not in MODES:
        raise ConfigError(f"dhr: unknown mode '{mode}' (known: {', '.join(MODES)})")
    if mode == "parallel":
        if bm25 is not None:
            raise ConfigError("dhr: the parallel mode scores documents densely; BM25 documents need mode serial")
        return ParallelDHR(index, document_encoder, passage_encoder, lam=lam, k=k2, name=name, device=device,
                           document=document, combine=combine, length_prior=length_prior,
                           length_prior_below=length_prior_below)
    documents = DocumentRetrieve(index, passage_encoder if document != "summary" else document_encoder, k=k1,
                                 device=device, bm25=bm25, document=document)
    stage = documents >> PassageInDocuments(index, passage_encoder, lam=lam, k=k2, device=device, combine=combine,
                                            length_prior=length_prior, length_prior_below=length_prior_below)
    stage.name = name
    return stage
