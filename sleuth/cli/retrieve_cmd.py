"""`sleuth retrieve`: run a pipeline (or an index folder) over a file of queries and write a run file (TREC, or JSON
Lines), as Pyserini's batch search does; no judgements needed."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import typer
from rich.text import Text

from sleuth.cli import corpus_options
from sleuth.cli.common import (
    DEVICE,
    build_note,
    console,
    pipeline_corpus,
    refuse_given,
    refuse_misplaced_corpus_options,
    workspace,
)
from sleuth.cli.stage_settings import SETTINGS, checked_configs, config_inputs, parse_settings
from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.overwrite import check_writable, refuse_overwriting_inputs
from sleuth.pipelines.config import build_pipeline
from sleuth.pipelines.front import read_queries
from sleuth.progress import format_duration
from sleuth.stages.base import Stage, check_query, transform_counted
from sleuth.stages.run import Run, trec_id_problem
from sleuth.stages.run_formats import check_trec_ids, is_jsonl_run, write_run


def retrieve(
    ctx: typer.Context,
    queries: Path = typer.Argument(..., help="Queries: TREC topics (TSV or SGML), a BEIR queries.jsonl or folder, "
                                             "a SMART query file, a question JSONL, or a SQuAD, HotpotQA, "
                                             "2WikiMultihopQA or MuSiQue file."),
    out: Path = typer.Option(..., "--out", "-o", help="The run file to write: TREC (qid Q0 docid rank score tag), "
                                                      "or JSON Lines when named .jsonl (ids with spaces too)."),
    corpus: Path | None = typer.Option(None, help="Corpus to search (default: the bundled SciFact)."),
    fmt: corpus_options.Format = None,
    field: corpus_options.Fields = None,
    splitter: corpus_options.Splitter = "none",
    window_words: corpus_options.WindowWords = 100,
    distractors: corpus_options.Distractors = None,
    pipeline: str = typer.Option("bm25", help="Built-in pipeline name, YAML file or stage name (its keys from --set)."),
    index: Path | None = typer.Option(None, help="Search this index folder directly (instead of a corpus and "
                                                 "--pipeline)."),
    k: int = typer.Option(1000, "-k", "--hits", min=1, help="Results per query written (at most what the "
                                                            "pipeline returns)."),
    tag: str | None = typer.Option(None, help="The run's tag, the file's last column (default: the pipeline's "
                                              "name)."),
    split: corpus_options.Split = "train",
    max_queries: int | None = typer.Option(None, min=1, help="Retrieve for the first N queries only."),
    device: str = DEVICE,
    ray_address: str | None = typer.Option(None, help="Spread the queries over Ray workers: local (a bounded "
                                                         "local Ray), auto or HOST:PORT. Needs sleuth\\[ray]."),
    ray_workers: int = typer.Option(2, min=1, help="Workers with --ray-address (each loads the pipeline once)."),
    settings: list[str] | None = SETTINGS,
) -> None:
    """Run a pipeline over a file of queries and write a TREC (or JSON Lines) run file."""
    check_writable(out, "--out", file=True)  # before any query is read or index built
    refuse_misplaced_corpus_options(ctx, splitter, split_read=queries.is_dir())
    if index is not None:
        refuse_given(ctx, ("corpus", "fmt", "field", "splitter", "window_words", "distractors", "pipeline", "settings"),
                     "--index searches an index folder")
    elif distractors and corpus is None:
        raise ConfigError("--distractors go with --corpus (the documents they are mixed with)")
    keys = parse_settings(settings)
    config = checked_configs([pipeline], keys)[0] if index is None else None
    refuse_overwriting_inputs(out, [queries, corpus, index, *(distractors or []),
                                    *(config_inputs(config) if config is not None else [])])
    name = str(config["name"]) if config is not None else Path(str(index)).name
    run_tag = tag if tag is not None else name
    trec = not is_jsonl_run(out)
    if trec and (why := trec_id_problem(run_tag)):
        raise ConfigError(f"--tag {run_tag!r} {why}, which a TREC run file cannot hold (its columns are split on "
                          f"whitespace){'' if tag is not None else '; give --tag'}")
    query_list = checked_queries(read_queries(queries, split), queries, max_queries, trec)
    if ray_address is None:
        refuse_given(ctx, ("ray_workers",), "without --ray-address nothing runs on Ray")
    builder, built = stage_builder(index, corpus, fmt, field, distractors, pipeline, k, device,
                                   splitter=splitter, window_words=window_words,
                                   on_ray=ray_address is not None, stage_keys=keys, config=config)
    if ray_address is None:
        stage = builder()  # index builds show their progress here, and are said apart in the summary
        started = time.perf_counter()
        run = transform_counted(stage, query_list, f"retrieving with {name}")
    else:
        from sleuth.scale.ray_eval import ray_pipelines
        from sleuth.scale.session import ray_session

        started = time.perf_counter()  # the workers' loading too
        with ray_session(ray_address):
            stage = ray_pipelines({name: builder}, ray_workers)[name]
            run = transform_counted(stage, query_list, f"retrieving with {name} on {ray_workers} Ray workers")
    if not isinstance(run, Run):
        raise ConfigError(f"pipeline '{name}' returned {type(run).__name__}, not a sleuth Run")
    run = Run({q.id: run.get(q.id, []) for q in query_list}).cut(k)
    seconds = time.perf_counter() - started
    if trec:
        check_trec_ids(run, name)  # e.g. HotpotQA's paragraphs, whose ids are their titles
    write_run(run, out, tag=run_tag)
    console.print(Text(summary(out, run, seconds, built)), soft_wrap=True)


def checked_queries(query_list: list[Query], path: Path, max_queries: int | None, trec: bool = True) -> list[Query]:
    """The queries to run (the first ``max_queries``): each one non-empty, within the length limit and (``trec``)
    with an id a TREC run file can hold; none at all is a ConfigError naming the file."""
    if max_queries is not None:
        query_list = query_list[:max_queries]
    if not query_list:
        raise ConfigError(f"{path}: no queries in it")
    for query in query_list:
        if trec and (why := trec_id_problem(query.id)):
            raise ConfigError(f"{path}: query id {query.id!r} {why}, which a TREC run file cannot hold; name the "
                              f"--out file .jsonl to write JSON Lines")
        check_query(query)
    return query_list


def stage_builder(index: Path | None, corpus: Path | None, fmt: str | None, field: list[str] | None,
                  distractors: list[Path] | None, pipeline: str, k: int, device: str, on_ray: bool = False,
                  stage_keys: dict | None = None, config: dict | None = None, splitter: str = "none",
                  window_words: int = 100) -> tuple[Callable[[], Stage], dict[str, float]]:
    """A builder of the stage to run (``on_ray``: a picklable one, for each Ray worker): an index folder's own (``k``
    results deep), else the pipeline over the corpus (with its distractors; none for a pipeline that reads no
    corpus, such as one of run files, when no ``--corpus`` is given: :func:`pipeline_corpus`, told by its checked
    ``config``, which a pipeline needs), checked here, with ``stage_keys`` set (as ``--set`` sets them). Also
    returns the seconds each index built in this process took, by cache key (filled as the builder runs; Ray
    workers' builds are not seen)."""
    if index is not None:
        from sleuth.pipelines.index_stage import stage_for_index

        return partial(stage_for_index, index.resolve(), k, device), {}
    if config is None:
        raise ConfigError(f"pipeline '{pipeline}': its checked config is needed to build it")
    source = pipeline_corpus([config], corpus, fmt, field, splitter=splitter, window_words=window_words)
    if source is not None and distractors:
        from sleuth.pipelines.mixed_source import with_distractors

        source = with_distractors(source, distractors)
    ws = workspace(source, device)
    if not on_ray:
        return partial(build_pipeline, config, ws), ws.build_seconds
    from sleuth.scale.ray_eval import pipeline_builder

    return pipeline_builder(pipeline, ws.corpus, ws.home, ws.device, stage_keys), {}


def summary(out: Path, run: Run, seconds: float, built: dict[str, float] | None = None) -> str:
    """``wrote run.trec: 43 queries, 43,000 hits (2 queries without any) in 3.1 s, 14 queries/s``, ``seconds`` being
    the retrieval's, then the indexes built before it: ``; built 1 index in 3 min 6 s (dense-…: 3 min 6 s)``."""
    hits = sum(len(ranking) for ranking in run.values())
    empty = sum(1 for ranking in run.values() if not ranking)
    without = f" ({empty:,} quer{'y' if empty == 1 else 'ies'} without any)" if empty else ""
    rate = len(run) / seconds if seconds > 0 else float("inf")
    speed = f"{rate:,.0f}" if rate >= 10 else f"{rate:.2g}"  # before: "0 queries/s" of a chain at 0.2
    return (f"wrote {out}: {len(run):,} queries, {hits:,} hits{without} in {format_duration(seconds)}, "
            f"{speed} queries/s{f'; {build_note(built)}' if built else ''}")


def register(app: typer.Typer) -> None:
    app.command()(retrieve)
