"""`sleuth quest ...`: set-seeking retrieval on QUEST (Malaviya et al., ACL 2023).

    sleuth quest corpus train.jsonl val.jsonl --out proxy.jsonl      # proxy corpus from attribution sentences
    sleuth quest predict val.jsonl --documents proxy.jsonl --out pred.jsonl   # quest-dense-classify
    sleuth quest eval val.jsonl --predictions pred.jsonl --by template
    sleuth quest parse val.jsonl                                     # parser accuracy against original_query
    sleuth quest build enwiki.xml.bz2 --out built.jsonl --limits relaxed
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from sleuth.cli.common import DEVICE, console, first_repeat, first_untaken, out
from sleuth.cli.stage_settings import SETTINGS, checked_configs, parse_settings
from sleuth.errors import ConfigError, InputError
from sleuth.overwrite import refuse_overwriting_inputs

quest_app = typer.Typer(help="Set-seeking retrieval on QUEST: train, predict, eval, parse, build, proxy corpus.",
                        no_args_is_help=True)
SET_COLUMNS = ("P", "R", "F1")


def corpus_command(
    examples: list[Path] = typer.Argument(..., help="QUEST example files whose attributions give the sentences."),
    out_path: Path = typer.Option(..., "--out", help="Where to write the documents.jsonl ({title, text})."),
) -> None:
    """Write the proxy corpus: one document per gold title, its verbatim attribution sentences joined (a proxy for
    QUEST's 325k Wikipedia documents, which are not distributed with the examples)."""
    from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents

    refuse_overwriting_inputs(out_path, examples, file=True)
    documents = list(quest_attribution_documents(examples))
    if not documents:
        raise ConfigError(f"no attribution sentences in {', '.join(map(str, examples))}: the proxy corpus is made of "
                          "the examples' metadata.attributions (QUEST's train and val have them), nothing written")
    count = write_quest_documents(out_path, documents)
    console.print(f"wrote {count:,} proxy documents to {out_path}")


def predict_command(
    examples: Path = typer.Argument(..., help="QUEST examples to answer (query; gold docs are not read)."),
    documents: Path = typer.Option(..., help="QUEST corpus documents.jsonl (real or proxy)."),
    pipeline: str = typer.Option("quest-dense-classify", help="Built-in pipeline name, YAML file or stage name (the "
                                                             "default "
                                                             "was chosen on val's tuning half; quest-bm25-classify "
                                                             "needs no dense index)."),
    out_path: Path = typer.Option(..., "--out", help="Predictions file (QUEST example format, with ids)."),
    set_size: int | None = typer.Option(None, min=1, help="Keep only the first N hits as the predicted set (for a "
                                                          "retriever alone); the full ranking stays in metadata."),
    ranking_depth: int = typer.Option(1000, min=1, help="How much of the ranking to keep in metadata.ranking: "
                                                        "a pipeline that classifies its retriever's top k ranks "
                                                        "them all, then the retriever's ranking beyond them."),
    domain: list[str] | None = typer.Option(None, help="Only these domains (repeatable)."),
    max_queries: int | None = typer.Option(None, min=1, help="Only the first N queries."),
    device: str = DEVICE,
    settings: list[str] | None = SETTINGS,
) -> None:
    """Run a pipeline on QUEST queries and write the predicted sets (docs, scores) and rankings."""
    from sleuth.corpus.model import Query
    from sleuth.corpus.quest import write_quest_predictions
    from sleuth.pipelines.config import load_pipeline
    from sleuth.stages.base import transform_counted
    from sleuth.systems.quest.methods import quest_workspace
    from sleuth.systems.quest.ranking import SetWithRanking, set_members
    from sleuth.systems.quest.task import load_task

    refuse_overwriting_inputs(out_path, [examples, documents, pipeline if Path(pipeline).is_file() else None],
                              file=True)
    keys = parse_settings(settings)
    checked_configs([pipeline], keys)
    task = load_task(examples, domain)
    queries = task.queries[:max_queries] if max_queries is not None else task.queries
    stage = load_pipeline(pipeline, quest_workspace(documents, device), keys)
    run = transform_counted(SetWithRanking(stage, ranking_depth), queries, f"predicting with {stage.name}")
    predictions = []
    for query in queries:
        hits = run.get(query.id, [])
        members = set_members(hits)
        chosen = members[:set_size] if set_size is not None else members
        metadata = {"docs": [h.id for h in chosen], "scores": [round(h.score, 6) for h in chosen],
                    "original_query": query.metadata.get("original_query"),
                    "template": query.metadata.get("template"), "domain": query.metadata.get("domain"),
                    "ranking": [h.id for h in hits[:ranking_depth]], "pipeline": stage.name}
        predictions.append(Query(query.id, query.text, metadata))
    write_quest_predictions(out_path, predictions)
    console.print(f"wrote predictions for {len(predictions)} queries to {out_path}")


def eval_command(
    gold: Path = typer.Argument(..., help="Gold QUEST examples."),
    predictions: list[Path] = typer.Option(..., "--predictions", help="Predictions file (repeatable)."),
    by: str | None = typer.Option(None, help="Also break down by 'template' or 'domain'."),
    id_prefix: str | None = typer.Option(None, help="For prediction files without ids: the gold file's prefix "
                                                       "(e.g. 'val'), so line-based ids match."),
    domain: list[str] | None = typer.Option(None, help="Score only the gold queries of these domains (repeatable; "
                                                       "as quest predict --domain)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of tables."),
) -> None:
    """Average set P / R / F1 and Recall@K / MRecall@K (K in 20, 50, 100, 1000) of prediction files, joined to
    gold by query id; every gold query counts (a missing prediction is an empty set), predictions of queries the
    gold file does not hold are left out (with a note)."""
    from sleuth.corpus.quest import read_quest_predictions
    from sleuth.systems.quest.task import evaluate, joined_predictions, load_task

    if by not in (None, "template", "domain"):
        raise ConfigError(f"--by must be 'template' or 'domain', got '{by}'")
    task = load_task(gold, domain)
    reports: dict[str, dict] = {}
    if (twice := first_repeat([path.resolve() for path in predictions])) is not None:
        raise ConfigError(f"--predictions {predictions[twice]} is given twice")
    for path in predictions:
        label = first_untaken((path.stem, f"{path.parent.name}/{path.stem}", str(path)), reports) or str(path.resolve())
        read = read_quest_predictions(path, id_prefix=id_prefix)
        predicted = joined_predictions(task, read, path, gold)
        if len(predicted) < len(read):
            console.print(f"note: {path}: {len(read) - len(predicted):,} of its {len(read):,} predictions are for "
                          f"queries not in {gold}; they are not scored")
        sets = {qid: q.metadata.get("docs") or [] for qid, q in predicted.items()}
        rankings = {qid: q.metadata.get("ranking") or q.metadata.get("docs") or [] for qid, q in predicted.items()}
        reports[label] = evaluate(task, sets, rankings)  # before: by stem, so runA/pred and runB/pred gave one row
        unpredicted = len(task.queries) - len(predicted)
        if unpredicted:  # before: averaged in as zeros without a word (a --domain predict against all of val)
            why = "--domain scores only some domains' queries" if not domain else \
                "predicted with --max-queries, or for other domains or queries"
            console.print(f"note: {path}: {unpredicted:,} of the {len(task.queries):,} gold queries have no prediction "
                          f"and score as empty sets ({why})")
    if as_json:
        print(json.dumps(reports, indent=2))
        return
    out.print(report_table(f"QUEST ({len(task.queries)} queries)", {n: r["overall"] for n, r in reports.items()}))
    if by is not None:
        for name, report in reports.items():
            out.print(report_table(f"{name} by {by}", report[f"per_{by}"], report["count"]))


def report_table(title: str, rows: dict[str, dict[str, float]], counts: dict[str, int] | None = None) -> Table:
    """One row per system or group, a column per measure (4 decimals)."""
    measures = list(next(iter(rows.values()), {}))
    table = Table(title=title)
    table.add_column("")
    if counts is not None:
        table.add_column("n", justify="right")
    for measure in measures:
        table.add_column(measure, justify="right")
    for name, values in rows.items():
        cells = [name] + ([str(counts.get(name, ""))] if counts is not None else [])
        table.add_row(*cells, *(f"{values[m]:.4f}" for m in measures))
    return table


def parse_command(
    examples: Path = typer.Argument(..., help="QUEST examples with original_query."),
    show: int = typer.Option(0, min=0, help="Also print this many parses."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Accuracy of the rule-based query parser against the constraints marked in original_query."""
    from sleuth.systems.quest.parser_eval import parser_accuracy
    from sleuth.systems.quest.query_parser import parse_query
    from sleuth.systems.quest.task import load_task
    from sleuth.systems.quest.templates import SYMBOLS

    task = load_task(examples)
    queries = [q for q in task.queries if q.metadata.get("original_query")]
    if not queries:  # before: an all-zero table of 0 queries, exit 0
        raise InputError("no example has an original_query (the parser is scored against it)", path=examples)
    result = parser_accuracy(queries, where=task.where)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    left_out = len(task.queries) - len(queries)
    note = f"; {left_out} without original_query left out" if left_out else ""
    table = Table(title=f"query parser vs original_query ({result['overall']['count']} queries{note})")
    for column in ("template", "n", "template accuracy", "constraint F1"):
        table.add_column(column, justify="left" if column == "template" else "right")
    for template, row in sorted(result["per_template"].items(), key=lambda item: item[0].count("_")):
        table.add_row(SYMBOLS.get(template, template), str(row["count"]), f"{row['template_accuracy']:.3f}",
                      f"{row['constraint_f1']:.3f}")
    row = result["overall"]
    table.add_row("all", str(row["count"]), f"{row['template_accuracy']:.3f}", f"{row['constraint_f1']:.3f}")
    out.print(table)
    for query in queries[:show]:
        parsed = parse_query(query.text)
        out.print(f"{query.text}  ->  {parsed.symbol}: {' | '.join(parsed.constraints)}")


def build_command(
    dumps: list[Path] = typer.Argument(..., help="MediaWiki XML dumps (.xml, .bz2, .gz) whose article categories "
                                                 "label the entities."),
    out_path: Path = typer.Option(..., "--out", help="Where to write the generated examples (QUEST format)."),
    limits: str = typer.Option("paper", help="Size constraints: 'paper' (section 3.2) or 'relaxed' (small dumps)."),
    per_template: int = typer.Option(200, min=1, help="Queries sampled per template (paper: 200 per template and "
                                                      "domain)."),
    domain: str = typer.Option("wikipedia", help="Domain label written to the examples."),
    seed: int = typer.Option(0, help="Sampling seed."),
) -> None:
    """Generate set-operation queries from Wikipedia categories with the seven templates (paper section 3)."""
    from collections import Counter

    from sleuth.corpus.mediawiki import read_mediawiki
    from sleuth.io import atomic_write_text
    from sleuth.systems.quest.build import PAPER, RELAXED, build_queries
    from sleuth.systems.quest.templates import SYMBOLS, TEMPLATES

    refuse_overwriting_inputs(out_path, dumps, file=True)
    presets = {"paper": PAPER, "relaxed": RELAXED}
    if limits not in presets:
        raise ConfigError(f"--limits must be one of {', '.join(presets)}, got '{limits}'")
    labels = {doc.title: doc.metadata.get("categories", []) for path in dumps for doc in read_mediawiki(path)}
    examples = build_queries(labels, per_template=per_template, limits=presets[limits], domain=domain, seed=seed)
    if not examples:  # an empty file would only replace one that holds queries
        hint = " ('--limits relaxed' suits small dumps)" if limits == "paper" else ""
        raise InputError(f"no category of {len(labels)} articles fits a template under the {limits} limits{hint}; "
                         f"nothing written to {out_path}", path=", ".join(str(d) for d in dumps))
    atomic_write_text(out_path, "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in examples))
    counts = Counter(e["metadata"]["template"] for e in examples)
    console.print(f"{len(labels)} articles -> {len(examples)} queries ({limits} limits): " +
                  ", ".join(f"{SYMBOLS[t]} {counts.get(t, 0)}" for t in TEMPLATES) + f"; wrote {out_path}")


def register(app: typer.Typer, train_app: typer.Typer) -> None:
    """``sleuth quest train|train-dense|predict|eval|parse|build|corpus``; the old ``sleuth quest train`` stays
    hidden."""
    from sleuth.systems.quest.train_cli import train_classifier_command
    from sleuth.systems.quest.train_dense_cli import train_dense_command

    quest_app.command("train")(train_classifier_command)
    quest_app.command("train-dense")(train_dense_command)
    train_app.command("classifier", hidden=True)(train_classifier_command)
    quest_app.command("corpus")(corpus_command)
    quest_app.command("predict")(predict_command)
    quest_app.command("eval")(eval_command)
    quest_app.command("parse")(parse_command)
    quest_app.command("build")(build_command)
    app.add_typer(quest_app, name="quest")
