"""`sleuth fuse`: fuse run files into one run file (reciprocal rank fusion, or a weighted sum of normalised scores),
as Pyserini's fusion does; no queries, corpus or index needed (the :class:`~sleuth.stages.fusion.Fuse` stage over
:class:`~sleuth.stages.run_file.RunFile` branches)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.text import Text

from sleuth.cli.common import console, refuse_given
from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.overwrite import check_writable, refuse_overwriting_inputs
from sleuth.stages.fusion import METHODS, NORMALISERS, Fuse, fusion_settings
from sleuth.stages.run import trec_id_problem
from sleuth.stages.run_file import RunFile
from sleuth.stages.run_formats import check_trec_ids, is_jsonl_run, write_run


def fuse(
    ctx: typer.Context,
    runs: list[Path] = typer.Argument(..., help="Run files to fuse, two or more (TREC, or JSON Lines named .jsonl)."),
    out: Path = typer.Option(..., "--out", "-o", help="The fused run file: TREC, or JSON Lines when named .jsonl."),
    method: str = typer.Option("rrf", help=f"{' or '.join(METHODS)}: reciprocal rank fusion, or the sum of each "
                                           "run's normalised scores times its weight."),
    weight: list[float] | None = typer.Option(None, "--weight", help="One weight per run, in their order "
                                              "(repeatable; default 1 each)."),
    normalise: str | None = typer.Option(None, help=f"Scores of --method weighted: {', '.join(NORMALISERS)} "
                                                    "(default minmax)."),
    rrf_k: int = typer.Option(60, min=1, help="The k of reciprocal rank fusion: weight / (k + rank)."),
    depth: int = typer.Option(1000, min=1, help="Hits of each run, per query, that take part."),
    k: int = typer.Option(1000, "-k", "--hits", min=1, help="Results per query written."),
    tag: str = typer.Option("fused", help="The fused run's tag, the TREC file's last column."),
) -> None:
    """Fuse run files into one run file (reciprocal rank fusion, or weighted scores)."""
    check_writable(out, "--out", file=True)
    refuse_overwriting_inputs(out, runs)
    if len(runs) < 2:
        raise ConfigError(f"fuse needs two or more run files, got {len(runs)}")
    if not is_jsonl_run(out) and (why := trec_id_problem(tag)):
        raise ConfigError(f"--tag {tag!r} {why}, which a TREC run file cannot hold")
    fusion_settings(method, weight, normalise, len(runs))  # before the files are read
    if method == "weighted":  # before: ignored, the same file written with or without it
        refuse_given(ctx, ("rrf_k",), "--method weighted sums normalised scores (no reciprocal ranks)")
    stages = [RunFile(path, name=f"{path.name}#{i}") for i, path in enumerate(runs, start=1)]  # read and checked
    fused_stage = Fuse(stages, method=method, weights=weight, normalise=normalise, rrf_k=rrf_k, depth=depth,
                       name=tag)
    qids = list(dict.fromkeys(qid for stage in stages for qid in stage.run))  # in the order the files give them
    fused = fused_stage.transform([Query(qid, qid) for qid in qids]).cut(k)
    if not is_jsonl_run(out):
        check_trec_ids(fused, "", "the fused run")
    write_run(fused, out, tag=tag)
    hits = sum(len(ranking) for ranking in fused.values())
    console.print(Text(f"wrote {out}: {len(fused):,} queries, {hits:,} hits, {method} of {len(runs)} runs"),
                  soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command()(fuse)
