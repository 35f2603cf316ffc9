"""`sleuth cos train|eval`: training is in train_cli.py; Chain-of-Skills path recall@k and passage EM on HotpotQA dev questions, per chain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from sleuth.cli.common import DEVICE, console, out
from sleuth.errors import ConfigError
from sleuth.overwrite import refuse_overwriting_inputs

cos_app = typer.Typer(help="Chain-of-Skills (multi-expert retrieval chains): training and evaluation.", no_args_is_help=True)


@cos_app.command("eval")
def cos_eval_command(
    questions: list[Path] = typer.Option(..., help="HotpotQA-format dev questions with context and supporting "
                                                   "facts (hotpot_dev_distractor_100.json, "
                                                   "hotpot_dev_distractor_more.json, 2wiki_dev.json; repeatable)."),
    part: str = typer.Option("all", help="Questions evaluated: all, tune (the fixed tuning part: every choice is "
                                         "made there) or report (the rest: report figures); SHA-256 of the id, "
                                         "docs/cos/README.md."),
    pooled: bool = typer.Option(False, "--pooled", help="Retrieve from one pooled corpus: every question's "
                                                       "paragraphs of the --questions files plus --distractors, "
                                                       "not only the evaluated questions' own."),
    distractors: list[Path] = typer.Option([], help="With --pooled: HotpotQA-format files whose context "
                                                    "paragraphs join the corpus (e.g. the training files; "
                                                    "repeatable)."),
    model: str | None = typer.Option(None, help="Default: the trained model shipped with sleuth (cos-minilm-lora). "
                                                "'minilm' = untrained experts (MiniLM copies, untrained span head); "
                                                "or a model directory from `sleuth cos train`."),
    chain: list[str] = typer.Option(["retrieval", "retrieval-2hop", "hotpotqa"],
                                    help="Chains to evaluate: hotpotqa | retrieval | retrieval-2hop (repeatable)."),
    limit: int | None = typer.Option(None, "--max-queries", "--limit", min=1,
                                      help="Evaluate the first N questions only."),
    limits: str = typer.Option("reduced", help="Hop limits: reduced (10/2/3/4/1, the default: minutes for 100 "
                                               "questions on a CPU) or paper (200/5/30/50/2, Ma et al.); the "
                                               "--k-* options override single values."),
    k_retrieval: int | None = typer.Option(None, help="Hop-1 retrieved passages (reduced 10, paper 200)."),
    k_link: int | None = typer.Option(None, help="Linked passages per mention at hop 1 (reduced 2, paper 5)."),
    k_hop1: int | None = typer.Option(None, help="Hop-1 passages kept for hop 2 (reduced 3, paper 30)."),
    k_expanded: int | None = typer.Option(None, help="Expanded-retrieval passages per hop-1 passage (reduced 4, "
                                                     "paper 50)."),
    k_hop2_link: int | None = typer.Option(None, help="Linked passages per mention at hop 2 (reduced 1, paper 2)."),
    k_hop2_rerank: int | None = typer.Option(None, help="Rerank only the best N hop-2 candidates by their path score "
                                                        "without the hop-2 rerank (default: all, as the paper)."),
    hop2_selection: str | None = typer.Option(None, help="Which hop-2 candidates --k-hop2-rerank keeps: path (the "
                                                           "default: the best by path score) | per-hop1 (round "
                                                           "robin over the kept hop-1 passages) | mixed (half "
                                                           "each)."),
    selection_weights: str | None = typer.Option(None, help="A,B: --k-hop2-rerank picks by hop1 + A * hop1_rerank "
                                                            "+ B * hop2 (default: the path score's own, 1.5,1)."),
    hop2_ensemble: list[str] = typer.Option([], help="Another model directory whose reranker the hotpotqa chain's "
                                                     "hop 2 averages with the model's (repeatable)."),
    ablate: list[str] = typer.Option([], help="Run the hotpotqa chain without this skill: linking | expanded | "
                                              "hop2-rerank | fusion (with two rounds of retrieval: 'fusion' gives "
                                              "the paper's order; repeatable; the skill ablation)."),
    shard: str | None = typer.Option(None, help="Evaluate every n-th question from the i-th ('i/n'), over the same "
                                                "corpus: n processes (e.g. on one GPU) share a run; `sleuth cos "
                                                "merge` joins their --json records."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the rows as JSON here."),
    per_question: bool = typer.Option(False, "--per-question", help="With --json: each chain's outcomes per "
                                                                    "question too (for `sleuth cos compare`)."),
    device: str = DEVICE,
    int8: bool = typer.Option(False, "--int8", help="Run the chains on an int8 (dynamically quantised) copy of "
                                                    "the encoder (CPU); the skill indexes stay float32."),
) -> None:
    """Path recall@{1,5,10,20} and passage EM of each chain over the questions' own context paragraphs (or, with
    --pooled, one corpus of every question's paragraphs and the distractors')."""
    from sleuth.corpus.question_split import PARTS
    from sleuth.io import atomic_write_text
    from sleuth.systems.chain_of_skills.chain import ABLATIONS, ChainLimits
    from sleuth.systems.chain_of_skills.evaluation import EVAL_KS, LIMIT_SETS, evaluate_chains, parse_shard
    from sleuth.systems.chain_of_skills.hop2_budget import (
        DEFAULT_HOP2_SELECTION,
        HOP2_SELECTIONS,
        parse_selection_weights,
    )
    from sleuth.systems.chain_of_skills.model import SHIPPED_MODEL, UNTRAINED, model_path

    for file in (*questions, *distractors):
        if not file.is_file():  # before: a folder was "not found" too
            raise ConfigError(f"{'questions' if file in questions else 'distractors'} file "
                              f"{'is a folder; give a file' if file.is_dir() else 'not found'}: {file}")
    if part not in PARTS:
        raise ConfigError(f"--part must be one of {', '.join(PARTS)}, got '{part}'")
    if distractors and not pooled:
        raise ConfigError("--distractors needs --pooled")
    path = model_path(model)
    if path != UNTRAINED and not Path(path).is_dir():
        raise ConfigError(f"model directory not found: {path}")
    if hop2_ensemble and "hotpotqa" not in chain:
        raise ConfigError("--hop2-ensemble reranks the hotpotqa chain's hop 2: add --chain hotpotqa")
    for other in hop2_ensemble:
        if model_path(other) != UNTRAINED and not Path(model_path(other)).is_dir():
            raise ConfigError(f"--hop2-ensemble: model directory not found: {other}")
    if limits not in LIMIT_SETS:
        raise ConfigError(f"--limits must be one of {', '.join(LIMIT_SETS)}, got '{limits}'")
    given = {"k_retrieval": k_retrieval, "k_link": k_link, "k_hop1": k_hop1, "k_expanded": k_expanded,
             "k_hop2_link": k_hop2_link}
    values: dict[str, Any] = {name: LIMIT_SETS[limits][name] if value is None else value
                              for name, value in given.items()}  # hop counts (Any: ChainLimits also has a str field)
    for name, value in values.items():
        if value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    if k_hop2_rerank is not None and k_hop2_rerank < 1:
        raise ConfigError(f"--k-hop2-rerank must be >= 1, got {k_hop2_rerank}")
    for skill in ablate:
        if skill not in ABLATIONS:
            raise ConfigError(f"--ablate must be one of {', '.join(ABLATIONS)}, got '{skill}'")
    hop2_given, hop2_selection = hop2_selection, hop2_selection or DEFAULT_HOP2_SELECTION
    if hop2_selection not in HOP2_SELECTIONS:
        raise ConfigError(f"--hop2-selection must be one of {', '.join(HOP2_SELECTIONS)}, got '{hop2_selection}'")
    if per_question and json_out is None:
        raise ConfigError("--per-question writes into the --json record: give --json FILE")
    check_json_out(json_out, [*questions, *distractors])
    weights = parse_selection_weights(selection_weights) if selection_weights is not None else None
    if ablate and "hotpotqa" not in chain:
        raise ConfigError("--ablate removes skills from the hotpotqa chain: add --chain hotpotqa")
    budget = {"--k-hop2-rerank": k_hop2_rerank, "--hop2-selection": hop2_given,
              "--selection-weights": selection_weights}
    given_budget = [option for option, value in budget.items() if value is not None]
    if given_budget and "hotpotqa" not in chain:
        raise ConfigError(f"{given_budget[0]} sets the hotpotqa chain's hop-2 budget: add --chain hotpotqa")
    if k_hop2_rerank is None and given_budget:
        raise ConfigError(f"{given_budget[0]} chooses which hop-2 candidates --k-hop2-rerank keeps: give "
                          "--k-hop2-rerank N")
    shard_used = parse_shard(shard) if shard is not None else None
    limits_used = ChainLimits(**values, k=max(EVAL_KS), k_hop2_rerank=k_hop2_rerank, hop2_selection=hop2_selection,
                              selection_weights=weights)
    corpus = "pooled" if pooled else "questions"
    stats: dict[str, int] = {}
    rows = [s.row(per_question) for s in evaluate_chains(model, questions, list(dict.fromkeys(chain)), limit, limits_used,
                                             device=device, int8=int8, show_progress=True, part=part,
                                             corpus=corpus, distractors=distractors, stats=stats,
                                             ablate=ablate, shard=shard_used, hop2_ensemble=hop2_ensemble)]
    name = model or SHIPPED_MODEL
    shown = "/".join(str(v) for v in values.values())
    variations = hotpotqa_variations(ablate, k_hop2_rerank, hop2_selection if hop2_given else None,
                                     selection_weights, hop2_ensemble)  # before: said in --json only
    print_rows(f"Chain-of-Skills on {' + '.join(q.name for q in questions)}"
               f"{'' if part == 'all' else f' ({part} part)'}{f' shard {shard}' if shard else ''} "
               f"({rows[0]['questions']} questions, {'pooled ' if pooled else ''}corpus {stats['passages']} "
               f"passages, model {name}{' int8' if int8 else ''}, hop limits {shown}{variations})", rows)
    if json_out is not None:
        recorded = {"model": name, "int8": int8, "questions": " ".join(map(str, questions)), "part": part,
                    "limit": limit,
                    "corpus": {"setting": corpus, "distractors": list(map(str, distractors)),
                               "passages": stats["passages"]},
                    "limits": {**values, "k_hop2_rerank": k_hop2_rerank, "hop2_selection": hop2_selection,
                               **({"selection_weights": list(weights)} if weights else {})},
                    "ablate": ablate, **({"hop2_ensemble": hop2_ensemble} if hop2_ensemble else {}),
                    **({"shard": shard} if shard else {}), "rows": rows}
        atomic_write_text(json_out, json.dumps(recorded, indent=1) + "\n")
        console.print(f"wrote {json_out}")


@cos_app.command("merge")
def cos_merge_command(
    records: list[Path] = typer.Argument(..., help="The --json records of `sleuth cos eval --shard i/n`, one per "
                                                   "shard."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the merged record as JSON here."),
) -> None:
    """The rows of one `sleuth cos eval` run from its shards' records (question-weighted means, seconds summed)."""
    from sleuth.io import atomic_write_text
    from sleuth.systems.chain_of_skills.evaluation import check_record, merge_shards

    check_json_out(json_out, records)
    loaded = []
    for record in records:
        if not record.is_file():
            raise ConfigError(f"shard record not found: {record}")
        try:
            loaded.append(check_record(json.loads(record.read_text(encoding="utf-8")), record, shard=True))
        except json.JSONDecodeError as error:
            raise ConfigError(f"{record}: not a JSON record ({error.msg}, line {error.lineno})") from None
    merged = merge_shards(loaded, records)
    print_rows(f"Chain-of-Skills, {merged['shards']} shards merged ({merged['rows'][0]['questions']} questions, "
               f"part {merged.get('part', 'all')}, corpus {merged['corpus']['passages']} passages, model "
               f"{merged['model']})", merged["rows"])
    if json_out is not None:
        atomic_write_text(json_out, json.dumps(merged, indent=1) + "\n")
        console.print(f"wrote {json_out}")


@cos_app.command("compare")
def cos_compare_command(
    record: Path = typer.Argument(..., help="A `sleuth cos eval --per-question --json` record (merged or whole)."),
    other: Path | None = typer.Argument(None, help="A second record over the same questions (another model or "
                                                   "limits); without it, two chains of RECORD are compared."),
    chain: str = typer.Option("hotpotqa", help="The chain of RECORD compared (side a)."),
    against: str | None = typer.Option(None, help="The chain it is compared with (side b): of OTHER (default: the "
                                                  "same chain) or of RECORD (default: retrieval-2hop)."),
    samples: int = typer.Option(10_000, min=1, help="Sign flips of the paired randomisation test."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the rows as JSON here."),
) -> None:
    """Paired comparison on the same questions: each measure's means, the questions each side wins, and a two-sided
    paired randomisation p-value (a chain against two rounds of retrieval, or one model against another)."""
    from sleuth.corpus.jsonfile import load_json
    from sleuth.io import atomic_write_text
    from sleuth.systems.chain_of_skills.evaluation import check_record
    from sleuth.systems.chain_of_skills.paired import chain_outcomes, compare_outcomes, record_measures

    side_b = against or (chain if other is not None else "retrieval-2hop")
    if other is None and side_b == chain:
        raise ConfigError(f"--against {side_b} is the chain compared: name another chain, or a second record")
    check_json_out(json_out, [record] if other is None else [record, other])
    first = check_record(load_json(record), record)
    second = check_record(load_json(other), other) if other is not None else first
    a, b = chain_outcomes(first, chain, record), chain_outcomes(second, side_b, other or record)
    measures = record_measures(first)
    if record_measures(second) != measures:
        raise ConfigError(f"{other}: its measures differ from {record}'s")
    rows = [m.row() for m in compare_outcomes(a, b, measures, samples=samples)]
    name_b = f"{other}: {side_b}" if other is not None else side_b
    print_rows(f"a = {record}: {chain}, b = {name_b} ({len(a)} questions; p: paired randomisation, {samples:,} "
               "sign flips)", rows)
    if json_out is not None:
        atomic_write_text(json_out, json.dumps({"a": {"record": str(record), "chain": chain},
                                                "b": {"record": str(other or record), "chain": side_b},
                                                "questions": len(a), "samples": samples, "rows": rows},
                                               indent=1) + "\n")
        console.print(f"wrote {json_out}")


def check_json_out(json_out: Path | None, inputs: list[Path]) -> None:
    """``--json`` checked before anything runs: a file (not a folder) that can be written and is none of the
    inputs."""
    if json_out is not None:
        refuse_overwriting_inputs(json_out, inputs, option="--json", file=True)


def print_rows(title: str, rows: list[dict]) -> None:
    """Rows of chain scores as one table (per-question outcomes are left out)."""
    table = Table(title=title)
    columns = [column for column in rows[0] if column != "per_question"]
    for column in columns:
        table.add_column(column, justify="left" if column in ("chain", "measure") else "right")
    for row in rows:
        table.add_row(*(str(row[column]) for column in columns))
    out.print(table)


def register(app: typer.Typer, train_app: typer.Typer) -> None:
    """``sleuth cos train|eval|merge|compare``, and the old ``sleuth cos train`` as a hidden alias."""
    from sleuth.systems.chain_of_skills.train_cli import train_cos_command

    cos_app.command("train")(train_cos_command)
    app.add_typer(cos_app, name="cos")
    train_app.command("cos", hidden=True)(train_cos_command)


def hotpotqa_variations(ablate: list[str], k_hop2_rerank: int | None, hop2_selection: str | None,
                        selection_weights: str | None, hop2_ensemble: list[str]) -> str:
    """``; hotpotqa chain without linking, fusion; hop-2 rerank budget 5 (path)`` for the caption of a table whose
    hotpotqa chain is not the full one, else ``""``."""
    parts = [f"without {', '.join(ablate)}"] if ablate else []
    if k_hop2_rerank is not None:
        chosen = ", ".join(v for v in (hop2_selection, selection_weights) if v)
        parts.append(f"hop-2 rerank budget {k_hop2_rerank}{f' ({chosen})' if chosen else ''}")
    if hop2_ensemble:
        parts.append(f"hop-2 rerankers averaged with {', '.join(hop2_ensemble)}")
    return f"; hotpotqa chain {'; '.join(parts)}" if parts else ""
