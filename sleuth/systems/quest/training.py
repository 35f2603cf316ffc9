"""Train the QUEST classifier on a corpus and tune its set rules, recording everything in ``training.json``.

Set rules (threshold, optional score gap and keep-top, :mod:`sleuth.systems.quest.cut`) are tuned per system:
``<retriever>`` (retriever top ``candidates`` >> classifier) and ``<retriever>+setops`` (the same candidates plus
each positive constraint's own top ``expand_depth`` >> set-operation-aware scoring with the classifier), each by a
sweep on the tuning queries (the paper tunes on its validation split); for ``<retriever>`` also the weight of the
retriever's score voting with the classifier (``retriever_weights``; 0 = the classifier alone). Finally the rules
the shipped pipelines read (:func:`sleuth.systems.quest.protocol.record_rules`: the vote, and the anchored setops'
vote, ``constraint_weight`` and ``not_weight``) are tuned as ``python -m bench.quest_bench`` tunes them, on the
same tuning queries, so ``<retriever>+setops``'s rule is the anchored, voting variant's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.io import atomic_directory, atomic_write_text
from sleuth.models.adapters import MODEL_MARKERS
from sleuth.pipelines.workspace import Workspace
from sleuth.stages.run import Run
from sleuth.systems.quest.classifier_training import (
    Documents,
    ExampleBudget,
    TrainingConfig,
    budget_record,
    train_classifier,
    training_pairs,
    write_training_record,
)
from sleuth.systems.quest.classify import Classify
from sleuth.systems.quest.methods import (
    CANDIDATES,
    corpus_documents,
    retriever,
    set_operations,
    tune_cut,
    tune_fusion,
)
from sleuth.systems.quest.task import QuestTask
from sleuth.systems.quest.val_halves import split_halves


@dataclass
class TuningPlan:
    """Where the tuning queries come from: ``tune`` examples (with ``tune_half``, only their tuning half of
    :mod:`sleuth.systems.quest.val_halves`, so the report half stays unseen), else the last ``held_out`` training
    queries (then not trained on); at most ``held_out`` of them either way; ``retrievers`` whose candidates are classified for tuning; ``runs`` a JSON file where the
    scored tuning runs are written (for reports without classifying again)."""

    tune: QuestTask | None = None
    held_out: int = 60
    tune_half: bool = True
    retrievers: tuple[str, ...] = ("bm25", "dense")
    candidates: int = CANDIDATES  # retriever depth the classifier reads (paper: 100)
    int8: bool = False  # classify the tuning candidates with int8 dynamic quantisation (CPU, about 2x faster)
    expand_depth: int = 10  # per-constraint retrieval depth of the set-operation variant
    runs: Path | None = None


def train_and_tune(ws: Workspace, train: QuestTask, plan: TuningPlan, budget: ExampleBudget, config: TrainingConfig,
                   target: str | Path, backbone: str = "minilm", device: str = "cpu") -> dict:
    """Train on ``train`` (queries with a gold document in the corpus), tune, save to ``target``; return the record.
    The model, its tuned rules and ``training.json`` replace ``target`` together at the end: a run that fails or is
    stopped while tuning leaves an earlier model there as it was."""
    documents = corpus_documents(ws)
    usable = [q for q in train.queries if any(d in documents.texts for d in q.metadata.get("docs") or ())]
    tune_queries, train_queries = tuning_queries(plan, usable, documents)
    if budget.max_queries is not None:
        train_queries = train_queries[:budget.max_queries]
    if not train_queries:
        raise ConfigError(f"no training queries left: {len(usable)} of {len(train.queries)} have a gold document in "
                          f"the corpus and {len(tune_queries)} are held out for tuning (--tune-queries)")
    if not tune_queries and plan.tune is not None:  # before: the set rules were "tuned" on no query, exit 0
        pool = f"the {len(split_halves(plan.tune.queries)[0])} queries of its tuning half" if plan.tune_half \
            else f"its {len(plan.tune.queries)} queries"
        raise ConfigError(f"--tune-examples: none of {pool} has a gold document in the corpus: no query to tune the "
                          "set rules on")
    gold = QuestTask(train_queries).gold
    negatives_from = retriever(ws, "bm25", budget.retriever_depth).transform(train_queries) \
        if budget.retriever_negatives else Run()
    pairs = training_pairs(train_queries, gold, documents, negatives_from, budget)
    seconds: list[float] = []
    sizes: list[int] = []
    started = time.perf_counter()
    classifier, losses = train_classifier(pairs, config, backbone=backbone, device=device,
                                          show_progress=ws.show_progress, seconds=seconds, sizes=sizes)
    train_seconds = time.perf_counter() - started
    examples, step_seconds = sum(sizes), sum(seconds)  # before: steps x batch size, the last batch counted whole
    with atomic_directory(target, MODEL_MARKERS) as staged:  # an earlier model at target stays until this one is tuned and recorded
        classifier.save(staged)  # the adapter as trained, before merge() and quantize() change the model in place
        classifier.merge()
        if plan.int8:
            classifier.quantize()
        record = {**budget_record(budget, config), "backbone": backbone, "train_queries": len(train_queries),
                  "train_pairs": len(pairs), "positive_share": sum(label for _, label in pairs) / len(pairs),
                  "steps": len(losses), "examples_seen": examples, "train_seconds": round(train_seconds, 1),
                  "step_seconds": round(step_seconds, 1),  # the steps alone (train_seconds: with loading the model)
                  "examples_per_second": round(examples / step_seconds, 2) if step_seconds else None,
                  "losses": losses, "train_query_ids": [q.id for q in train_queries],
                  "tune_query_ids": [q.id for q in tune_queries], "tune_queries": len(tune_queries),
                  "tune_split": tune_split(plan),
                  "corpus": ws.corpus.info() if ws.corpus else None, "tuned_int8": plan.int8,
                  "tune_candidates": plan.candidates, "expand_depth": plan.expand_depth,
                  "thresholds": {}, "cuts": {}, "tuned_f1": {}, "sweeps": {}}
        runs = tune_rules_into(record, ws, classifier, plan, tune_queries)
        write_training_record(staged, record)
        (staged / "README.md").write_text(classifier_card(record, config), encoding="utf-8")  # not peft's stub
    if plan.runs is not None:
        write_runs(plan.runs, runs)
    return record


def tune_rules_into(record: dict, ws: Workspace, classifier, plan: TuningPlan, tune_queries: list[Query]) -> dict[str, Run]:
    """Tune every retriever's set rules, fusion weight and the shipped pipelines' rules on ``tune_queries`` (into
    ``record``); return the scored tuning runs."""
    from sleuth.systems.quest.protocol import RANKING_DEPTH, record_rules, tune_rules

    tune_gold = QuestTask(tune_queries).gold
    classify = Classify(classifier, threshold=None, show_progress=ws.show_progress)
    runs: dict[str, Run] = {}
    for kind in plan.retrievers:
        candidates = retriever(ws, kind, plan.candidates).transform(tune_queries)
        runs[kind] = candidates
        setops = set_operations(classify, expand=retriever(ws, kind, plan.expand_depth) if plan.expand_depth
                                else None, expand_depth=plan.expand_depth)
        for name, stage in ((f"{kind} >> classify", classify), (f"{kind} >> setops", setops)):
            system = name.replace(" >> classify", "").replace(" >> setops", "+setops")
            runs[name] = stage.transform(tune_queries, candidates)
            cut, sweep = tune_cut(runs[name], tune_gold)
            record["thresholds"][system] = cut.threshold
            record["cuts"][system] = cut.record()
            record["tuned_f1"][system] = max(row["F1"] for row in sweep)
            record["sweeps"][system] = sweep
        weight, cut, f1 = tune_fusion(runs[f"{kind} >> classify"], candidates, tune_gold)
        record.setdefault("retriever_weights", {})[kind] = weight
        record["cuts"][kind], record["thresholds"][kind], record["tuned_f1"][kind] = cut.record(), cut.threshold, f1
        scored = {"ranking": retriever(ws, kind, RANKING_DEPTH).transform(tune_queries), "candidates": candidates,
                  "classify": runs[f"{kind} >> classify"], "setops": runs[f"{kind} >> setops"]}
        record_rules(record, tune_rules(scored, QuestTask(tune_queries)), kind, tune_split(plan))
    return runs


def tuning_queries(plan: TuningPlan, usable: list[Query], documents: Documents) -> tuple[list[Query], list[Query]]:
    """The tuning queries and the training queries: the tuning half of ``plan.tune`` (or all of it without
    ``tune_half``; queries with a gold document in the corpus, at most ``held_out``) and every usable training
    query, or without ``plan.tune`` the last ``held_out`` usable training queries and the rest."""
    if plan.tune is None:
        return usable[-plan.held_out:], usable[:-plan.held_out]
    pool = split_halves(plan.tune.queries)[0] if plan.tune_half else plan.tune.queries
    tune = [q for q in pool if any(d in documents.texts for d in q.metadata.get("docs") or ())]
    return tune[:plan.held_out], usable


def tune_split(plan: TuningPlan) -> str:
    """Which queries tuned the rules, in words (recorded in training.json)."""
    if plan.tune is None:
        return f"the last {plan.held_out} training queries (held out of training)"
    return "the tuning half of --tune-examples (SHA-1 of the query text even)" if plan.tune_half \
        else "all of --tune-examples"


def runs_record(runs: dict[str, Run]) -> dict:
    """Scored runs, JSON-ready: ``{system: {query id: [{"id", "score", "constraint_scores"?}]}}``."""
    def records(hits):
        return [{"id": h.id, "score": float(h.score),
                 **({"constraint_scores": [float(s) for s in h.extras["constraint_scores"]]}
                    if "constraint_scores" in h.extras else {})} for h in hits]

    return {name: {qid: records(hits) for qid, hits in run.items()} for name, run in runs.items()}


def write_runs(path: str | Path, runs: dict[str, Run]) -> None:
    """Scored runs as JSON (:func:`runs_record`)."""
    atomic_write_text(path, json.dumps(runs_record(runs)) + "\n")


def record_runs(record: dict) -> dict[str, Run]:
    """The runs of a :func:`runs_record` (hits with id, score and constraint scores in extras); a ``provenance``
    entry (the cache of :mod:`sleuth.systems.quest.protocol` names its inputs) is not a run."""
    from sleuth.stages.run import Hit

    return {name: Run({qid: [Hit(h["id"], h["score"], extras={"constraint_scores": h["constraint_scores"]}
                                 if "constraint_scores" in h else {}) for h in hits] for qid, hits in run.items()})
            for name, run in record.items() if name != "provenance"}


def classifier_card(record: dict, config: TrainingConfig) -> str:
    """The model card of a trained QUEST classifier, from its training record."""
    from sleuth.train.card import training_card

    lora = f"a LoRA adapter of rank {config.lora_rank}" if config.lora_rank else "every weight"
    return training_card(
        "QUEST relevance classifier (cross-encoder)", str(record["backbone"]),
        [f"{record['train_pairs']:,} (query, document) pairs of {record['train_queries']:,} training queries "
         f"({record['positive_share']:.0%} positive); rules tuned on {record['tune_queries']:,} queries "
         f"({record['tune_split']})",
         f"corpus: {(record.get('corpus') or {}).get('path')}"],
        [f"{lora}; {record['steps']:,} steps of batch {config.batch_size} ({record['examples_seen']:,} pairs read), lr "
         f"{config.learning_rate}, max length {config.max_length}",
         f"time: {record['train_seconds']} s ({record['step_seconds']} s of steps: {record['examples_per_second']} "
         "pairs/s)",
         f"loss {record['losses'][0]:.3f} -> {record['losses'][-1]:.3f}; details in training.json"],
        config.seed)
