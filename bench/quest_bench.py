"""QUEST (paper 003) on the validation split: retrievers alone, the relevance classifier and the set-operation-aware
variant, overall and per template; set P / R / F1, Recall@K and MRecall@K side by side.

    .venv/bin/python -m bench.quest_bench --runs /tmp/quest-val-runs.json

The corpus is the proxy built from the examples' attribution sentences (``--documents`` takes a real QUEST
documents.jsonl instead); only films and books have attributions, so only their 182 val queries are evaluated.
The classifier systems read the scored runs that ``sleuth quest train --save-runs`` wrote while tuning on val
(``--runs``); when that file does not exist, the shipped classifier (or ``--classifier``) classifies the val
candidates now (minutes on a shared CPU) and writes it. Set rules are reported two ways: tuned on all of val (what
the paper does, and what ships) and held out (two folds: tuned on one half of val, measured on the other).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from bench.common import Report, ResultTable, base_parser, bench_main, progress
from sleuth.paths import home_dir, shared_data_dir
from sleuth.stages.run import Run
from sleuth.systems.quest.cut import SetCut, predicted_sets
from sleuth.systems.quest.methods import (
    anchored_run,
    fused_run,
    quest_workspace,
    retriever,
    shipped_classifier_dir,
    top_k_sets,
    tune_anchored,
    tune_cut,
    tune_fusion,
    tune_top_k,
)
from sleuth.systems.quest.query_parser import parse_query
from sleuth.systems.quest.set_metrics import RECALL_KS
from sleuth.systems.quest.task import QuestTask, evaluate, load_task, run_sets
from sleuth.systems.quest.templates import SYMBOLS, TEMPLATES

NAME = "quest_bench"
MEASURES = ("P", "R", "F1") + tuple(f"{m}@{k}" for k in RECALL_KS for m in ("Recall", "MRecall"))


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--documents", type=Path, help="QUEST documents.jsonl (default: the proxy corpus)")
    parser.add_argument("--classifier", type=Path, default=None, help="classifier (default: the shipped one)")
    parser.add_argument("--runs", type=Path, default=None, help="scored val runs (sleuth quest train --save-runs); "
                                                               "written here when absent")
    parser.add_argument("--domains", nargs="*", default=["films", "books"], help="domains to evaluate")
    parser.add_argument("--candidates", type=int, default=50, help="retriever candidates the classifier reads")
    parser.add_argument("--expand-depth", type=int, default=10, help="per-constraint retrieval depth (setops)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--update-record", type=Path, default=None, help="write the val-tuned retriever weight and "
                                                                         "set rule of bm25 into DIR/training.json")
    return parser


def proxy_corpus() -> Path:
    """The attribution-sentence proxy corpus of train + val, written once under $SLEUTH_HOME/quest/."""
    from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents

    path = home_dir() / "quest" / "proxy-documents.jsonl"
    if not path.is_file():
        folder = shared_data_dir() / "quest"
        write_quest_documents(path, quest_attribution_documents([folder / "train.jsonl", folder / "val.jsonl"]))
    return path


def classified_runs(args: argparse.Namespace, ws, val: QuestTask) -> dict[str, Run]:
    """The val runs of ``bm25 >> classify`` and ``bm25 >> setops``: read from ``--runs`` or classified now."""
    from sleuth.systems.quest.training import read_runs, write_runs

    if args.runs is not None and args.runs.is_file():
        return read_runs(args.runs)
    import torch

    from sleuth.models.cross_encoder import CrossEncoderClassifier
    from sleuth.systems.quest.classify import Classify
    from sleuth.systems.quest.methods import set_operations

    torch.set_num_threads(1)
    classifier = CrossEncoderClassifier(str(args.classifier or shipped_classifier_dir()), device=args.device,
                                        int8=True)
    classify = Classify(classifier, threshold=None, show_progress=True)
    candidates = retriever(ws, "bm25", args.candidates).transform(val.queries)
    setops = set_operations(classify, expand=retriever(ws, "bm25", args.expand_depth),
                            expand_depth=args.expand_depth)
    progress("classifying the val candidates (whole queries, then constraints)")
    runs = {"bm25": candidates, "bm25 >> classify": classify.transform(val.queries, candidates),
            "bm25 >> setops": setops.transform(val.queries, candidates)}
    if args.runs is not None:
        write_runs(args.runs, runs)
    return runs


def held_out_sets(task: QuestTask, tune: Callable[[QuestTask], Callable[[list[str]], dict[str, list[str]]]]
                  ) -> dict[str, list[str]]:
    """Two-fold sets: a rule tuned on the even-numbered queries predicts the odd ones and vice versa."""
    ids = [q.id for q in task.queries]
    folds = [ids[0::2], ids[1::2]]
    predicted: dict[str, list[str]] = {}
    for tune_ids, test_ids in ((folds[0], folds[1]), (folds[1], folds[0])):
        predicted.update(tune(task.subset(tune_ids))(test_ids))
    return predicted


def run(args: argparse.Namespace) -> Report:
    from sleuth.systems.quest.classifier_training import read_training_record

    folder = shared_data_dir() / "quest"
    documents = args.documents or proxy_corpus()
    ws = quest_workspace(documents, args.device, show_progress=False)
    val = load_task(folder / "val.jsonl", args.domains)
    gold = val.gold
    reports: dict[str, dict] = {}
    held_out: dict[str, dict] = {}
    for kind in ("bm25", "dense"):
        progress(f"{kind}: top 1000 for {len(val.queries)} val queries")
        ranking = Run({qid: hits[:1000] for qid, hits in retriever(ws, kind, 1000).transform(val.queries).items()})
        reports[f"{kind} alone (top 10)"] = evaluate(val, top_k_sets(ranking, 10), run_sets(ranking))
        k, _ = tune_top_k(ranking, gold)
        reports[f"{kind} alone (top {k}, k tuned on val)"] = evaluate(val, top_k_sets(ranking, k), run_sets(ranking))

        def tuned_top_k(part: QuestTask, ranking: Run = ranking):
            k, _ = tune_top_k(Run({q: ranking[q] for q in part.gold}), part.gold)
            return lambda ids: top_k_sets(Run({q: ranking[q] for q in ids}), k)

        held_out[f"{kind} alone (top k)"] = evaluate(val, held_out_sets(val, tuned_top_k), run_sets(ranking))
    runs = classified_runs(args, ws, val)
    classifier_dir = args.classifier or shipped_classifier_dir()
    record = read_training_record(classifier_dir)
    shipped = {name: SetCut.from_record(cut) for name, cut in (record.get("cuts") or {}).items()}
    for label, system in (("bm25 >> classify", "bm25"), ("bm25 >> setops", "bm25+setops")):
        scored = runs[label]
        paper, _ = tune_cut(scored, gold, gaps=(None,), keep_top=(False,))
        best, _ = tune_cut(scored, gold)
        rules = {"threshold only": paper, "threshold + gap/keep-top": best}
        if system in shipped and shipped[system] not in rules.values():
            rules["shipped rule"] = shipped[system]
        for rule_name, cut in rules.items():
            reports[f"{label} ({rule_name}, tuned on val: {describe(cut)})"] = evaluate(
                val, predicted_sets(scored, cut), run_sets(scored))
        for rule_name, options in (("threshold only", {"gaps": (None,), "keep_top": (False,)}),
                                   ("threshold + gap/keep-top", {})):
            def tuned_cut(part: QuestTask, scored: Run = scored, options: dict = options):
                cut, _ = tune_cut(Run({q: scored.get(q, []) for q in part.gold}), part.gold, **options)
                return lambda ids: predicted_sets(Run({q: scored.get(q, []) for q in ids}), cut)

            held_out[f"{label} ({rule_name})"] = evaluate(val, held_out_sets(val, tuned_cut), run_sets(scored))
    retrieved, classified = runs["bm25"], runs["bm25 >> classify"]
    anchored_cut = anchored_rows(val, classified, runs["bm25 >> setops"], reports, held_out)
    weight, cut, _ = tune_fusion(classified, retrieved, gold)
    voted = fused_run(classified, retrieved, weight)
    reports[f"bm25 >> classify + BM25 vote (w={weight:.1f}, {describe(cut)}, tuned on val)"] = evaluate(
        val, predicted_sets(voted, cut), run_sets(voted))

    def tuned_fusion(part: QuestTask):
        w, c, _ = tune_fusion(Run({q: classified.get(q, []) for q in part.gold}), retrieved, part.gold)
        return lambda ids: predicted_sets(fused_run(Run({q: classified.get(q, []) for q in ids}), retrieved, w), c)

    held_out["bm25 >> classify + BM25 vote (w and rule tuned)"] = evaluate(val, held_out_sets(val, tuned_fusion),
                                                                           run_sets(voted))
    only_bm25 = fused_run(classified, retrieved, 1.0)
    bm25_cut, _ = tune_cut(only_bm25, gold)
    reports[f"bm25 score alone, cut by the rule ({describe(bm25_cut)}, tuned on val)"] = evaluate(
        val, predicted_sets(only_bm25, bm25_cut), run_sets(only_bm25))
    if args.update_record is not None:
        from sleuth.systems.quest.classifier_training import write_training_record

        record.setdefault("retriever_weights", {})["bm25"] = weight
        record.setdefault("cuts", {})["bm25"] = cut.record()
        record.setdefault("thresholds", {})["bm25"] = cut.threshold
        not_weight, setops_cut = anchored_cut
        record["cuts"]["bm25+setops"] = setops_cut.record()
        record["thresholds"]["bm25+setops"] = setops_cut.threshold
        record.setdefault("not_weights", {})["bm25+setops"] = not_weight
        write_training_record(args.update_record, record)
    title = f"QUEST val, {len(val.queries)} queries ({', '.join(args.domains)}), proxy corpus"
    tables = [overall_table(f"{title}: rules tuned on val (the paper's protocol)", reports),
              overall_table(f"{title}: held out (two folds: rule tuned on one half of val, measured on the other)",
                            held_out),
              template_table("F1 per template, rules tuned on val", reports, "F1"),
              template_table("F1 per template, held out", held_out, "F1")]
    training = {k: v for k, v in record.items() if k not in ("losses", "train_query_ids", "tune_query_ids", "sweeps")}
    notes = [f"corpus: {documents} ({len(ws.bm25().docstore):,} documents)",
             f"classifier: {classifier_dir}; candidates: BM25 top {args.candidates}; setops adds each positive "
             f"constraint's BM25 top {args.expand_depth}; runs: {args.runs or 'classified now'}",
             f"training: {training.get('steps')} steps, {training.get('examples_seen')} examples, "
             f"{training.get('examples_per_second')} examples/s, {training.get('train_seconds')} s"]
    return Report(tables, {"val_tuned": reports, "held_out": held_out, "training": training}, notes)


def anchored_rows(val: QuestTask, classified: Run, constraints: Run, reports: dict[str, dict],
                  held_out: dict[str, dict]) -> tuple[float, SetCut]:
    """The anchored set-operation variant (whole-query score AND the constraints, soft NOT; the classify run's
    candidates, no expansion) from the two scored runs: its rows, and its val-tuned not_weight and rule."""
    parsed = {q.id: parse_query(q.text) for q in val.queries}
    weight, cut, _ = tune_anchored(classified, constraints, parsed, val.gold)
    scored = anchored_run(classified, constraints, parsed, weight)
    reports[f"bm25 >> setops anchored (not_weight {weight}, {describe(cut)}, tuned on val)"] = evaluate(
        val, predicted_sets(scored, cut), run_sets(scored))

    def tuned(part: QuestTask):
        w, c, _ = tune_anchored(restrict_to(classified, part.gold), constraints, parsed, part.gold)
        return lambda ids: predicted_sets(anchored_run(restrict_to(classified, ids), constraints, parsed, w), c)

    held_out["bm25 >> setops anchored (not_weight and rule tuned)"] = evaluate(val, held_out_sets(val, tuned),
                                                                              run_sets(scored))
    return weight, cut


def restrict_to(run: Run, ids) -> Run:
    return Run({q: run.get(q, []) for q in ids})


def describe(cut: SetCut) -> str:
    text = f"t={cut.threshold:.2f}"
    if cut.gap is not None:
        text += f", gap {cut.gap:.1f}"
    return text + (", keep top" if cut.keep_top else "")


def overall_table(title: str, reports: dict[str, dict]) -> ResultTable:
    table = ResultTable(title, ["system"] + list(MEASURES))
    for name, report in reports.items():
        table.add(name, *(report["overall"].get(m, float("nan")) for m in MEASURES))
    return table


def template_table(title: str, reports: dict[str, dict], measure: str) -> ResultTable:
    first = next(iter(reports.values()))
    table = ResultTable(title, ["system"] + [f"{SYMBOLS[t]} (n={first['count'].get(t, 0)})" for t in TEMPLATES])
    for name, report in reports.items():
        table.add(name, *(report["per_template"].get(t, {}).get(measure, float("nan")) for t in TEMPLATES))
    return table


if __name__ == "__main__":
    bench_main(NAME, build_parser(), run)
