"""Train the QUEST classifier on a corpus and tune its thresholds, recording everything in ``training.json``.

Thresholds are tuned per system: ``<retriever>`` (retriever top 100 >> classifier) and ``<retriever>+setops``
(retriever top 100 >> set-operation-aware scoring with the classifier), each by the paper's sweep on held-out queries.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sleuth.pipelines.workspace import Workspace
from sleuth.systems.quest.classifier_training import (
    ExampleBudget,
    TrainingConfig,
    budget_record,
    save_classifier,
    train_classifier,
    training_pairs,
    write_training_record,
)
from sleuth.systems.quest.classify import Classify
from sleuth.systems.quest.methods import CANDIDATES, corpus_documents, retriever, set_operations, tune_threshold
from sleuth.systems.quest.task import QuestTask


@dataclass
class TuningPlan:
    """Where the threshold-tuning queries come from: ``tune`` examples, else the last ``held_out`` training
    queries (then not trained on); ``retrievers`` whose candidates are classified for tuning."""

    tune: QuestTask | None = None
    held_out: int = 60
    retrievers: tuple[str, ...] = ("bm25", "dense")
    candidates: int = CANDIDATES  # retriever depth the classifier reads (paper: 100)
    int8: bool = False  # classify the tuning candidates with int8 dynamic quantisation (CPU, about 2x faster)


def train_and_tune(ws: Workspace, train: QuestTask, plan: TuningPlan, budget: ExampleBudget, config: TrainingConfig,
                   target: str | Path, backbone: str = "minilm", device: str = "cpu") -> dict:
    """Train on ``train`` (queries with a gold document in the corpus), tune, save to ``target``; return the record."""
    documents = corpus_documents(ws)
    usable = [q for q in train.queries if any(d in documents.texts for d in q.metadata.get("docs") or ())]
    if plan.tune is None:
        tune_queries, train_queries = usable[-plan.held_out:], usable[:-plan.held_out]
    else:
        tune_queries = [q for q in plan.tune.queries
                        if any(d in documents.texts for d in q.metadata.get("docs") or ())][:plan.held_out]
        train_queries = usable
    if budget.max_queries is not None:
        train_queries = train_queries[:budget.max_queries]
    gold = QuestTask(train_queries).gold
    negatives_from = retriever(ws, "bm25", budget.retriever_depth).transform(train_queries) \
        if budget.retriever_negatives else {}
    pairs = training_pairs(train_queries, gold, documents, negatives_from, budget)
    classifier, losses = train_classifier(pairs, config, backbone=backbone, device=device,
                                          show_progress=ws.show_progress)
    save_classifier(classifier, target, {})
    if plan.int8:
        classifier.quantize()
    record = {**budget_record(budget, config), "backbone": backbone, "train_queries": len(train_queries),
              "train_pairs": len(pairs), "positive_share": sum(label for _, label in pairs) / len(pairs),
              "losses": losses, "train_query_ids": [q.id for q in train_queries],
              "tune_query_ids": [q.id for q in tune_queries], "tune_queries": len(tune_queries),
              "corpus": ws.corpus.info() if ws.corpus else None, "tuned_int8": plan.int8,
              "tune_candidates": plan.candidates, "thresholds": {}, "tuned_f1": {}, "sweeps": {}}
    tune_gold = QuestTask(tune_queries).gold
    classify = Classify(classifier, threshold=None, show_progress=ws.show_progress)
    for kind in plan.retrievers:
        candidates = retriever(ws, kind, plan.candidates).transform(tune_queries)
        for name, stage in ((kind, classify), (f"{kind}+setops", set_operations(classify))):
            threshold, sweep = tune_threshold(stage.transform(tune_queries, candidates), tune_gold)
            record["thresholds"][name] = threshold
            record["tuned_f1"][name] = max(row["F1"] for row in sweep)
            record["sweeps"][name] = sweep
    write_training_record(target, record)
    return record
