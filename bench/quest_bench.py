"""QUEST (paper 003) on val under the fixed protocol: every rule tuned on val's tuning half, every figure on its
report half (``sleuth.systems.quest.val_halves``); set P / R / F1, Recall@K and MRecall@K, and F1 per template.

    .venv/bin/python -m bench.quest_bench --classifier DIR --documents proxy.jsonl --runs runs.json

The retriever's top ``--candidates`` are classified once against each whole query and each parsed constraint and
cached in ``--runs`` (with the classifier, corpus and retriever they were scored with), so re-running re-tunes for
free. ``--retriever dense --encoder NAME_OR_PATH`` puts a (trained) dual encoder's candidates in the same table.
``--update-record`` writes the rules chosen on the tuning half into the classifier's training.json (what the
``quest-*-classify`` and ``quest-*-setops`` pipelines read with ``threshold: tuned``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.common import Report, ResultTable, base_parser, bench_main, progress
from sleuth.paths import shared_data_dir
from sleuth.systems.quest.templates import SYMBOLS, TEMPLATES

NAME = "quest_bench"
MEASURES = ("P", "R", "F1", "Recall@20", "Recall@100", "MRecall@20", "MRecall@100")
COMPARED = ("A∩B", "A\\B", "A∩B\\C")  # the templates where the set-operation variant must beat classify


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    folder = shared_data_dir() / "quest"
    parser.add_argument("--classifier", type=Path, default=None, help="classifier directory (default: the shipped)")
    parser.add_argument("--documents", type=Path, default=None, help="QUEST documents.jsonl (default: the proxy "
                                                                     "corpus of train + val under $SLEUTH_HOME)")
    parser.add_argument("--examples", type=Path, default=folder / "val.jsonl", help="val examples")
    parser.add_argument("--domains", nargs="*", default=["films", "books"], help="domains to evaluate")
    parser.add_argument("--retriever", choices=("bm25", "dense"), default="bm25", help="candidate retriever")
    parser.add_argument("--encoder", default="minilm", help="dense encoder: a registered name or a model path")
    parser.add_argument("--candidates", type=int, default=30, help="candidates the classifier reads (pipelines: 30)")
    parser.add_argument("--runs", type=Path, default=None, help="cache of the scored runs (JSON): read when it "
                                                               "exists and matches, else written")
    parser.add_argument("--int8", action="store_true", help="classify with int8 dynamic quantisation (CPU)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--update-record", action="store_true", help="write the rules chosen on the tuning half "
                                                                    "into the classifier's training.json")
    return parser


def proxy_corpus() -> Path:
    """The attribution-sentence proxy corpus of train + val, written once under $SLEUTH_HOME/quest/."""
    from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents
    from sleuth.paths import home_dir

    path = home_dir() / "quest" / "proxy-documents.jsonl"
    if not path.is_file():
        folder = shared_data_dir() / "quest"
        write_quest_documents(path, quest_attribution_documents([folder / "train.jsonl", folder / "val.jsonl"]))
    return path


def run(args: argparse.Namespace) -> Report:
    from sleuth.systems.quest.protocol import CandidateSource, protocol_report

    documents = args.documents or proxy_corpus()
    source = CandidateSource(args.retriever, args.encoder, args.candidates)
    progress(f"scoring (or reading) {source.name} top {args.candidates} candidates, then tuning")
    result = protocol_report(args.classifier, documents, args.examples, source, domains=args.domains,
                             runs_path=args.runs, int8=args.int8, device=args.device,
                             update_record=args.update_record)
    reports, rules = result["report"], result["rules"]
    title = (f"QUEST val report half, {result['report_queries']} queries ({', '.join(args.domains)}), "
             f"{source.name} top {args.candidates}; rules tuned on the tuning half ({result['tune_queries']})")
    overall = ResultTable(title, ["system"] + list(MEASURES))
    for name, rep in reports.items():
        overall.add(name, *(rep["overall"].get(m, float("nan")) for m in MEASURES))
    first = next(iter(reports.values()))
    per_template = ResultTable("F1 per template, report half",
                               ["system"] + [f"{SYMBOLS[t]} (n={first['count'].get(t, 0)})" for t in TEMPLATES])
    for name, rep in reports.items():
        per_template.add(name, *(rep["per_template"].get(t, {}).get("F1", float("nan")) for t in TEMPLATES))
    notes = [f"corpus: {documents}; classifier: {result['classifier']}; runs: {args.runs or 'not cached'}",
             f"rules (tuning half): {rules}",
             "classifier rows rank only the retriever's candidates, so their Recall@100 is Recall@candidates",
             f"set-operation goal: {result['goal']}"]
    if args.update_record:
        notes.append(f"wrote the rules into {result['classifier']}/training.json")
    return Report([overall, per_template], {"report_half": reports, "rules": rules, "goal": result["goal"]}, notes)


if __name__ == "__main__":
    bench_main(NAME, build_parser(), run)
