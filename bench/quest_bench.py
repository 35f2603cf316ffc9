"""QUEST (paper 003) on the validation split: retrievers alone, with the relevance classifier, and with
set-operation-aware scoring, overall and per template; set P / R / F1, Recall@K and MRecall@K side by side.

    .venv/bin/python -m bench.quest_bench --classifier ~/.cache/sleuth/models/quest-classifier

The corpus is the proxy built from the examples' attribution sentences (``--documents`` takes a real QUEST
documents.jsonl instead). Only films and books have attributions, so by default only their queries are evaluated.
Classifier systems use the thresholds ``sleuth quest train`` tuned (training.json); a retriever alone predicts
its top k, with k tuned on the same held-out training queries. The classifier systems run on a per-template sample
of the queries (``--per-template``) because cross-encoder scoring on a shared 2-core CPU is slow.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.common import Report, ResultTable, base_parser, bench_main, progress
from sleuth.paths import home_dir, shared_data_dir
from sleuth.stages.run import Run
from sleuth.systems.quest.methods import (
    RETRIEVERS,
    default_classifier_dir,
    quest_workspace,
    restrict,
    retriever,
    set_operations,
    top_k_sets,
    tune_top_k,
)
from sleuth.systems.quest.set_metrics import RECALL_KS
from sleuth.systems.quest.task import QuestTask, evaluate, load_task, run_sets
from sleuth.systems.quest.templates import SYMBOLS, TEMPLATES

NAME = "quest_bench"
MEASURES = ("P", "R", "F1") + tuple(f"{m}@{k}" for k in RECALL_KS for m in ("Recall", "MRecall"))


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--documents", type=Path, help="QUEST documents.jsonl (default: the proxy corpus)")
    parser.add_argument("--classifier", type=Path, default=None, help="trained classifier directory")
    parser.add_argument("--domains", nargs="*", default=["films", "books"], help="domains to evaluate")
    parser.add_argument("--per-template", type=int, default=10, help="val queries per template for the "
                                                                     "classifier systems")
    parser.add_argument("--candidates", type=int, default=100, help="retriever candidates the classifier reads")
    parser.add_argument("--int8", action="store_true", help="int8 dynamic quantisation for classification")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-classifier", action="store_true", help="retrievers and set-operation rankings only")
    parser.add_argument("--setops-variants", action="store_true", help="also rank with the product t-norm and "
                                                                        "without constraint expansion")
    return parser


def proxy_corpus() -> Path:
    """The attribution-sentence proxy corpus of train + val, written once under $SLEUTH_HOME/quest/."""
    from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents

    path = home_dir() / "quest" / "proxy-documents.jsonl"
    if not path.is_file():
        folder = shared_data_dir() / "quest"
        write_quest_documents(path, quest_attribution_documents([folder / "train.jsonl", folder / "val.jsonl"]))
    return path


def per_template_sample(task: QuestTask, count: int) -> QuestTask:
    """The first ``count`` queries of each template, in file order."""
    taken: dict[str, int] = {}
    chosen = []
    for query in task.queries:
        template = query.metadata.get("template")
        if taken.get(template, 0) < count:
            taken[template] = taken.get(template, 0) + 1
            chosen.append(query)
    return QuestTask(chosen)


def row(report: dict, group: str | None = None) -> list[float]:
    values = report["overall"] if group is None else report["per_template"].get(group, {})
    return [values.get(m, float("nan")) for m in MEASURES]


def run(args: argparse.Namespace) -> Report:
    from sleuth.systems.quest.classifier_training import read_training_record
    from sleuth.systems.quest.classify import Classify
    from sleuth.systems.quest.set_ops import SetOperations

    folder = shared_data_dir() / "quest"
    documents = args.documents or proxy_corpus()
    ws = quest_workspace(documents, args.device)
    val = load_task(folder / "val.jsonl", args.domains)
    sample = per_template_sample(val, 3 if args.quick else args.per_template)
    classifier_dir = args.classifier or default_classifier_dir()
    record = read_training_record(classifier_dir)
    train = load_task(folder / "train.jsonl", skip_empty=True)
    tune = train.subset(record.get("tune_query_ids", []))
    notes = [f"corpus: {documents} ({len(ws.bm25().docstore):,} documents)",
             f"val queries: {len(val.queries)} ({', '.join(args.domains)}); classifier systems on a per-template "
             f"sample of {len(sample.queries)}", f"classifier: {classifier_dir}; thresholds {record.get('thresholds')}"
             f"; tuned on {len(tune.queries)} held-out train queries; candidates {args.candidates}; "
             f"int8 {args.int8}"]
    reports: dict[str, dict] = {}
    sample_reports: dict[str, dict] = {}
    for kind in RETRIEVERS:
        progress(f"{kind}: top 1000 and set-operation-aware ranking for {len(val.queries)} val and "
                 f"{len(tune.queries)} tuning queries")
        stage = retriever(ws, kind, 1000)
        variants = {"": ("min", 1000)}
        if args.setops_variants:
            variants.update({" product": ("product", 1000), " no-expansion": ("min", 0)})
        systems = {f"{kind} alone": stage.transform}
        for suffix, (t_norm, depth) in variants.items():
            reranker = SetOperations(retriever(ws, kind, 1000), normalise="minmax", t_norm=t_norm, expand=stage,
                                     expand_depth=depth, name=f"{kind}-setops")
            systems[f"{kind} setops-ranking{suffix}"] = setops_ranking(stage, reranker)
        for name, rank in systems.items():
            ranking = Run({qid: hits[:1000] for qid, hits in rank(val.queries).items()})
            k, _ = tune_top_k(rank(tune.queries), tune.gold) if tune.queries else (10, [])
            reports[f"{name} (top {k})"] = evaluate(val, top_k_sets(ranking, k), run_sets(ranking))
            sample_reports[f"{name} (top {k})"] = evaluate(sample, top_k_sets(ranking, k), run_sets(ranking))
    if record and not args.no_classifier:
        from sleuth.models.cross_encoder import CrossEncoderClassifier

        classify = Classify(CrossEncoderClassifier(str(classifier_dir), device=args.device, int8=args.int8),
                            threshold=None, show_progress=True)
        thresholds = record.get("thresholds", {})
        for kind in RETRIEVERS:
            candidates = restrict(retriever(ws, kind, args.candidates).transform(sample.queries), sample.queries)
            for label, stage, system in ((f"{kind} >> classifier", classify, kind),
                                         (f"{kind} >> setops classifier", set_operations(classify), f"{kind}+setops")):
                if system not in thresholds:
                    continue
                progress(f"{label}: classifying {sum(map(len, candidates.values())):,} candidates")
                scored = stage.transform(sample.queries, candidates)
                threshold = thresholds[system]
                predicted = {qid: [h.id for h in hits if h.score > threshold] for qid, hits in scored.items()}
                sample_reports[f"{label} (t={threshold:.2f})"] = evaluate(sample, predicted, run_sets(scored))
    tables = [overall_table(f"QUEST val, {len(val.queries)} queries ({', '.join(args.domains)}): retrievers alone "
                            "and set-operation-aware ranking", reports),
              overall_table(f"QUEST val sample, {len(sample.queries)} queries: every system", sample_reports),
              template_table(f"F1 per template (sample of {len(sample.queries)})", sample_reports, "F1"),
              template_table(f"Recall@100 per template (all {len(val.queries)} val queries)", reports, "Recall@100")]
    return Report(tables, {"full": reports, "sample": sample_reports, "training": {
        k: v for k, v in record.items() if k not in ("losses", "train_query_ids", "tune_query_ids")}}, notes)


def setops_ranking(stage, reranker):
    """A ranking function: the retriever's top 1000 re-ranked (and expanded) by set-operation-aware scoring."""
    return lambda queries: reranker.transform(queries, stage.transform(queries))


def overall_table(title: str, reports: dict[str, dict]) -> ResultTable:
    table = ResultTable(title, ["system"] + list(MEASURES))
    for name, report in reports.items():
        table.add(name, *row(report))
    return table


def template_table(title: str, reports: dict[str, dict], measure: str) -> ResultTable:
    first = next(iter(reports.values()))
    table = ResultTable(title, ["system"] + [f"{SYMBOLS[t]} (n={first['count'].get(t, 0)})" for t in TEMPLATES])
    for name, report in reports.items():
        table.add(name, *(report["per_template"].get(t, {}).get(measure, float("nan")) for t in TEMPLATES))
    return table


if __name__ == "__main__":
    bench_main(NAME, build_parser(), run)
