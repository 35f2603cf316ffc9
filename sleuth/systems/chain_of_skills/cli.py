"""`sleuth cos train|eval`: training is in train_cli.py; Chain-of-Skills path recall@k and passage EM on HotpotQA dev questions, per chain."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from sleuth.cli.common import console, out
from sleuth.errors import ConfigError

cos_app = typer.Typer(help="Chain-of-Skills (multi-expert retrieval chains): training and evaluation.", no_args_is_help=True)


@cos_app.command("eval")
def cos_eval_command(
    questions: Path = typer.Option(..., help="HotpotQA dev questions with context and supporting facts "
                                             "(e.g. hotpot_dev_distractor_100.json)."),
    model: str = typer.Option("minilm", help="A saved multi-expert model directory (sleuth cos train) or 'minilm' "
                                             "(untrained experts)."),
    chain: list[str] = typer.Option(["retrieval", "hotpotqa"], help="Chains to evaluate: hotpotqa | retrieval | "
                                                                     "retrieval-2hop (repeatable)."),
    limit: int | None = typer.Option(None, help="Evaluate the first N questions only."),
    k_retrieval: int = typer.Option(200, help="Hop-1 retrieved passages."),
    k_link: int = typer.Option(5, help="Linked passages per mention at hop 1."),
    k_hop1: int = typer.Option(30, help="Hop-1 passages kept for hop 2."),
    k_expanded: int = typer.Option(50, help="Expanded-retrieval passages per hop-1 passage."),
    k_hop2_link: int = typer.Option(2, help="Linked passages per mention at hop 2."),
    k_hop2_rerank: int | None = typer.Option(None, help="Rerank only the best N hop-2 candidates by their path score "
                                                        "without the hop-2 rerank (default: all, as the paper)."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the rows as JSON here."),
    device: str = typer.Option("cpu", help="torch device: cpu or cuda."),
    int8: bool = typer.Option(False, "--int8", help="Run the chains on an int8 (dynamically quantised) copy of "
                                                    "the encoder (CPU); the skill indexes stay float32."),
) -> None:
    """Path recall@{1,5,10,20} and passage EM of each chain over the questions' own context paragraphs."""
    from sleuth.io import atomic_write_text
    from sleuth.systems.chain_of_skills.chain import ChainLimits
    from sleuth.systems.chain_of_skills.evaluation import EVAL_KS, evaluate_chains

    if not questions.is_file():
        raise ConfigError(f"questions file not found: {questions}")
    if model != "minilm" and not Path(model).is_dir():
        raise ConfigError(f"model directory not found: {model}")
    if limit is not None and limit < 1:
        raise ConfigError(f"--limit must be >= 1, got {limit}")
    values = {"k_retrieval": k_retrieval, "k_link": k_link, "k_hop1": k_hop1, "k_expanded": k_expanded,
              "k_hop2_link": k_hop2_link}
    for name, value in values.items():
        if value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be >= 1, got {value}")
    if k_hop2_rerank is not None and k_hop2_rerank < 1:
        raise ConfigError(f"--k-hop2-rerank must be >= 1, got {k_hop2_rerank}")
    limits = ChainLimits(**values, k=max(EVAL_KS), k_hop2_rerank=k_hop2_rerank)
    rows = [s.row() for s in evaluate_chains(model, questions, list(dict.fromkeys(chain)), limit, limits,
                                             device=device, int8=int8)]
    table = Table(title=f"Chain-of-Skills on {questions.name} ({rows[0]['questions']} questions, model {model})")
    for column in rows[0]:
        table.add_column(column, justify="left" if column == "chain" else "right")
    for row in rows:
        table.add_row(*(str(v) for v in row.values()))
    out.print(table)
    if json_out is not None:
        atomic_write_text(json_out, json.dumps({"model": model, "int8": int8, "questions": str(questions), "rows": rows},
                                               indent=1) + "\n")
        console.print(f"wrote {json_out}")


def register(app: typer.Typer, train_app: typer.Typer) -> None:
    """``sleuth cos train|eval``, and the old ``sleuth cos train`` as a hidden alias."""
    from sleuth.systems.chain_of_skills.train_cli import train_cos_command

    cos_app.command("train")(train_cos_command)
    app.add_typer(cos_app, name="cos")
    train_app.command("cos", hidden=True)(train_cos_command)
