"""Trained encoders for the SQuAD DHR bench at equal budget: linear heads over the frozen MiniLM vectors.

Examples come from ``sleuth dhr train``'s builders (train-article questions only, unanswerable ones on their
paragraph): passage objective = question -> gold paragraph, 2 in-document negatives + in-batch negatives; document
objective = question -> gold article (title + lead), 1 BM25 abstract negative + in-batch negatives. Setups:

- ``flat``: one head, passage objective (the fair baseline);
- ``two``: DHR's two encoders, a document head (document objective) and a passage head (passage objective; the
  same training as ``flat``, so its passage scores are flat's);
- ``shared``: one head trained on both objectives (round-robin).

Every objective gets the same budget: ``steps`` steps of ``batch`` questions.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sleuth.corpus.model import Query
from sleuth.systems.dhr.index import HierarchicalIndex
from sleuth.systems.dhr.training_data import DHRCorpus, document_negatives, label_questions, passage_negatives
from sleuth.train.contrastive import TrainConfig
from sleuth.train.heads import LinearHead, VectorExample, VectorTask, train_linear_head

PASSAGE_NEGATIVES = {"in-doc": 2}
DOCUMENT_NEGATIVES = {"abstract": 1}


@dataclass
class Objectives:
    """The passage and document examples of a set of questions (rows of the bench's query matrix)."""

    passage: list[VectorExample]
    document: list[VectorExample]


def build_objectives(questions: Sequence[Query], query_rows: dict[str, int], corpus: DHRCorpus,
                     index: HierarchicalIndex, seed: int = 13) -> Objectives:
    """Examples in index rows: the trainer's corpus and the index hold the same passages, matched by id."""
    passage_row = {pid: i for i, pid in enumerate(index.passages.ids)}
    document_row = {did: i for i, did in enumerate(index.documents.ids)}
    rng = random.Random(seed)
    passage, document = [], []
    for item in label_questions(questions, corpus):
        q = query_rows[item.query.id]
        gold = passage_row[corpus.passages[item.positive].id]
        negatives = [passage_row[corpus.passages[r].id] for r in passage_negatives(item, corpus, PASSAGE_NEGATIVES, rng)]
        passage.append(VectorExample(q, gold, negatives))
        docs = [document_row[corpus.groups[d].document.id] for d in document_negatives(item, corpus, DOCUMENT_NEGATIVES)]
        document.append(VectorExample(q, document_row[corpus.groups[item.document].document.id], docs))
    return Objectives(passage, document)


def train_setups(objectives: Objectives, queries: np.ndarray, index: HierarchicalIndex,
                 config: TrainConfig) -> dict[str, dict]:
    """``{"flat"|"two"|"shared": {"passage": head, "document": head, "examples_per_second": ...}}``."""
    passages, documents = np.asarray(index.passage_vectors), np.asarray(index.document_vectors)
    passage_task = VectorTask(queries, passages, objectives.passage)
    document_task = VectorTask(queries, documents, objectives.document)
    flat = train_linear_head([passage_task], config)
    document = train_linear_head([document_task], config)
    shared = train_linear_head([document_task, passage_task], config)
    both = flat.examples + document.examples
    return {
        "flat": {"passage": flat.head, "document": None, "examples_per_second": flat.examples_per_second,
                 "loss": first_last(flat.losses)},
        "two": {"passage": flat.head, "document": document.head,
                "examples_per_second": both / (flat.seconds + document.seconds), "loss": first_last(document.losses)},
        "shared": {"passage": shared.head, "document": shared.head,
                   "examples_per_second": shared.examples_per_second, "loss": first_last(shared.losses)},
    }


def first_last(losses: list[float], window: int = 20) -> tuple[float, float]:
    window = max(1, min(window, len(losses) // 2))
    return float(np.mean(losses[:window])), float(np.mean(losses[-window:]))


def identity_setup(dim: int) -> dict:
    """The zero-shot encoders in the same shape as a trained setup."""
    head = LinearHead.identity(dim)
    return {"passage": head, "document": head}
