"""QUEST's dual encoder (Malaviya et al., ACL 2023, section 4: the "DE" retriever): a bi-encoder trained with an
in-batch softmax over training queries and their gold documents.

Every (query, gold document) pair is one example; the query's other gold documents are masked in the batch (they
are not negatives), and ``hard_negatives`` non-gold documents from BM25's top ``negative_depth`` join each example.
Documents read as the dense index encodes them ("title text"), so the trained encoder searches the workspace's own
dense index unchanged. With a LoRA rank the result is an adapter over the packaged MiniLM (a few MB, shippable).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from sleuth.corpus.model import Query
from sleuth.pipelines.workspace import Workspace
from sleuth.systems.quest.methods import corpus_documents, retriever
from sleuth.train.contrastive import ContrastiveExample


@dataclass(frozen=True)
class DenseExampleBudget:
    """Hard negatives per example and the BM25 depth they are sampled from (0 negatives: in-batch only)."""

    hard_negatives: int = 1
    negative_depth: int = 50
    seed: int = 0


def dense_examples(ws: Workspace, queries: Sequence[Query], budget: DenseExampleBudget = DenseExampleBudget()
                   ) -> list[ContrastiveExample]:
    """One example per (query, gold document in the corpus); queries without such a document contribute none."""
    documents = corpus_documents(ws)
    rng = random.Random(budget.seed)
    usable = [q for q in queries if any(d in documents.texts for d in q.metadata.get("docs") or ())]
    ranked = (retriever(ws, "bm25", budget.negative_depth).transform(usable) if budget.hard_negatives else None)

    def text(doc_id: str) -> str:
        title = documents.titles.get(doc_id, "")
        return f"{title} {documents.texts[doc_id]}" if title else documents.texts[doc_id]

    examples = []
    for query in usable:
        gold = frozenset(d for d in query.metadata["docs"] if d in documents.texts)
        pool = [h.id for h in ranked.get(query.id, [])] if ranked is not None else []
        pool = [d for d in pool if d not in gold]
        for doc_id in sorted(gold):
            negatives = rng.sample(pool, min(budget.hard_negatives, len(pool)))
            examples.append(ContrastiveExample(query.text, text(doc_id), [text(d) for d in negatives], doc_id,
                                               list(negatives), also_relevant=gold))
    return examples
