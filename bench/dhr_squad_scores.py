"""Scoring for the SQuAD DHR bench: every document score and combination from one passage score matrix, the gold
paragraph's rank, R@k / nDCG@10, answer accuracy, and lambda chosen where it is allowed to be chosen.

Document scores d (per query and document): ``summary`` (encoded title + lead), ``centroid`` (unit mean of the
document's passage vectors), ``max`` (best passage score), ``lse`` (soft maximum ``T log sum exp(p/T)`` minus the
maximum: how many of the document's passages score near its best; 0 for a one-passage document), ``length``
(``log`` of the document's passage count: a pure length prior, the reference a document score must beat),
``context`` (per passage: the score of the unit mean of the *other* passages of its document, the article around it;
a one-passage document's is its passage's own), ``title`` (encoded title alone: one short text per document whatever
its length), ``context bonus`` (``context`` minus the query's median ``context`` over passages of many-passage
documents, and 0 for a one-passage document: the article's evidence counts for or against it, a document without
context is neither rewarded nor penalised).
Combinations: ``add`` ``p + lam*d``; ``gate`` ``p + lam*max(d - p, 0)``; ``z`` ``p + lam*sd_p*(d - mean_d)/sd_d``
(document scores put on the passage scores' per-query scale); ``softmax`` ``p + lam*softmax(d/0.05)`` over the top 100
documents; serial ``k1``: only the passages of the top-k1 documents are ranked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sleuth.systems.dhr.index import document_length_prior

KS = (1, 5, 20)
LAMBDAS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.0)
Z_LAMBDAS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
LENGTH_BETAS = (0.01, 0.02, 0.03, 0.05)
LSE_TEMPERATURES = (0.05, 0.1, 0.2)
SOFTMAX_TEMPERATURE, SOFTMAX_DEPTH = 0.05, 100


def gold_ranks(final: np.ndarray, gold: np.ndarray) -> np.ndarray:
    """1-based rank of each query's gold passage (ties count against it; -inf gold = never retrieved)."""
    gold_scores = final[np.arange(len(gold)), gold]
    rank = (final >= gold_scores[:, None]).sum(axis=1)
    return np.where(np.isfinite(gold_scores), rank, np.iinfo(np.int64).max)


def recall_measures(rank: np.ndarray) -> dict[str, float]:
    """R@k and nDCG@10 with one gold passage per query."""
    out = {f"R@{k}": float(np.mean(rank <= k)) for k in KS}
    out["nDCG@10"] = float(np.mean(np.where(rank <= 10, 1 / np.log2(np.minimum(rank, 10**9) + 1), 0.0)))
    return out


def answer_accuracy(final: np.ndarray, matchers: Sequence[Callable[[str], bool] | None],
                    texts: Sequence[str]) -> dict[str, float]:
    """Top-k answer accuracy over the answerable queries (matcher not None): an answer in the top k passages."""
    rows = [i for i, m in enumerate(matchers) if m is not None]
    if not rows:
        return {}
    k = max(KS)
    top = np.argpartition(-final[rows], k, axis=1)[:, :k]
    hits = np.zeros((len(rows), len(KS)))
    for n, (i, candidates) in enumerate(zip(rows, top)):
        order = candidates[np.argsort(-final[i, candidates], kind="stable")]
        first = next((r for r, row in enumerate(order) if matchers[i](texts[row])), None)
        if first is not None:
            hits[n] = [first < kk for kk in KS]
    return {f"Top-{kk}": float(hits[:, j].mean()) for j, kk in enumerate(KS)}


def lse_bonus(passage: np.ndarray, offsets: np.ndarray, owner: np.ndarray, temperature: float) -> np.ndarray:
    """``T log sum_i exp(p_i/T) - max_i p_i`` per document (0 for one passage, up to ``T log n``)."""
    starts = offsets[:-1]
    best = np.maximum.reduceat(passage, starts, axis=1)
    return temperature * np.log(np.add.reduceat(np.exp((passage - best[:, owner]) / temperature), starts, axis=1))


def z_document(passage: np.ndarray, document: np.ndarray) -> np.ndarray:
    """Document scores standardised per query and put on the passage scores' per-query spread."""
    z = (document - document.mean(1, keepdims=True)) / np.maximum(document.std(1, keepdims=True), 1e-9)
    return z * passage.std(1, keepdims=True)


def softmax_document(document: np.ndarray) -> np.ndarray:
    """Softmax of document scores / T over each query's top documents (0 elsewhere)."""
    depth = min(SOFTMAX_DEPTH, document.shape[1])
    top = np.argpartition(-document, depth - 1, axis=1)[:, :depth]
    values = np.take_along_axis(document, top, axis=1) / SOFTMAX_TEMPERATURE
    values = np.exp(values - values.max(1, keepdims=True))
    out = np.zeros_like(document)
    np.put_along_axis(out, top, values / values.sum(1, keepdims=True), axis=1)
    return out


def variant_grid(passage: np.ndarray, documents: dict[str, np.ndarray], offsets: np.ndarray, owner: np.ndarray,
                 context: np.ndarray | None = None) -> dict[tuple[str, float], Callable[[], np.ndarray]]:
    """``(variant, lam) -> final passage scores`` (lazily) for every variant with a document score in ``documents``
    (summary / centroid scores, shape queries x documents), the ``context`` scores (queries x passages) and the ones
    from passage scores alone."""
    grid: dict[tuple[str, float], Callable[[], np.ndarray]] = {("flat", 0.0): lambda: passage}
    if context is not None:
        neutral = context_bonus(context, np.diff(offsets)[owner] > 1)
        grid.update({("context bonus", lam): (lambda lam=lam, b=neutral: passage + np.float32(lam) * b)
                     for lam in LAMBDAS})
        grid.update({("context add", lam): (lambda lam=lam: passage + np.float32(lam) * context) for lam in LAMBDAS})
        grid.update({("context gate", lam): (lambda lam=lam: passage + np.float32(lam) * np.maximum(context - passage, 0))
                     for lam in LAMBDAS})
    best = np.maximum.reduceat(passage, offsets[:-1], axis=1)[:, owner]
    grid.update({("max add", lam): (lambda lam=lam: passage + np.float32(lam) * best) for lam in (0.5, 1.0, 2.0)})
    logn = document_length_prior(np.diff(offsets), 1.0)[owner]
    grid.update({("length prior", b): (lambda b=b: passage + np.float32(b) * logn) for b in LENGTH_BETAS})
    for t in LSE_TEMPERATURES:
        bonus = lse_bonus(passage, offsets, owner, t)[:, owner]
        grid.update({(f"lse T={t}", lam): (lambda lam=lam, bonus=bonus: passage + np.float32(lam) * bonus)
                     for lam in (0.25, 0.5, 1.0)})
    for name, document in documents.items():
        d = document[:, owner]
        grid.update({(f"{name} add", lam): (lambda lam=lam, d=d: passage + np.float32(lam) * d) for lam in LAMBDAS})
        grid.update({(f"{name} gate", lam): (lambda lam=lam, d=d: passage + np.float32(lam) * np.maximum(d - passage, 0))
                     for lam in LAMBDAS})
        z = z_document(passage, document)[:, owner]
        grid.update({(f"{name} z", lam): (lambda lam=lam, z=z: passage + np.float32(lam) * z) for lam in Z_LAMBDAS})
        soft = softmax_document(document)[:, owner]
        grid.update({(f"{name} softmax", lam): (lambda lam=lam, s=soft: passage + np.float32(lam) * s)
                     for lam in LAMBDAS})
        doc_rank = np.argsort(np.argsort(-document, axis=1), axis=1)[:, owner]
        for k1 in (5, 20, 100):
            grid.update({(f"{name} serial k1={k1}", lam): (
                lambda lam=lam, d=d, k1=k1, doc_rank=doc_rank: np.where(doc_rank < k1, passage + np.float32(lam) * d,
                                                                        -np.inf)) for lam in (0.5, 1.0)})
    return grid


def context_scores(queries: np.ndarray, passages: np.ndarray, offsets: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Per query and passage: cosine with the unit mean of the other passages of its document (leave-one-out
    centroid); a one-passage document's passage gets its own score."""
    sums = np.add.reduceat(passages, offsets[:-1], axis=0)
    norm2 = (sums ** 2).sum(1)[owner] - 2 * (sums[owner] * passages).sum(1) + (passages ** 2).sum(1)
    own = queries @ passages.T
    rest = (queries @ sums.T)[:, owner] - own
    multi = np.diff(offsets)[owner] > 1
    return np.where(multi, rest / np.sqrt(np.maximum(norm2, 1e-12)), own).astype(np.float32)


def context_bonus(context: np.ndarray, multi: np.ndarray) -> np.ndarray:
    """``context`` minus each query's median over the passages of many-passage documents (``multi``); 0 where a
    passage is alone in its document."""
    reference = np.median(context[:, multi], axis=1, keepdims=True) if multi.any() else 0.0
    return np.where(multi, context - reference, 0.0).astype(np.float32)


def best_lambdas(r1: dict[tuple[str, float], float]) -> dict[str, float]:
    """Per variant, the lambda with the highest R@1 (``r1`` measured where choosing is allowed: train articles)."""
    chosen: dict[str, tuple[float, float]] = {}
    for (variant, lam), value in r1.items():
        if variant not in chosen or value > chosen[variant][1]:
            chosen[variant] = (lam, value)
    return {variant: lam for variant, (lam, _) in chosen.items()}
