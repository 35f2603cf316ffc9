"""Global BM25 statistics for sharded indexes: one vocabulary, document frequencies, N and average length.

bm25s computes idf and the average length from the corpus it indexes. A shard scored that way would depend on
the sharding, so each shard's score matrix is built here with bm25s' own scoring functions fed with statistics
over *all* shards: every (document, term) weight is then the one the unsharded index stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import bm25s
import numpy as np
from bm25s import scoring
from bm25s.tokenization import Tokenized


@dataclass
class GlobalStats:
    """Corpus-wide statistics shared by every shard: vocabulary (token -> id), df per id, N, total tokens."""

    vocab: dict[str, int]
    doc_freqs: np.ndarray
    n_docs: int
    total_tokens: int

    @property
    def avg_doc_len(self) -> np.float64:
        """As bm25s computes it (np.mean of the integer lengths; the float64 sum of integers is exact). A numpy
        float64, not a Python float: numpy promotes float32 arithmetic with it to float64, as in bm25s."""
        return np.float64(self.total_tokens) / self.n_docs if self.n_docs else np.float64(0.0)

    def summary(self) -> dict[str, float | int]:
        """What the sharded manifest records."""
        return {"n_docs": self.n_docs, "total_tokens": self.total_tokens, "avg_doc_len": float(self.avg_doc_len),
                "vocab_size": len(self.vocab)}


def shared_vocabulary(shards: Sequence[Tokenized]) -> tuple[dict[str, int], list[list[list[int]]]]:
    """One vocabulary over the shards' own ones (sorted, so it does not depend on the shard order) and every
    shard's token ids remapped into it."""
    vocab = merged_vocabulary(shard.vocab for shard in shards)
    return vocab, [remap_ids(shard, vocab) for shard in shards]


def merged_vocabulary(vocabularies: Iterable[Iterable[str]]) -> dict[str, int]:
    """The sorted union of the shards' tokens, numbered (where each shard's tokens are collected, e.g. on Ray)."""
    return {token: i for i, token in enumerate(sorted(set().union(*vocabularies)))}


def remap_ids(shard: Tokenized, vocab: dict[str, int]) -> list[list[int]]:
    """A shard's token ids, from its own vocabulary into the merged one."""
    local = np.zeros(max(shard.vocab.values(), default=-1) + 1, dtype=np.int64)
    for token, local_id in shard.vocab.items():
        local[local_id] = vocab[token]
    return [local[np.asarray(ids, dtype=np.int64)].tolist() for ids in shard.ids]


@dataclass
class ShardCounts:
    """One shard's contribution to the global statistics."""

    doc_freqs: np.ndarray
    n_docs: int
    total_tokens: int


def count_shard(token_ids: Sequence[Sequence[int]], vocab_size: int) -> ShardCounts:
    """Document frequency of every global token id within one shard (bm25s' counting), documents and tokens."""
    counts = scoring._calculate_doc_freqs(token_ids, range(vocab_size), show_progress=False)
    doc_freqs = np.fromiter((counts[i] for i in range(vocab_size)), dtype=np.int64, count=vocab_size)
    return ShardCounts(doc_freqs, len(token_ids), sum(len(ids) for ids in token_ids))


def global_stats(vocab: dict[str, int], counts: Sequence[ShardCounts]) -> GlobalStats:
    """Sum the shards' document frequencies, document counts and token counts."""
    doc_freqs = np.zeros(len(vocab), dtype=np.int64)
    for shard in counts:
        doc_freqs += shard.doc_freqs
    return GlobalStats(vocab, doc_freqs, sum(c.n_docs for c in counts), sum(c.total_tokens for c in counts))


def shard_model(token_ids: Sequence[Sequence[int]], counts: ShardCounts, stats: GlobalStats, method: str, k1: float,
                b: float, delta: float) -> bm25s.BM25:
    """A bm25s model of one shard whose score matrix uses the global statistics (the steps of
    ``bm25s.BM25.build_index_from_ids`` with N, df and the average length taken from ``stats``)."""
    model = bm25s.BM25(method=method, k1=k1, b=b, delta=delta)
    dfs = {i: int(df) for i, df in enumerate(stats.doc_freqs.tolist())}
    idf_fn = scoring._select_idf_scorer(model.idf_method)
    avg = stats.avg_doc_len
    if method in model.methods_requiring_nonoccurrence:
        model.nonoccurrence_array = scoring._build_nonoccurrence_array(
            doc_frequencies=dfs, n_docs=stats.n_docs, compute_idf_fn=idf_fn,
            calculate_tfc_fn=scoring._select_tfc_scorer(method), l_d=avg, l_avg=avg, k1=k1, b=b, delta=delta,
            dtype=model.dtype)
    else:
        model.nonoccurrence_array = None
    idf = scoring._build_idf_array(doc_frequencies=dfs, n_docs=stats.n_docs, compute_idf_fn=idf_fn, dtype=model.dtype)
    # the flat arrays are sized by the shard's own (document, term) pairs: sum of its local dfs
    local_dfs = {i: int(df) for i, df in enumerate(counts.doc_freqs.tolist())}
    data, rows, cols = scoring._build_scores_and_indices_for_matrix(
        corpus_token_ids=token_ids, idf_array=idf, avg_doc_len=avg, doc_frequencies=local_dfs, k1=k1, b=b,
        delta=delta, nonoccurrence_array=model.nonoccurrence_array, method=method, dtype=model.dtype,
        int_dtype=model.int_dtype, show_progress=False)
    data, indices, indptr = model._np_csc(data=data, rows=rows, cols=cols, shape=(len(token_ids), len(stats.vocab)))
    model.scores = {"data": data.astype(model.dtype), "indices": indices, "indptr": indptr,
                    "num_docs": len(token_ids)}
    vocab = dict(stats.vocab)
    if "" not in vocab:  # the empty token bm25s.BM25.index adds (an all-unknown query scores zero)
        vocab[""] = len(vocab)
    model.vocab_dict = vocab
    model.unique_token_ids_set = set(vocab.values())
    return model
