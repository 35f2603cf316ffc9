"""`sleuth eval`: run pipelines on a test collection and print one comparison table."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import typer
from rich.text import Text

from sleuth.cli import corpus_options
from sleuth.cli.common import (
    DEVICE,
    build_note,
    console,
    corpus_source,
    first_repeat,
    first_untaken,
    note_bundled,
    out,
    refuse_given,
    refuse_misplaced_corpus_options,
    workspace,
)
from sleuth.cli.stage_settings import SETTINGS, checked_configs, config_inputs, parse_settings, settings_line
from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.corpus.formats import is_smart_query_file, read_queries
from sleuth.corpus.model import Qrels, Query
from sleuth.errors import ConfigError
from sleuth.eval.answers import DEFAULT_KS
from sleuth.eval.experiment import Experiment, JudgedQueries, run_file_names
from sleuth.eval.self_hits import exclusion_note
from sleuth.overwrite import check_writable, clashing_input, refuse_overwriting_inputs
from sleuth.pipelines.config import load_pipeline, reads_corpus
from sleuth.pipelines.sources import refuse_corpus_options
from sleuth.stages.run_file import RunFile
from sleuth.stages.run_formats import run_name

DEFAULT_METRICS = ("nDCG@10", "R@100")
DEFAULT_DEPTH = 1000


@dataclass
class Targets:
    """What is evaluated: pipelines (built-in names or YAML files), index folders (``depth`` results each) and TREC
    run files, and the names the table shows for them, pipelines first (see :func:`table_names`)."""

    names: list[str]
    indexes: list[Path] = field(default_factory=list)
    depth: int = DEFAULT_DEPTH
    titles: list[str] = field(default_factory=list)
    runs: dict[str, Path] = field(default_factory=dict)  # --run files by the name the table shows


@dataclass
class Task:
    """The queries, their judgements (None: answers only) and whether answer accuracy is measured; from one pass
    over the corpus (None: not read), the texts of the documents with the queries' ids and the judged document ids
    the corpus has."""

    queries: list[Query]
    qrels: Qrels | None
    with_answers: bool = False
    corpus_texts: dict[str, str] | None = None
    corpus_ids: set[str] | None = None


@dataclass
class ReportOptions:
    """How the experiment is measured and written: IR measures, answer cut-offs, run files, JSON, self-hits."""

    metrics: list[str] | None = None
    top_k: list[int] | None = None
    runs_dir: Path | None = None
    as_json: bool = False
    exclude_self: bool | None = None  # None: on where the queries are corpus documents (see Experiment)
    per_query: Path | None = None
    stage_keys: dict[str, dict] = field(default_factory=dict)  # --set: every pipeline's (and the caption's)


def load_task(dataset: Path | None, split: str, corpus: Path | None, queries: Path | None,
              qrels: Path | None, questions: Path | None, need_corpus: bool = True,
              runs_only: bool = False) -> tuple[Path | None, list[Query], Qrels | None]:
    """Work out corpus, queries and judgements from a BEIR folder or explicit files (the corpus only when
    ``need_corpus``: pipelines need it, --index folders do not; with ``runs_only``, only run files evaluated, the
    queries may be left out: the judged query ids stand for them, as for trec_eval)."""
    if questions is not None:
        from sleuth.corpus.questions import gold_passage_qrels, read_questions

        if corpus is None and need_corpus:
            raise ConfigError("--questions needs --corpus (the passages to search) or --index folders")
        query_list = list(read_questions(questions))
        return corpus, query_list, gold_passage_qrels(query_list)  # judged by gold passages where all name one
    if dataset is None and corpus is None and queries is None and qrels is None:
        dataset = bundled_dataset_dir()
    if dataset is None and corpus is not None and corpus.is_dir() and (corpus / "qrels").is_dir() \
            and queries is None and qrels is None:
        dataset = corpus  # --corpus given a BEIR folder, as `sleuth search --corpus` takes one
    if dataset is not None:
        from sleuth.corpus.beir import load_beir

        beir = load_beir(dataset, split)
        return beir.corpus_path, beir.queries, beir.qrels
    from sleuth.corpus.qrels import read_qrels

    if runs_only and queries is None and qrels is not None:
        judged = read_qrels(qrels)
        return corpus, [Query(qid, qid) for qid in judged], judged  # the text is never read: runs are looked up
    if (corpus is None and need_corpus) or queries is None or qrels is None:
        what = "--corpus, --queries and --qrels" if need_corpus else "--queries and --qrels"
        raise ConfigError(f"give a BEIR folder, or all of {what} (or --questions)")
    from sleuth.corpus.smart import align_query_ids

    judged = read_qrels(qrels)
    topics, note = read_queries(queries), None
    if is_smart_query_file(queries):  # before: TREC topics too, so DL'19 topics were scored on SciFact's judgements
        topics, note = align_query_ids(topics, judged)
    if note:
        console.print(Text(f"note: {note}"))
    return corpus, topics, judged  # the experiment counts and leaves out the topics without judgements


def dataset_task(path: Path | None, fmt: str | None) -> tuple[list[Query], Qrels, bool] | None:
    """The questions a dataset's own file holds, their judgements and whether their answers are measured: a SQuAD
    file (gold paragraphs; answers), a HotpotQA or 2WikiMultihopQA question file (supporting paragraphs, by title),
    a MuSiQue one (supporting paragraphs); None for any other corpus."""
    if path is None or path.is_dir() or fmt not in (None, "squad", "hotpotqa", "musique"):
        return None
    from sleuth.corpus.formats import QUESTION_READERS, detect_format, question_file_format

    kind = fmt or detect_format(path)  # detected as hotpotqa or musique only where it is a question file
    if kind == "squad":
        from sleuth.corpus.squad import read_squad_questions, squad_qrels

        query_list = list(read_squad_questions(path))
        return query_list, squad_qrels(query_list), True
    if kind not in QUESTION_READERS or (fmt is not None and question_file_format(path) != kind):
        return None  # another corpus, or a --format's corpus file (paragraphs, no questions)
    query_list = list(QUESTION_READERS[kind](path))
    key = "supporting_titles" if kind == "hotpotqa" else "supporting_ids"
    # a question without supporting paragraphs (a test file's) is unjudged, counted apart as such (before: judged,
    # scored 0 and averaged in)
    return query_list, {q.id: {doc: 1 for doc in q.metadata[key]} for q in query_list if q.metadata.get(key)}, False


def eval_command(
    ctx: typer.Context,
    dataset: Path | None = typer.Argument(None, help="BEIR folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv); "
                                                        "default: the bundled SciFact."),
    split: corpus_options.Split = "train",
    corpus: Path | None = typer.Option(None, help="Corpus file or folder; a BEIR folder alone brings its queries "
                                                  "and qrels (as DATASET does), a SQuAD, HotpotQA, 2Wiki or MuSiQue "
                                                  "file its questions and gold paragraphs."),
    queries: Path | None = typer.Option(None, help="Queries: BEIR queries.jsonl or TREC topics."),
    qrels: Path | None = typer.Option(None, help="Relevance judgements: TREC qrels or BEIR TSV."),
    questions: Path | None = typer.Option(None, help="QA questions JSONL (id, question, answers) for top-k "
                                                        "answer accuracy (with gold_passage on every line, those "
                                                        "passages as judgements too), or a SQuAD file (its "
                                                        "questions, their gold paragraphs as judgements)."),
    fmt: corpus_options.Format = None,
    distractors: corpus_options.Distractors = None,
    field: corpus_options.Fields = None,
    splitter: corpus_options.Splitter = "none",
    window_words: corpus_options.WindowWords = 100,
    pipeline: list[str] | None = typer.Option(None, help="Pipeline (repeatable): built-in name, YAML file or "
                                                            "stage name; the first is the baseline."),
    metric: list[str] | None = typer.Option(None, help="IR measure (repeatable), e.g. nDCG@10, R@100, RR, AP; "
                                                         "trec_eval's names too (map, ndcg_cut_10)."),
    top_k: list[int] | None = typer.Option(None, "--top-k", min=1, help="Answer accuracy cut-offs (repeatable)."),
    max_queries: int | None = typer.Option(None, min=1, help="Evaluate only the first N queries."),
    runs_dir: Path | None = typer.Option(None, help="Write each pipeline's run file here (TREC; JSON Lines where "
                                                   "an id holds whitespace)."),
    per_query: Path | None = typer.Option(None, "--per-query", help="Write every query's value of every measure "
                                          "here (TSV: pipeline, qid, measure, value; as trec_eval -q)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    device: str = DEVICE,
    index: list[Path] | None = typer.Option(None, help="Evaluate this index folder directly (repeatable; sharded "
                                                          "or not), as well as any --pipeline."),
    depth: int | None = typer.Option(None, min=1, help=f"Results per query retrieved from an --index folder "
                                                       f"(default {DEFAULT_DEPTH:,})."),
    ray_address: str | None = typer.Option(None, help="Spread the queries over Ray workers: local (a bounded "
                                                         "local Ray), auto or HOST:PORT. Needs sleuth\\[ray]."),  # \\[: rich escape
    ray_workers: int = typer.Option(2, min=1, help="Workers per pipeline with --ray-address (each loads it once)."),
    run: list[str] | None = typer.Option(None, "--run", help="A run file (TREC, or JSON Lines named .jsonl) "
                                         "evaluated as one more row (repeatable): FILE, or NAME=FILE to name the "
                                         "row; needs --qrels."),
    exclude_self: bool | None = typer.Option(
        None, "--exclude-self/--no-exclude-self",
        help="Ignore a hit whose id is the query's id (BEIR's convention). Default: on when most queries are "
             "corpus documents (ArguAna, Quora) and the qrels judge no query's own document relevant; said on "
             "stderr and in the table's caption."),
    settings: list[str] | None = SETTINGS,
) -> None:
    """Evaluate pipelines on the same queries: one table, paired t-tests against the first pipeline."""
    if ray_address is None:  # before: ignored, the evaluation ran in process without a word
        refuse_given(ctx, ("ray_workers",), "without --ray-address nothing runs on Ray")
    check_options(dataset, corpus, queries, qrels, questions, pipeline or [], index or [], depth)
    run_files = named_run_files(run or [])
    if run_files and dataset is None and qrels is None and corpus is None:  # not the bundled SciFact's qrels unsaid
        raise ConfigError("--run needs judgements: --qrels FILE (with --queries, or alone for run files only), or "
                          "a BEIR folder (DATASET)")
    names = pipeline or ([] if index or run_files else ["bm25"])
    # fail on a bad config before any index is built
    keys = parse_settings(settings)
    if keys and not names:
        raise ConfigError("--set sets keys of pipeline stages: give a --pipeline (--index folders and --run files "
                          "have none)")
    configs = checked_configs(names, keys)
    refuse_misplaced_corpus_options(ctx, splitter, split_read=dataset is not None and dataset.is_dir())
    titles = table_names([str(config["name"]) for config in configs], names, index or [], list(run_files))
    read_corpus = any(reads_corpus(config["stages"]) for config in configs)  # not: run files, index: paths
    inputs = [dataset, corpus, queries, qrels, questions, *(distractors or []), *(index or []), *run_files.values(),
              *(path for config in configs for path in config_inputs(config))]
    if per_query is not None:  # not after the evaluation
        refuse_overwriting_inputs(per_query, inputs, "--per-query", file=True)
    if runs_dir is not None:
        check_writable(runs_dir, "--runs-dir", folder=True)  # not after the evaluation
        for stem in run_file_names(titles).values():  # two pipelines that would share a file: refused before any runs
            for suffix in (".run", ".jsonl"):  # nor a run written over an input (`--run runs/a.run --runs-dir runs`)
                if (clash := clashing_input(runs_dir / f"{stem}{suffix}", inputs)) is not None:
                    raise ConfigError(f"--runs-dir {runs_dir}: its {stem}{suffix} would be written over the input "
                                      f"{clash}; choose another --runs-dir")
    if all(given is None for given in (dataset, corpus, queries, qrels, questions)) and not run_files:
        refuse_corpus_options(fmt, field is not None, splitter)  # before: they split or read the bundled SciFact
        note_bundled(None, "evaluating on")  # as search, retrieve and serve say
    corpus_path, task = evaluation_task(dataset, split, corpus, queries, qrels, questions, fmt, max_queries,
                                        pipelines=names, indexes=index or [], runs=run_files,
                                        pipelines_read_corpus=read_corpus)
    query_list, judged = task.queries, task.qrels
    run_stages = {title: RunFile(path, name=title) for title, path in run_files.items()}  # read (and checked) now
    check_run_coverage(run_stages, run_files, query_list)
    # --index folders only, or pipelines reading none, and no corpus given: no corpus read
    source = corpus_source(corpus_path, fmt, field, splitter, window_words) \
        if names and (corpus_path or read_corpus) else None
    if source is None and splitter != "none":  # before any run: it would split nothing
        raise ConfigError(f"--splitter {splitter} cuts the corpus the pipelines read, and none is read here")
    if source is not None and distractors:
        from sleuth.pipelines.mixed_source import with_distractors

        source = with_distractors(source, distractors)
    options = ReportOptions(metric, top_k, runs_dir, as_json, exclude_self, per_query, keys)
    check_task(task, options)  # a wrong qrels file or measure fails here, not after any index build
    if source is not None and (exclude_self is None or judged is not None):
        task.corpus_texts, task.corpus_ids = corpus_facts(query_list, judged, source)
    ws = workspace(source, device, progress=not as_json)
    targets = Targets(names, index or [], depth or DEFAULT_DEPTH, titles, run_files)
    if ray_address is not None:
        run_on_ray(ray_address, ray_workers, targets, ws, task, options)
        return
    from sleuth.pipelines.index_stage import stage_for_index

    stages = {title: load_pipeline(name, ws, keys) for title, name in zip(targets.titles, targets.names)}
    folders = {title: stage_for_index(path, targets.depth, device)
               for title, path in zip(targets.titles[len(targets.names):], targets.indexes)}
    stages.update(folders)
    stages.update(run_stages)
    if source is None and judged is not None and not targets.runs and not names:  # --index folders only: their
        # passages are the corpus (a run file's, or an index: path's, is not known: judged documents not checked)
        task.corpus_ids = index_ids(stage.index for stage in folders.values())
    report(stages, task, options, ws.build_seconds)


def evaluation_task(dataset: Path | None, split: str, corpus: Path | None, queries: Path | None, qrels: Path | None,
                    questions: Path | None, fmt: str | None, max_queries: int | None, *, pipelines: list[str],
                    indexes: list[Path], runs: dict[str, Path],
                    pipelines_read_corpus: bool = True) -> tuple[Path | None, Task]:
    """The corpus the pipelines search and the task: the queries (the first ``max_queries``), their judgements and
    whether answers are measured, from a DATASET, explicit files, or a dataset's own question file; a ConfigError
    where nothing is left to evaluate or run files would be measured by answers. Pipelines that read no corpus
    (``pipelines_read_corpus`` False: ``index:`` paths, run files) need none, as ``--index`` folders."""
    need_corpus = bool(pipelines) and pipelines_read_corpus
    own = None
    if queries is None and qrels is None:  # a dataset's file holds its questions and what they are judged by
        own = dataset_task(corpus, fmt) if questions is None else dataset_task(questions, None)
    judged: Qrels | None
    if own is not None:
        if corpus is None and need_corpus:
            raise ConfigError("--questions needs --corpus (the passages to search) or --index folders")
        corpus_path, (query_list, judged, with_answers) = corpus, own
    else:
        corpus_path, query_list, judged = load_task(dataset, split, corpus, queries, qrels, questions,
                                                    need_corpus=need_corpus,
                                                    runs_only=bool(runs) and not (pipelines or indexes))
        with_answers = questions is not None
    if runs and (with_answers or judged is None):
        raise ConfigError("--run files hold document ids and scores, no texts: they are measured by judged "
                          "documents (--qrels, or a BEIR folder), not by answers")
    if max_queries is not None:
        query_list = query_list[:max_queries]
        if judged is not None:  # the judgements of the queries left out are not judgements without a topic
            kept = {q.id for q in query_list}
            judged = {qid: docs for qid, docs in judged.items() if qid in kept}
    if not query_list:
        raise ConfigError("no queries to evaluate")
    return corpus_path, Task(query_list, judged, with_answers)


def check_options(dataset: Path | None, corpus: Path | None, queries: Path | None, qrels: Path | None,
                  questions: Path | None, pipelines: list[str], indexes: list[Path], depth: int | None) -> None:
    """Options that would be ignored, or evaluate one pipeline where two are asked for, are a ConfigError."""
    if dataset is not None:
        given = [option for option, value in (("--corpus", corpus), ("--queries", queries), ("--qrels", qrels),
                                              ("--questions", questions)) if value is not None]
        if given:
            raise ConfigError(f"DATASET {dataset} brings its own corpus, queries and qrels: leave out "
                              f"{' and '.join(given)}, or give --corpus, --queries and --qrels without DATASET")
    if questions is not None and (queries is not None or qrels is not None):
        raise ConfigError("--questions are measured by their answers (--top-k), --queries by their judged documents "
                          "(--qrels): give --questions, or --queries and --qrels")
    if depth is not None and not indexes:
        raise ConfigError("--depth is the number of results per query of an --index folder: it needs --index (a "
                          "pipeline's depth is set in its config)")
    for option, values in (("--pipeline", pipelines), ("--index", [str(path.resolve()) for path in indexes])):
        if (twice := first_repeat(values)) is not None:
            raise ConfigError(f"{option} {values[twice]} is given twice: each is evaluated once")


def corpus_facts(query_list: list[Query], qrels: Qrels | None, source) -> tuple[dict[str, str], set[str] | None]:
    """One pass over the corpus's documents: the texts (title and text) of those with the queries' ids, and the
    document ids of ``qrels`` that the corpus has (None without qrels)."""
    wanted = {query.id for query in query_list}
    judged = {doc for docs in (qrels or {}).values() for doc in docs}
    texts: dict[str, str] = {}
    found: set[str] = set()
    for doc in source.documents():
        if doc.id in wanted:
            texts[doc.id] = f"{doc.title} {doc.full_text()}"
        if doc.id in judged:
            found.add(doc.id)
    return texts, None if qrels is None else found


def index_ids(indexes) -> set[str]:
    """The passage and document ids the indexes hold (a hit from them carries one of these): what judged documents
    are checked against when --index folders are evaluated without a corpus."""
    ids: set[str] = set()
    for index in indexes:
        ids.update(index.docstore.ids)
        ids.update(index.docstore.doc_ids)
    return ids


def table_names(config_names: list[str], names: list[str], indexes: list[Path],
                run_names: list[str] | None = None) -> list[str]:
    """The names the table shows: each pipeline's config name (``names[i]`` as given when an earlier pipeline has
    it), then each --index folder's name (its folder name, else its path as given or in full), then each --run
    file's name. Two pipelines left with the same name are a ConfigError (one would replace the other)."""
    titles: list[str] = []
    for own, given in zip(config_names, names):
        titles.append(next((title for title in (own, given) if title not in titles), ""))
        if not titles[-1]:
            raise ConfigError(f"two pipelines are named '{own}'; give them distinct names")
    for path in indexes:
        titles.append(first_untaken((path.name, str(path), str(path.resolve())), titles) or "")
        if not titles[-1]:
            raise ConfigError(f"--index {path} has the name of another pipeline evaluated")
    for name in run_names or []:
        if name in titles:
            raise ConfigError(f"--run {name}=...: another pipeline evaluated has the name '{name}'; name the run "
                              f"another way (NAME=FILE)")
        titles.append(name)
    return titles


def check_run_coverage(stages: dict[str, RunFile], paths: dict[str, Path], query_list: list[Query]) -> None:
    """A run file that ranks none of the queries evaluated is a ConfigError (the wrong topics or qrels); one that
    ranks only some is a warning on stderr (the others count as zero, as every pipeline's missing queries do)."""
    wanted = {query.id for query in query_list}
    for title, stage in stages.items():
        ranked = len(stage.query_ids() & wanted)
        if ranked == 0:
            example = next(iter(stage.query_ids()), "none")
            raise ConfigError(f"--run {paths[title]}: ranks none of the {len(wanted):,} queries evaluated (its query "
                              f"ids are like '{example}', the queries' like '{query_list[0].id}'): a run of other "
                              f"topics?")
        if ranked < len(wanted):
            console.print(Text(f"warning: run '{title}' ranks {ranked:,} of the {len(wanted):,} queries evaluated; "
                               f"the others count as zero", style="yellow"), soft_wrap=True)


def named_run_files(values: list[str]) -> dict[str, Path]:
    """``--run`` values (``FILE`` or ``NAME=FILE``) by the name the table shows (a file's name without its suffix,
    and without ``.gz`` / ``.bz2`` before it, when not named); a missing file or a name given twice is a
    ConfigError."""
    files: dict[str, Path] = {}
    for value in values:
        name, sep, path_text = value.partition("=")
        if not sep or not name.strip() or Path(value).exists():
            name, path_text = run_name(value), value
        path = Path(path_text)
        if not path.is_file():
            raise ConfigError(f"--run {value}: {path} is not a file" if path.exists() else
                              f"--run {value}: {path}: file not found")
        if name in files:
            raise ConfigError(f"--run {value}: the name '{name}' is given to two runs; name them NAME=FILE")
        files[name] = path
    return files


def report(stages: dict, task: Task, options: ReportOptions, build_seconds: dict[str, float] | None = None,
           progress: bool = True) -> None:
    """Run the experiment and print its table (or JSON), writing the run files when asked; topics left out
    (without judgements) and judgements without a topic are warned about on stderr, loudly when most are;
    ``build_seconds``: the indexes the workspace built (by cache key), reported under the table (and as
    ``index_build_seconds``); ``progress``: each pipeline's queries done (off for Ray, whose workers split the
    queries of one call)."""
    answers = task_answers(task)
    as_json = options.as_json
    experiment = Experiment(stages, task.queries, qrels=task.qrels, answers=answers,
                            measures=options.metrics or DEFAULT_METRICS, ks=options.top_k or DEFAULT_KS,
                            exclude_self=options.exclude_self, corpus_texts=task.corpus_texts,
                            corpus_ids=task.corpus_ids, show_progress=progress and not as_json)
    style = "bold red" if experiment.coverage.poor else "yellow"
    for line in experiment.notes:
        console.print(Text(f"warning: {line}", style=style), soft_wrap=True)
    if not as_json:
        console.print(f"evaluating {len(stages)} pipeline(s) on {len(experiment.queries)} queries ...")
    result = experiment.run()
    if options.stage_keys:  # what ran is on record with its figures
        result.notes.append(settings_line(options.stage_keys))
    if result.excluded_self is not None:
        console.print(Text(f"note: {exclusion_note(result.excluded_self)}", style="yellow"), soft_wrap=True)
    built = build_seconds or {}
    if as_json:
        print(json.dumps({**result.to_dict(include_per_query=False), "index_build_seconds": built}))
    else:
        out.print(result.to_table())
        out.print(Text(build_note(built, not all(isinstance(stage, RunFile) for stage in stages.values()))))
    if options.per_query is not None:  # after the table, as the run files
        result.save_per_query(options.per_query)
    if options.runs_dir is not None:  # after the table: a run file that cannot be written loses no result
        jsonl = [path.name for path in result.save_runs(options.runs_dir).values() if path.suffix == ".jsonl"]
        if jsonl:
            console.print(Text(f"note: {', '.join(jsonl)} written as JSON Lines: their ids hold whitespace, which a "
                               f"TREC run file cannot", style="yellow"), soft_wrap=True)


def task_answers(task: Task) -> dict[str, list[str]] | None:
    """The answers of a QA task by query id (unanswerable questions have none); None for a task judged by qrels."""
    if not task.with_answers:
        return None
    return {q.id: q.metadata["answers"] for q in task.queries if q.metadata.get("answers")}


def check_task(task: Task, options: ReportOptions) -> JudgedQueries:
    """What :func:`report` will measure, checked before any pipeline is loaded or index built: some query judged,
    every measure and cut-off known and measurable on the task (a ConfigError otherwise); returns the topics
    evaluated."""
    if options.top_k and not task.with_answers:
        raise ConfigError("--top-k is answer accuracy: it needs --questions (id, question, answers) or a SQuAD "
                          "file; judged documents are measured with --metric")
    if options.metrics and task.qrels is None:
        raise ConfigError("--metric needs relevance judgements (qrels), and these questions have none: use --top-k")
    return JudgedQueries.of(task.queries, task.qrels, task_answers(task), options.metrics or DEFAULT_METRICS,
                            options.top_k or DEFAULT_KS)


def run_on_ray(address: str, workers: int, targets: Targets, ws, task: Task, options: ReportOptions) -> None:
    """The experiment with every pipeline run by Ray workers (the queries split across them, runs merged); the
    workers build the pipelines over the workspace's corpus, home and device."""
    from functools import partial

    from sleuth.pipelines.index_stage import stage_for_index
    from sleuth.scale.ray_eval import pipeline_builder, ray_pipelines
    from sleuth.scale.session import ray_session

    builders: dict = {title: pipeline_builder(name, ws.corpus, ws.home, ws.device, options.stage_keys)
                      for title, name in zip(targets.titles, targets.names)}
    for title, path in zip(targets.titles[len(targets.names):], targets.indexes):
        builders[title] = partial(stage_for_index, path.resolve(), targets.depth, ws.device)
    for title, path in targets.runs.items():
        builders[title] = partial(RunFile, path.resolve(), name=title)
    if ws.corpus is None and task.qrels is not None and not targets.runs and not targets.names:  # as above
        from sleuth.index.sharded import load_index

        task.corpus_ids = index_ids(load_index(path, mmap=True) for path in targets.indexes)
    with ray_session(address):
        stages = ray_pipelines(builders, workers)
        report(stages, task, options, progress=False)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
