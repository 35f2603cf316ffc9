"""BM25 documents tied at the cut of a top k are taken by id, as every ranking orders ties
(sleuth.stages.run.ranking_key): a top k is the first k of any deeper top k, and a sharded index gives the unsharded
top k at any k. Real SciFact abstracts, some repeated under other ids (their scores tie exactly)."""

from __future__ import annotations

import pytest

from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
from sleuth.index.sharded import ShardedBM25Index


@pytest.fixture(scope="module")
def passages(scifact_passages):
    """300 abstracts, and abstract 7 twelve times more under ids that sort before its own, written last first."""
    copied = scifact_passages[7]
    copies = [Passage(f"0-copy-{i:02d}", f"0-copy-{i:02d}", copied.text, copied.title_path) for i in range(12)]
    return [*scifact_passages[:300], *reversed(copies)]


def top(index, query: str, k: int) -> list[tuple[str, float]]:
    positions, scores = index.search([query], k=k)
    ranked = sorted(zip(positions[0].tolist(), scores[0].tolist()), key=lambda h: (-h[1], index.docstore.ids[h[0]]))
    return [(index.docstore.ids[p], round(s, 5)) for p, s in ranked]


def test_a_top_k_is_the_first_k_of_a_deeper_one(passages, scifact_passages):
    """Before: bm25s chose among the 13 tied abstracts as its selection fell, so the top 5 held copies that the top
    100 ranked below others of the same score."""
    index = BM25Index.build(passages, show_progress=False)
    query = scifact_passages[7].title
    deep = top(index, query, 100)
    assert len({score for _, score in deep[:13]}) == 1  # the 13 copies tie at the top
    for k in (1, 5, 12, 13, 20):
        assert top(index, query, k) == deep[:k], k
    assert [doc for doc, _ in deep[:5]] == ["0-copy-00", "0-copy-01", "0-copy-02", "0-copy-03", "0-copy-04"]


def test_a_sharded_index_gives_the_unsharded_top_k_at_every_k(passages, scifact_passages):
    """Before: each shard and the merge chose among tied documents by row, so at a cut inside the tie the sharded
    top k held other documents than the unsharded one (the whole ranking agreed only past the tie)."""
    flat = BM25Index.build(passages, show_progress=False)
    sharded = ShardedBM25Index.build(passages, shards=3, show_progress=False)
    query = scifact_passages[7].title
    for k in (3, 8, 13, 50):
        assert top(sharded, query, k) == top(flat, query, k), k
