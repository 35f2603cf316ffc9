"""Side-by-side evaluation of pipelines, like PyTerrier's ``pt.Experiment``.

Every pipeline runs once on the judged queries (``stage.transform(queries, None)``, timed). Each is scored with IR
measures (when qrels are given) and/or top-k answer accuracy (when answers are given), per query and on average,
and compared with a baseline by a paired test over the same queries, corrected for multiple comparisons per measure.

Nothing that changes the figures passes silently; each is a note of the result (the table's caption):
topics without judgements, judgements without a topic and (given the corpus's ids) judged documents missing from the
corpus are counted (:mod:`sleuth.eval.coverage`); a query's own document is dropped from its hits where the queries
are corpus documents (:mod:`sleuth.eval.self_hits`); runs of different depths are cut to their common depth before
measuring and testing (:mod:`sleuth.eval.depth`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from sleuth.corpus.frames import frame_qrels, is_frame, require_columns
from sleuth.corpus.model import Qrels, Query
from sleuth.corpus.qrels import checked_qrels
from sleuth.errors import ConfigError
from sleuth.eval.answers import DEFAULT_KS, Texts, answer_hits, check_ks, check_mode, top_k_per_query
from sleuth.eval.coverage import Coverage
from sleuth.eval.depth import common_depth, differing_depths
from sleuth.eval.measures import MeasureLike, aggregate, check_measures, parse_measures, per_query
from sleuth.eval.self_hits import default_exclusion, drop_self_hits, exclusion_note
from sleuth.eval.significance import CORRECTIONS, TESTS
from sleuth.overwrite import check_writable
from sleuth.stages.base import Stage, as_queries, transform_counted
from sleuth.stages.paths import evidence_path
from sleuth.stages.run import Run, first_unscored

Pipelines = Mapping[str, Stage] | Sequence[tuple[str, Stage] | Stage]


@dataclass(repr=False)
class ExperimentResult:
    """Runs, scores, p-values against the baseline and timings of the pipelines of one experiment.

    ``per_query[name][metric][qid]`` holds per-query values, ``aggregate[name][metric]`` their means and
    ``pvalues[name][metric]`` the (corrected) p-value of each non-baseline pipeline. ``runs`` are as measured
    (own documents dropped, cut to the common depth), ``retrieved`` as the pipelines returned them (empty: the
    same as ``runs``). ``notes`` say what was done to the runs or left out;
    ``coverage`` counts the topics evaluated and left out; ``excluded_self`` is how many hits were dropped as
    the query's own document (None: self-exclusion off). Printed, it is the table of :meth:`to_table` (never the
    runs); :meth:`to_pandas` (or ``.frame``) gives the same figures as a DataFrame.
    """

    names: list[str]
    metrics: list[str]
    runs: dict[str, Run]
    per_query: dict[str, dict[str, dict[str, float]]]
    seconds: dict[str, float]
    num_queries: int
    pvalues: dict[str, dict[str, float]] = field(default_factory=dict)
    baseline: str | None = None
    test: str = "ttest"
    correction: str | None = "holm"
    alpha: float = 0.05
    notes: list[str] = field(default_factory=list)
    coverage: Coverage | None = None
    excluded_self: int | None = None
    retrieved: dict[str, Run] = field(default_factory=dict)

    @cached_property
    def aggregate(self) -> dict[str, dict[str, float]]:
        """``{pipeline: {metric: its figure over the evaluated queries}}``: the mean, the sum of a count (NumRet ...)."""
        return {name: {m: aggregate(m, values.values()) for m, values in self.per_query[name].items()}
                for name in self.names}

    def queries_per_second(self, name: str) -> float | None:
        """Throughput of one pipeline (None when it took no measurable time)."""
        seconds = self.seconds[name]
        return self.num_queries / seconds if seconds > 0 else None

    def comparison(self, name: str, metric: str) -> dict[str, Any] | None:
        """How a pipeline compares with the baseline on one metric: ``{"p_value", "difference" (pipeline minus
        baseline), "direction" ("higher", "lower" or "same"), "significant" (p < alpha)}``; None for the baseline
        itself or without a test."""
        if name == self.baseline or self.baseline is None or metric not in self.pvalues.get(name, {}):
            return None
        difference = self.aggregate[name][metric] - self.aggregate[self.baseline][metric]
        p = self.pvalues[name][metric]
        direction = "higher" if difference > 0 else "lower" if difference < 0 else "same"
        return {"p_value": p, "difference": difference, "direction": direction, "significant": p < self.alpha}

    def marker(self, name: str, metric: str) -> str:
        """The cell comparing a pipeline with the baseline: the direction of the difference, then the p-value:
        "▲ 0.0166*" (higher, significant), "▼ 0.0066*" (lower), "= 1.0000" (same mean); "base" or ""."""
        if name == self.baseline:
            return "base"
        comparison = self.comparison(name, metric)
        if comparison is None:
            return ""
        arrow = {"higher": "▲", "lower": "▼", "same": "="}[comparison["direction"]]
        return f"{arrow} {comparison['p_value']:.4f}{'*' if comparison['significant'] else ''}"

    def to_table(self, title: str | None = None) -> Table:
        """A rich Table: one row per pipeline, a column per metric (4 decimals) and, with a baseline, its p-values.
        Names and notes are shown as written (never read as rich markup); ``title`` is markup."""
        how = f"{self.test}, {self.correction}-corrected" if self.correction else self.test
        lines = [f"p: paired {how} vs '{self.baseline}'; * p < {self.alpha}"] if self.baseline is not None else []
        caption = Text("\n".join(lines + self.notes)) if lines or self.notes else None
        table = Table(title=title or f"Experiment ({self.num_queries} queries)", caption=caption)
        table.add_column("pipeline")
        for metric in self.metrics:
            table.add_column(metric, justify="right")  # a measure's canonical name holds no '['
            if self.baseline is not None:
                table.add_column(f"{metric} p", justify="right")
        table.add_column("s", justify="right")
        table.add_column("q/s", justify="right")
        aggregate = self.aggregate
        for name in self.names:
            cells: list[str | Text] = [Text(name)]
            for metric in self.metrics:
                cells.append(f"{aggregate[name][metric]:.4f}")
                if self.baseline is not None:
                    cells.append(self.marker(name, metric))
            qps = self.queries_per_second(name)
            cells += [f"{self.seconds[name]:.2f}", f"{qps:.1f}" if qps is not None else "-"]
            table.add_row(*cells)
        return table

    def __repr__(self) -> str:
        from rich.console import Console

        console = Console(width=200, color_system=None, force_terminal=False)
        with console.capture() as capture:
            console.print(self.to_table())
        return capture.get().rstrip()

    __str__ = __repr__

    def to_pandas(self) -> Any:
        """A pandas DataFrame, one row per pipeline: ``name``, each metric's mean, ``<metric> p-value`` against
        the baseline (NaN for the baseline itself), ``seconds`` and ``queries_per_second``."""
        try:
            import pandas as pd
        except ImportError:
            raise ConfigError("to_pandas needs pandas: pip install pandas") from None
        rows = []
        for name in self.names:
            row: dict[str, Any] = {"name": name, **self.aggregate[name]}
            if self.baseline is not None:
                row.update({f"{m} p-value": self.pvalues.get(name, {}).get(m, float("nan")) for m in self.metrics})
            rows.append({**row, "seconds": self.seconds[name], "queries_per_second": self.queries_per_second(name)})
        return pd.DataFrame(rows)

    @property
    def frame(self) -> Any:
        """:meth:`to_pandas`."""
        return self.to_pandas()

    def to_dict(self, include_per_query: bool = True) -> dict[str, Any]:
        """A JSON-serialisable summary (runs are left out: see :meth:`save_runs`). Each pipeline has ``pvalues``
        (``{metric: p}``) and ``comparisons`` (``{metric: {p_value, difference, direction, significant}}``; empty
        for the baseline). Where the corpus's ids were given, ``judged_documents`` counts the documents judged
        (``total``) and those not in the corpus (``not_in_corpus``)."""
        aggregate = self.aggregate
        pipelines = [{"name": name, "measures": aggregate[name], "pvalues": dict(self.pvalues.get(name, {})),
                      "comparisons": {m: c for m in self.metrics if (c := self.comparison(name, m)) is not None},
                      "seconds": self.seconds[name], "queries_per_second": self.queries_per_second(name)}
                     for name in self.names]
        result: dict[str, Any] = {"queries": self.num_queries, "metrics": list(self.metrics), "baseline": self.baseline,
                                  "test": self.test, "correction": self.correction, "alpha": self.alpha,
                                  "pipelines": pipelines, "notes": list(self.notes),
                                  "excluded_self_hits": self.excluded_self}
        if self.coverage is not None:
            result["coverage"] = {"topics": self.coverage.topics, "evaluated": self.coverage.evaluated,
                                  "unjudged": self.coverage.unjudged, "judged_without_topic": self.coverage.orphans}
            if self.coverage.missing_docs is not None:
                result["judged_documents"] = {"total": self.coverage.judged_docs,
                                              "not_in_corpus": self.coverage.missing_docs}
        if include_per_query:
            result["per_query"] = self.per_query
        return result

    def per_query_rows(self) -> list[tuple[str, str, str, float]]:
        """``(pipeline, query id, measure, value)`` for every evaluated query (one a run misses too, with its zero),
        pipelines and measures in the table's order."""
        return [(name, qid, metric, value) for name in self.names for metric in self.metrics
                for qid, value in self.per_query[name][metric].items()]

    def save_per_query(self, path: str | Path) -> Path:
        """Write :meth:`per_query_rows` to ``path`` as tab-separated values with a header line (``pipeline``,
        ``qid``, ``measure``, ``value``: trec_eval -q's figures, one table for every pipeline;
        ``pandas.read_csv(path, sep="\\t", dtype={"qid": str})`` reads it), atomically."""
        from sleuth.io import atomic_write_text

        lines = ["pipeline\tqid\tmeasure\tvalue"]
        for row in self.per_query_rows():
            if any("\t" in part or "\n" in part for part in row[:3]):
                raise ConfigError(f"per-query values: {row[:3]!r} holds a tab or line break, which a TSV file "
                                  f"cannot hold")
            lines.append("\t".join((*row[:3], repr(float(row[3])))))
        atomic_write_text(path, "\n".join(lines) + "\n")
        return Path(path)

    def save_runs(self, directory: str | Path) -> dict[str, Path]:
        """Write each pipeline's run as retrieved (not cut to the common depth, own documents kept) as
        ``<directory>/<pipeline-name>.run`` in TREC format, tagged with that name, or as ``<pipeline-name>.jsonl``
        (JSON Lines, :mod:`sleuth.stages.run_formats`) where an id holds whitespace, which a TREC run's columns are
        split on (HotpotQA's paragraph ids are titles); return the paths. Names that give the same file, or a
        ``directory`` that is a file or cannot be written in, are a ConfigError, raised before any file is written."""
        from sleuth.stages.run_formats import write_run

        directory = Path(directory)
        check_writable(directory, "save_runs", folder=True)  # before: FileExistsError after the first file
        runs = {name: self.retrieved.get(name, self.runs[name]) for name in self.names}
        paths: dict[str, Path] = {}
        for name, slug in run_file_names(self.names).items():
            paths[name] = directory / f"{slug}{'.jsonl' if runs[name].trec_problem() else '.run'}"
            write_run(runs[name], paths[name], tag=slug)
        return paths


def run_file_names(names: Iterable[str]) -> dict[str, str]:
    """``{pipeline: file stem}`` of :meth:`ExperimentResult.save_runs` (the name with anything but letters, digits,
    '.', '-' and '_' made '_'); two names with the same stem (ignoring case) are a ConfigError."""
    stems: dict[str, str] = {}
    for name in names:
        stem = re.sub(r"[^\w.-]+", "_", name).strip("._") or "pipeline"
        clash = next((other for other, taken in stems.items() if taken.casefold() == stem.casefold()), None)
        if clash is not None:
            raise ConfigError(f"pipelines '{clash}' and '{name}' would both be written to {stem}.run: rename one")
        stems[name] = stem
    return stems


@dataclass
class JudgedQueries:
    """What an experiment evaluates, checked before any pipeline runs: the topics with judgements (or answers),
    their qrels and answers, the coverage (topics left out, judgements without a topic and, given ``corpus_ids``,
    judged documents not in the corpus), the parsed measures and answer cut-offs. :meth:`of` raises a ConfigError
    where nothing could be measured (no judged topic, an unknown measure or one that cannot be computed on these
    qrels, a bad cut-off), so a caller can check inputs before building any index."""

    queries: list[Query]
    qrels: Qrels | None
    answers: dict[str, Sequence[str]] | None
    coverage: Coverage
    measures: list
    ks: list[int]

    @classmethod
    def of(cls, queries: Iterable[Query | str], qrels: Qrels | None, answers: Mapping[str, Sequence[str]] | None,
           measures: Iterable[MeasureLike], ks: Iterable[int],
           corpus_ids: Collection[str] | None = None) -> JudgedQueries:
        topics = as_queries(queries)
        qrels = None if qrels is None else as_qrels(qrels)
        if qrels is None and answers is None:
            raise ConfigError("an experiment needs qrels (for IR measures) or answers (for answer accuracy)")
        judged = set(qrels or ()) | set(answers or ())
        coverage = Coverage.of(topics, judged)
        kept = [query for query in topics if query.id in judged]
        qids = {query.id for query in kept}
        kept_qrels = None if qrels is None else {qid: docs for qid, docs in qrels.items() if qid in qids}
        kept_answers = None if answers is None else {qid: a for qid, a in answers.items() if qid in qids}
        for what, given in (("qrels", kept_qrels), ("answers", kept_answers)):
            if given is not None and not given:
                raise ConfigError(f"no query of the experiment has {what} ({len(topics)} topics, "
                                  f"{coverage.orphans} judged query ids without a topic): do the topic ids "
                                  f"match the {what}?")
        if kept_qrels is not None and corpus_ids is not None:
            coverage = coverage.with_documents(kept_qrels, corpus_ids)
        parsed = parse_measures(measures) if kept_qrels is not None else []
        if kept_qrels is not None:
            check_measures(parsed, kept_qrels)
        return cls(kept, kept_qrels, kept_answers, coverage, parsed, check_ks(ks) if answers is not None else [])


class Experiment:
    """Run pipelines on the same queries and compare them; call :meth:`run` for an :class:`ExperimentResult`.

    ``pipelines``: ``{name: stage}``, or a list of ``(name, stage)`` pairs or stages (named by ``stage.name``).
    ``queries``: anything a pipeline is called with (strings, Queries, ``{id: text}``, a PyTerrier topics frame).
    IR ``measures`` need ``qrels`` (``{query id: {doc id: relevance}}``, relevances whole numbers, or PyTerrier's
    qid/docno/label frame);
    top-``ks`` answer accuracy needs ``answers`` (and ``texts`` unless hits carry text). Only the experiment's
    queries with judgements (or answers) are run and evaluated; the others and the
    judgements without a query are counted in ``coverage`` (and the notes).
    ``baseline`` is a pipeline index or name (None: no tests); ``test`` is "ttest" or "randomisation";
    ``correction`` is "holm" or None.
    ``exclude_self``: drop a hit whose id is its query's id (BEIR's convention); None (default) turns it on when
    ``corpus_texts`` (document id -> text) are given and most queries are documents of the corpus (the document
    with the query's id holds the query's text, as in ArguAna and Quora), unless the qrels judge a query's own
    document relevant (a note then says it is left off). ``corpus_ids``: the corpus's document ids (those the
    qrels judge suffice); judged documents not among them are counted in ``coverage``. ``same_depth``: cut every
    run to the depth all share before measuring and testing (default); False leaves the runs whole and withholds
    the test of any pipeline whose depth differs from the baseline's.
    ``show_progress``: each pipeline's queries done, queries/s and time left (:mod:`sleuth.progress`; the
    queries then run in chunks). ``names``: the table's names of the pipelines, one each, in their order.
    """

    def __init__(self, pipelines: Pipelines, queries: Iterable[Query | str], qrels: Qrels | None = None,
                 measures: Iterable[MeasureLike] = ("nDCG@10", "R@100"),
                 answers: Mapping[str, Sequence[str]] | None = None, texts: Texts = None,
                 ks: Iterable[int] = DEFAULT_KS, mode: str = "string", baseline: int | str | None = 0,
                 correction: str | None = "holm", test: str = "ttest", alpha: float = 0.05,
                 exclude_self: bool | None = None, corpus_texts: Mapping[str, str] | None = None,
                 same_depth: bool = True, show_progress: bool = False, corpus_ids: Collection[str] | None = None,
                 names: Sequence[str] | None = None):
        self.pipelines = named_pipelines(pipelines, names)
        judged = JudgedQueries.of(queries, qrels, answers, measures, ks, corpus_ids)
        self.coverage, self.queries, self.qrels, self.answers = judged.coverage, judged.queries, judged.qrels, judged.answers
        self.measures, self.ks = judged.measures, judged.ks
        #: what is known before running: the coverage's warnings, and why own documents are kept where they are
        self.notes = self.coverage.warnings()
        if self.qrels is not None and self.answers is not None:  # before: one row of two denominators, unsaid
            answered = sum(1 for q in self.queries if self.answers.get(q.id))
            if answered < len(self.queries):
                self.notes.append(f"answer accuracy (Top-k) is measured on the {answered:,} questions with an answer, "
                                  f"the judged-document measures on all {len(self.queries):,}")
        if exclude_self is None:
            exclude_self, note = (False, None) if corpus_texts is None else \
                default_exclusion(self.queries, corpus_texts, self.qrels)
            self.notes += [note] if note else []
        self.exclude_self, self.same_depth = exclude_self, same_depth
        self.texts, self.mode = texts, check_mode(mode)
        self.baseline = resolve_baseline(baseline, list(self.pipelines))
        if test not in TESTS:
            raise ConfigError(f"unknown significance test '{test}'; expected one of {', '.join(TESTS)}")
        if correction is not None and correction not in CORRECTIONS:
            raise ConfigError(f"unknown correction '{correction}'; expected None or one of {', '.join(CORRECTIONS)}")
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 < alpha < 1:
            raise ConfigError(f"alpha (the significance level) must be a number between 0 and 1, got {alpha!r}")
        self.test, self.correction, self.alpha = test, correction, alpha
        self.show_progress = show_progress

    def score(self, run: Run) -> dict[str, dict[str, float]]:
        """``{metric: {qid: value}}`` of one run: IR measures, then top-k accuracies."""
        values: dict[str, dict[str, float]] = {}
        if self.qrels is not None:
            values.update(per_query(run, self.qrels, self.measures))
        if self.answers is not None:
            ranks = answer_hits(run, self.texts, self.answers, self.mode, depth=max(self.ks))
            values.update(top_k_per_query(ranks, self.ks))
        return values

    def run(self) -> ExperimentResult:
        """Run every pipeline once on the judged queries, score it and test it against the baseline."""
        runs, seconds = {}, {}
        for name, stage in self.pipelines.items():
            start = time.perf_counter()
            run = transform_counted(stage, self.queries, f"evaluating {name}", self.show_progress)
            seconds[name] = time.perf_counter() - start
            if not isinstance(run, Run):
                raise ConfigError(f"pipeline '{name}' returned {type(run).__name__}, not a Run")
            refuse_unranked(name, run)
            runs[name] = run
        retrieved, notes = dict(runs), list(self.notes)
        notes += [note for name, run in runs.items() if (note := unjudged_run_note(name, run, self.qrels))]
        excluded = None
        if self.exclude_self:
            excluded = 0
            for name, run in runs.items():
                runs[name], removed = drop_self_hits(run)
                excluded += removed
            notes.append(exclusion_note(excluded))
        untested: list[str] = []
        if self.same_depth:
            runs, note = common_depth(runs, self.measures if self.qrels is not None else ())
            notes += [note] if note else []
        elif self.baseline is not None:
            untested = differing_depths(runs, self.baseline)
            notes += [f"no significance test for {name}: its result depth differs from the baseline's"
                      for name in untested]
        scores = {name: self.score(run) for name, run in runs.items()}
        metrics = list(next(iter(scores.values())))
        return ExperimentResult(names=list(self.pipelines), metrics=metrics, runs=runs, per_query=scores,
                                seconds=seconds, num_queries=len(self.queries),
                                pvalues=self.compare(scores, metrics, untested), baseline=self.baseline,
                                test=self.test, correction=self.correction, alpha=self.alpha, notes=notes,
                                coverage=self.coverage, excluded_self=excluded, retrieved=retrieved)

    def compare(self, scores: dict[str, dict[str, dict[str, float]]], metrics: list[str],
                untested: Collection[str] = ()) -> dict[str, dict[str, float]]:
        """``{pipeline: {metric: p-value vs the baseline}}`` over the same queries, corrected per metric; the
        ``untested`` pipelines get no p-value."""
        if self.baseline is None:
            return {}
        others = [name for name in scores if name != self.baseline and name not in untested]
        pvalues: dict[str, dict[str, float]] = {name: {} for name in scores if name != self.baseline}
        for metric in metrics:
            base = scores[self.baseline][metric]
            test = TESTS[self.test]
            raw = [test(list(base.values()), [scores[name][metric][qid] for qid in base]) for name in others]
            adjusted = CORRECTIONS[self.correction](raw) if self.correction else raw
            for name, p in zip(others, adjusted):
                pvalues[name][metric] = p
        return pvalues


def refuse_unranked(name: str, run: Run) -> None:
    """A ConfigError naming the pipeline, query and document of a score that is not a finite number (before: a NaN
    left the query's order arbitrary and was measured without a word; a run file refuses one on reading)."""
    for qid, hits in run.items():
        if (bad := first_unscored(hits)) is not None:
            raise ConfigError(f"pipeline '{name}' scored document '{bad.id}' of query '{qid}' {bad.score!r}, not a "
                              "finite number: its ranking has no order to measure")


def unjudged_run_note(name: str, run: Run, qrels: Qrels | None, least: int = 1) -> str | None:
    """A note when a pipeline that returned hits for at least ``least`` judged queries has none of them judged (for
    its query), relevant or not: its ids are then rarely the documents the qrels name (a Chain-of-Skills path
    ``A || B`` against paragraph qrels, another collection's run); None otherwise. From one query on (before: five,
    so a quick check over three questions showed a silent row of zeros)."""
    if qrels is None:
        return None
    answered = [(qid, hits) for qid, hits in run.items() if hits and qid in qrels]
    if len(answered) < least or any(hit.id in qrels[qid] for qid, hits in answered for hit in hits):
        return None
    first = answered[0][1][0]
    paths = " (its hits are evidence paths: add the path_passages stage to measure their passages)" \
        if evidence_path(first) else \
        " (its hits are passages of documents: add the max_passage stage to rank their documents)" \
        if any(hit.doc_id != hit.id and hit.doc_id in qrels[qid] for qid, hits in answered for hit in hits) else ""
    return (f"pipeline '{name}' retrieved no judged document for any of its {len(answered):,} judged queries (its "
            f"ids are like '{first.id}'): do they name the documents the qrels judge?{paths}")


def as_qrels(qrels: Any) -> Qrels:
    """``{query id: {doc id: relevance}}`` as given, or from a pandas frame with ``qid``, ``docno`` and ``label``
    columns (PyTerrier's qrels), checked alike (:func:`checked_qrels`: relevances whole numbers); anything else is a
    ConfigError saying what is taken."""
    if isinstance(qrels, Mapping):
        return checked_qrels(qrels)
    if is_frame(qrels):
        require_columns(qrels, ("qid", "docno", "label"), "qrels", ConfigError)
        return checked_qrels(frame_qrels(qrels))  # relevances checked as in Python's (before: 1.7 was taken as 1)
    raise ConfigError("qrels must be {query id: {doc id: relevance}} or a frame with qid, docno and label columns; "
                      f"got {type(qrels).__name__}")


def named_pipelines(pipelines: Pipelines, names: Sequence[str] | None = None) -> dict[str, Stage]:
    """``{name: stage}`` from a mapping or a list of stages or ``(name, stage)`` pairs, renamed ``names`` where given
    (one per pipeline, as PyTerrier's ``pt.Experiment(names=...)``); anything else, or a repeated name, raises a
    ConfigError."""
    if names is not None:
        stages = list(named_pipelines(pipelines).values())
        if isinstance(names, str) or len(list(names)) != len(stages):
            raise ConfigError(f"names: one name per pipeline, {len(stages)}, got {names!r}"[:200])
        return named_pipelines(list(zip(names, stages)))
    if isinstance(pipelines, (Stage, str)) or not isinstance(pipelines, Iterable):  # before: a TypeError
        what = f"one stage, '{pipelines.name}' (one pipeline: [stage])" if isinstance(pipelines, Stage) else \
            f"'{pipelines}' (build it with ws.pipeline('{pipelines}'))" if isinstance(pipelines, str) else \
            type(pipelines).__name__
        raise ConfigError(f"pipelines are a list of stages or (name, stage) pairs, or a {{name: stage}} mapping; got "
                          f"{what}")
    pairs = list(pipelines.items()) if isinstance(pipelines, Mapping) else [
        (item.name, item) if isinstance(item, Stage) else tuple(item) if isinstance(item, (tuple, list)) else item
        for item in pipelines]
    named: dict[str, Stage] = {}
    for pair in pairs:
        name, stage = (str(pair[0]), pair[1]) if isinstance(pair, tuple) and len(pair) == 2 else (str(pair), pair)
        if not isinstance(stage, Stage):
            hint = f"; build it with ws.pipeline('{stage}')" if isinstance(stage, str) else ""
            raise ConfigError(f"pipeline '{name}' is a {type(stage).__name__}, not a Stage or a (name, stage) "
                              f"pair{hint}")
        if name in named:
            raise ConfigError(f"two pipelines are named '{name}'; give them distinct names")
        named[name] = stage
    if not named:
        raise ConfigError("an experiment needs at least one pipeline")
    return named


def resolve_baseline(baseline: int | str | None, names: list[str]) -> str | None:
    """The baseline's name from an index or a name; one that does not exist raises a ConfigError."""
    if baseline is None:
        return None
    if isinstance(baseline, int) and not isinstance(baseline, bool) and -len(names) <= baseline < len(names):
        return names[baseline]
    if isinstance(baseline, str) and baseline in names:
        return baseline
    raise ConfigError(f"baseline {baseline!r} is not a pipeline index or name ({', '.join(names)})")
