"""QUEST's evaluation protocol: score a retriever's candidates once, choose every rule on val's tuning half, report
on its report half (:mod:`sleuth.systems.quest.val_halves`).

:func:`score_runs` classifies the retriever's top ``depth`` candidates against each whole query and each parsed
constraint (the expensive part); :func:`cached_runs` keeps them in a JSON file that names the classifier, corpus and
retriever it was scored with, so re-tuning is free. :func:`tune_rules` reads only the tuning half's rankings and
gold; :func:`report` applies the chosen rules to the report half.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sleuth.corpus.jsonfile import load_json
from sleuth.errors import ConfigError, InputError
from sleuth.io import atomic_write_text
from sleuth.pipelines.workspace import Workspace
from sleuth.stages.run import Run
from sleuth.systems.quest.cut import SetCut, predicted_sets
from sleuth.systems.quest.methods import (
    CONSTRAINT_WEIGHTS,
    anchored_run,
    fused_run,
    restrict,
    retriever,
    routed_sets,
    set_operation_ids,
    set_operations,
    top_k_sets,
    tune_anchored,
    tune_cut,
    tune_fusion,
    tune_top_k,
    voted_anchored_run,
)
from sleuth.systems.quest.query_parser import parse_query
from sleuth.systems.quest.set_metrics import average, set_per_query
from sleuth.systems.quest.task import QuestTask, evaluate, run_sets
from sleuth.systems.quest.training import record_runs, runs_record

RANKING_DEPTH = 1000  # the retriever-alone ranking's depth (Recall@K, MRecall@K)


@dataclass(frozen=True)
class CandidateSource:
    """The retriever whose candidates are classified: ``bm25`` or ``dense`` (with ``encoder``, a registered name or
    a trained encoder's path), its top ``depth`` read by the classifier (the shipped pipelines read 30)."""

    retriever: str = "bm25"
    encoder: str = "minilm"
    depth: int = 30

    @property
    def name(self) -> str:
        return self.retriever if self.retriever == "bm25" else f"{self.retriever}:{self.encoder}"

    def stage(self, ws: Workspace, k: int):
        return retriever(ws, self.retriever, k, encoder=self.encoder)


def score_runs(ws: Workspace, task: QuestTask, classifier, source: CandidateSource) -> dict[str, Run]:
    """The retriever's ranking (top 1000), its top ``depth`` classified against the whole query (``classify``)
    and against each parsed constraint (``setops``, constraint scores in each hit's extras)."""
    from sleuth.systems.quest.classify import Classify

    ranking = source.stage(ws, max(RANKING_DEPTH, source.depth)).transform(task.queries)
    candidates = Run({qid: hits[:source.depth] for qid, hits in ranking.items()})
    classify = Classify(classifier, threshold=None, show_progress=ws.show_progress)
    return {"ranking": ranking, "candidates": candidates,
            "classify": classify.transform(task.queries, candidates),
            "setops": set_operations(classify).transform(task.queries, candidates)}


def cached_runs(path: Path | None, provenance: Mapping, score) -> dict[str, Run]:
    """The scored runs from ``path`` when it was written for the same ``provenance`` (classifier, corpus,
    retriever, queries), else ``score()``'s, written to ``path``. A cache for other inputs is a ConfigError."""
    if path is not None and path.is_file():
        data = load_json(path)  # a truncated or foreign file: one InputError line naming it
        if not isinstance(data, dict):
            raise InputError("not a scored-runs file (a JSON object of runs and their provenance)", path=path)
        if data.get("provenance") != json.loads(json.dumps(provenance)):
            raise ConfigError(f"{path}: scored runs of other inputs ({data.get('provenance')}); remove it or give "
                              f"another --runs file")
        return record_runs(data)  # the file is read once
    runs = score()
    if path is not None:
        atomic_write_text(path, json.dumps({"provenance": provenance, **runs_record(runs)}) + "\n")
    return runs


@dataclass
class Rules:
    """Every rule, chosen on the tuning half: the retriever's top k, the classifier's set rule alone, its vote weight
    with the retriever and that rule, the anchored setops' ``not_weight`` and rule (the set operation in full), and
    the setops that votes with the retriever at the classifier's vote weight: its share of the set operation
    (``voted_constraint_weight``, 0 = classify + vote), ``not_weight`` and the set rule of the queries parsed as
    intersections or differences (``voted_setops``), all three chosen on those queries alone; the other queries
    keep classify + vote's rule (their scores are classify + vote's)."""

    top_k: int
    classify: SetCut
    vote_weight: float
    vote: SetCut
    not_weight: float
    setops: SetCut
    voted_constraint_weight: float
    voted_not_weight: float
    voted_setops: SetCut
    tuned_f1: dict[str, float] = field(default_factory=dict)

    def record(self) -> dict:
        return {k: (v.record() if isinstance(v, SetCut) else v) for k, v in asdict(self).items()}


def tune_rules(runs: Mapping[str, Run], tune: QuestTask) -> Rules:
    """Choose every rule from the tuning half only (its rankings and gold; nothing of any other query is read)."""
    gold, parsed = tune.gold, {q.id: parse_query(q.text) for q in tune.queries}
    part = {name: restrict(run, tune.queries) for name, run in runs.items()}
    top_k, sweep = tune_top_k(part["ranking"], gold)
    classify_cut, classify_sweep = tune_cut(part["classify"], gold)
    weight, vote_cut, vote_f1 = tune_fusion(part["classify"], part["candidates"], gold)
    (_, not_weight), setops_cut, setops_f1 = tune_anchored(part["classify"], part["setops"], parsed, gold)
    set_ids = set_operation_ids(parsed)
    set_gold = {qid: gold[qid] for qid in set_ids} or dict(gold)  # no set-operation query: tuned on them all
    (share, voted_weight), voted_cut, voted_set_f1 = tune_anchored(
        part["classify"], part["setops"], parsed, set_gold, retrieved=part["candidates"], vote_weight=weight,
        constraint_weights=CONSTRAINT_WEIGHTS)
    voted = voted_anchored_run(part["classify"], part["setops"], parsed, voted_weight, part["candidates"], weight,
                               share)
    voted_f1 = average(set_per_query(routed_sets(voted, parsed, vote_cut, voted_cut), gold))["F1"]
    vote_set_f1 = average(set_per_query(predicted_sets(fused_run(part["classify"], part["candidates"], weight),
                                                       vote_cut), set_gold))["F1"]
    f1s = {"top_k": max(r["F1"] for r in sweep), "classify": max(r["F1"] for r in classify_sweep),
           "vote": vote_f1, "setops": setops_f1, "voted_setops": voted_f1,
           "vote_set_queries": vote_set_f1, "voted_setops_set_queries": voted_set_f1}
    return Rules(top_k, classify_cut, weight, vote_cut, not_weight, setops_cut, share, voted_weight, voted_cut, f1s)


def predicted_runs(runs: Mapping[str, Run], rules: Rules, task: QuestTask) -> dict[str, tuple[Run, dict]]:
    """Each system's scored run over ``task``'s queries and its predicted sets under ``rules``."""
    parsed = {q.id: parse_query(q.text) for q in task.queries}
    part = {name: restrict(run, task.queries) for name, run in runs.items()}
    voted = fused_run(part["classify"], part["candidates"], rules.vote_weight)
    anchored = anchored_run(part["classify"], part["setops"], parsed, rules.not_weight)
    voted_setops = voted_anchored_run(part["classify"], part["setops"], parsed, rules.voted_not_weight,
                                      part["candidates"], rules.vote_weight, rules.voted_constraint_weight)
    return {
        "retriever top 10": (part["ranking"], top_k_sets(part["ranking"], 10)),
        f"retriever top k (k={rules.top_k})": (part["ranking"], top_k_sets(part["ranking"], rules.top_k)),
        f"classifier alone ({describe(rules.classify)})": (part["classify"],
                                                           predicted_sets(part["classify"], rules.classify)),
        f"classify + retriever vote (w={rules.vote_weight:.1f}, {describe(rules.vote)})": (
            voted, predicted_sets(voted, rules.vote)),
        f"setops anchored (not_weight {rules.not_weight}, {describe(rules.setops)})": (
            anchored, predicted_sets(anchored, rules.setops)),
        f"setops anchored + retriever vote (w={rules.vote_weight:.1f}, share {rules.voted_constraint_weight}, "
        f"not_weight {rules.voted_not_weight}, {describe(rules.voted_setops)} on set-operation queries)": (
            voted_setops, routed_sets(voted_setops, parsed, rules.vote, rules.voted_setops)),
    }


def report(runs: Mapping[str, Run], rules: Rules, task: QuestTask) -> dict[str, dict]:
    """:func:`~sleuth.systems.quest.task.evaluate` of every system on ``task`` (the report half) under ``rules``."""
    return {name: evaluate(task, sets, run_sets(run)) for name, (run, sets) in predicted_runs(runs, rules, task).items()}


def record_rules(record: dict, rules: Rules, system: str, split: str, tune_ids: list[str] | None = None) -> dict:
    """``record`` (a training.json) with the rules the shipped pipelines read for ``system`` (e.g. "bm25"):
    the classify pipeline's vote weight and rule, the setops pipeline's vote weight, share of the set operation,
    ``not_weight`` and rules (classify's for atomic and union queries, its own for set-operation queries)."""
    setops = f"{system}+setops"
    record.setdefault("retriever_weights", {}).update({system: rules.vote_weight, setops: rules.vote_weight})
    record.setdefault("not_weights", {})[setops] = rules.voted_not_weight
    record.setdefault("constraint_weights", {})[setops] = rules.voted_constraint_weight
    record.setdefault("cuts", {}).update({system: rules.vote.record(), setops: rules.vote.record()})
    record.setdefault("set_operation_cuts", {})[setops] = rules.voted_setops.record()
    record.setdefault("thresholds", {}).update({system: rules.vote.threshold, setops: rules.vote.threshold})
    record.setdefault("tuned_f1", {}).update({system: rules.tuned_f1["vote"], setops: rules.tuned_f1["voted_setops"]})
    record["rules_tuned_on"] = split
    if tune_ids is not None:  # rules re-tuned after training: earlier tuning queries and sweeps no longer apply
        record["tune_query_ids"], record["tune_queries"] = list(tune_ids), len(tune_ids)
        record.pop("sweeps", None)
    record.setdefault("protocol_rules", {})[system] = rules.record()
    return record


def describe(cut: SetCut) -> str:
    """A set rule in a few words (for table rows)."""
    text = f"t={cut.threshold:.2f}"
    if cut.gap is not None:
        text += f", gap {cut.gap:.1f}"
    return text + (", keep top" if cut.keep_top else "")


SET_OPERATION_TEMPLATES = ("_ that are also _", "_ that are not _", "_ that are also _ but not _")
CLASSIFY_ROW, SETOPS_ROW = "classify + retriever vote", "setops anchored + retriever vote"


def setops_goal(reports: Mapping[str, dict]) -> dict:
    """Whether the voting setops reaches classify's F1 overall and beats it on A∩B, A\\B and A∩B\\C."""
    classify = next(r for name, r in reports.items() if name.startswith(CLASSIFY_ROW))
    setops = next(r for name, r in reports.items() if name.startswith(SETOPS_ROW))
    overall = setops["overall"]["F1"] >= classify["overall"]["F1"] - 1e-12
    per = {t: (setops["per_template"].get(t, {}).get("F1", 0.0), classify["per_template"].get(t, {}).get("F1", 0.0))
           for t in SET_OPERATION_TEMPLATES}
    return {"overall": [setops["overall"]["F1"], classify["overall"]["F1"]], "per_template": per,
            "met": overall and all(s > c for s, c in per.values())}


def model_fingerprint(path: Path) -> str:
    """SHA-1 over a model directory's weight files (names and contents)."""
    import hashlib

    digest = hashlib.sha1()
    for file in sorted(path.glob("*")):
        if file.suffix in (".safetensors", ".bin", ".pt") and file.is_file():
            digest.update(file.name.encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def protocol_report(classifier_dir: Path | None, documents: Path, examples: Path, source: CandidateSource,
                    domains=("films", "books"), runs_path: Path | None = None, int8: bool = False,
                    device: str = "cpu", update_record: bool = False, show_progress: bool = True) -> dict:
    """The whole protocol: candidates scored (or read from ``runs_path``), rules tuned on the tuning half, every
    system evaluated on the report half; with ``update_record`` the rules go into the classifier's training.json."""
    from sleuth.systems.quest.builders import model_dir
    from sleuth.systems.quest.classifier_training import read_training_record, write_training_record
    from sleuth.systems.quest.methods import quest_workspace
    from sleuth.systems.quest.task import load_task
    from sleuth.systems.quest.val_halves import split_halves

    model = model_dir(str(classifier_dir) if classifier_dir else None)
    if not model.is_dir():
        raise ConfigError(f"classifier directory not found: {model}")
    ws = quest_workspace(documents, device, show_progress=show_progress)
    task = load_task(examples, list(domains) if domains else None)
    tune_part, report_part = split_halves(task.queries)
    tune, held = task.subset(q.id for q in tune_part), task.subset(q.id for q in report_part)
    provenance = {"classifier": model_fingerprint(model), "corpus": ws.corpus.info()["fingerprint"]
                  if ws.corpus else None, "source": asdict(source), "int8": int8,
                  "queries": sorted(q.id for q in task.queries)}

    def score() -> dict[str, Run]:
        from sleuth.models.cross_encoder import CrossEncoderClassifier

        return score_runs(ws, task, CrossEncoderClassifier(str(model), device=device, int8=int8), source)

    runs = cached_runs(runs_path, provenance, score)
    rules = tune_rules(runs, tune)
    reports = report(runs, rules, held)
    if update_record:
        split = f"tuning half of {examples.name} (SHA-1 of the query text even), {len(tune.queries)} queries"
        write_training_record(model, record_rules(read_training_record(model), rules, source.retriever, split,
                                                  [q.id for q in tune.queries]))
    return {"report": reports, "rules": rules.record(), "goal": setops_goal(reports), "classifier": str(model),
            "tune_queries": len(tune.queries), "report_queries": len(held.queries)}
