"""IR measures (nDCG@10, R@100, RR, AP, P@10 ...) of a Run against Qrels, computed by ir_measures.

Convention: every query of the qrels counts; a judged query that the run lacks (or ranks nothing for) scores 0.
Queries of the run without qrels are ignored. Rankings are evaluated in the Run's own order (as listed), so ties
are never re-broken by the evaluator.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import ir_measures
from ir_measures import Measure

from sleuth.corpus.model import Qrels
from sleuth.corpus.qrels import checked_qrels
from sleuth.errors import ConfigError
from sleuth.stages.run import Run

MeasureLike = str | Measure
#: the deepest cutoff taken (nDCG@1000000): deeper ones only overflow the evaluator (pytrec_eval's C longs)
MAX_CUTOFF = 1_000_000


def parse_measures(names: MeasureLike | Iterable[MeasureLike]) -> list[Measure]:
    """Parse measure names ("nDCG@10", "R@100", "RR", "AP", "P@10", "RR@10") in order, without repeats.

    A name is ir_measures' (its measure names in any case: ``ndcg@10``, ``map``, ``mrr@10``) or trec_eval's, as
    PyTerrier users write them (``ndcg_cut_10``, ``ndcg_cut.10``, ``recall_100``, ``P_10``, ``recip_rank``; one
    measure a name). Anything but a name or a list of them, a name that is not a known measure, or one whose cutoff
    is not a whole number from 1 to ``MAX_CUTOFF``, raises a ConfigError naming it (whether it can be computed is
    :func:`check_measures`). ``str(measure)`` is the canonical name.
    """
    if isinstance(names, (str, Measure)):
        names = [names]
    elif not isinstance(names, Iterable):  # before: a TypeError ('NoneType' object is not iterable)
        raise ConfigError(f"measures are a name or a list of names such as nDCG@10, R@100; got {names!r:.60}")
    measures: list[Measure] = []
    for name in names:
        try:
            measure = name if isinstance(name, Measure) else parse_measure_name(name)
        except (ValueError, NameError, TypeError, SyntaxError) as error:
            hint = "expected e.g. nDCG@10, R@100, RR, AP, P@10"
            raise ConfigError(f"unknown measure '{name}' ({hint}): {error}") from None
        unknown = sorted(set(measure.params) - set(getattr(measure, "SUPPORTED_PARAMS", measure.params)))
        if unknown:  # before: accepted here, then a KeyError traceback from ir_measures when named
            known = ", ".join(sorted(getattr(measure, "SUPPORTED_PARAMS", {})))
            raise ConfigError(f"measure '{name}': unknown parameter{'s' if len(unknown) > 1 else ''} "
                              f"{', '.join(unknown)} (known: {known})")
        cutoff = measure.params.get("cutoff")
        if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1):
            # pytrec_eval aborts the whole process (a C assertion) on a cutoff of 0
            raise ConfigError(f"measure '{name}': the cutoff must be a whole number of at least 1, got {cutoff}")
        if cutoff is not None and cutoff > MAX_CUTOFF:
            raise ConfigError(f"measure '{name}': the cutoff must be at most {MAX_CUTOFF:,}, got {cutoff:,}")
        if measure not in measures:
            measures.append(measure)
    return measures


def parse_measure_name(name: str) -> Measure:
    """One measure by name: ir_measures' own syntax, then its measure name matched without regard to case
    (``ndcg@10`` -> nDCG@10), then trec_eval's name of a single measure (``ndcg_cut_10`` -> nDCG@10); raises what
    ir_measures raises for the name as given where none reads it."""
    try:
        return ir_measures.parse_measure(name)
    except (ValueError, NameError, TypeError, SyntaxError) as error:
        first_error = error
    head, rest = re.match(r"([^@(]*)(.*)", name.strip()).groups()  # type: ignore[union-attr]
    known = {key.casefold(): key for key in reversed(list(ir_measures.measures.registry))}  # first spelling wins
    if head.casefold() in known and known[head.casefold()] != head:
        try:
            return ir_measures.parse_measure(known[head.casefold()] + rest)
        except (ValueError, NameError, TypeError, SyntaxError):
            pass
    try:
        trec = list(ir_measures.parse_trec_measure(name.strip()))
    except (ValueError, NameError, TypeError, SyntaxError, KeyError, AttributeError):
        trec = []
    if len(trec) == 1:
        return trec[0]
    raise first_error


def check_measures(measures: Iterable[Measure], qrels: Qrels) -> None:
    """Compute each measure once on ``qrels`` (checked, as :func:`per_query` takes them) and a made-up run of their
    judged documents, so that one the evaluator cannot compute (a bad parameter, ``AP(rel=0)``; no installed
    provider; gdeval's ERR@10 on query ids that are not numbers) is a ConfigError naming it before anything runs."""
    run = {qid: {doc: float(len(docs) - rank) for rank, doc in enumerate(sorted(docs))} for qid, docs in qrels.items()}
    for measure in measures:
        try:
            with _stderr_silenced():  # gdeval's perl prints its own complaint
                reported = {metric.query_id for metric in ir_measures.iter_calc([measure], qrels, run)}
        except Exception as error:  # the evaluators raise anything from KeyError to AssertionError
            raise ConfigError(f"measure '{measure}' cannot be computed: {_reason(error)}") from None
        if not reported <= set(qrels):  # gdeval reads query 'a-1' as '1'
            raise ConfigError(f"measure '{measure}' cannot be computed: its evaluator reads the query ids "
                              f"differently (it reports {sorted(reported - set(qrels))[:3]})")


def _reason(error: Exception) -> str:
    """Why an evaluator failed, in words."""
    if isinstance(error, subprocess.CalledProcessError):
        return "its evaluator (gdeval, run by perl) refused the judgements: it takes only query ids that are " \
               "numbers and relevances of at most 4"
    message = " ".join(str(error).split()) or type(error).__name__
    return re.sub(r"invalid param (\w+)=<object object at 0x[0-9a-f]+>", r"parameter \1 is required", message)


@contextmanager
def _stderr_silenced() -> Iterator[None]:
    """Drop what is written to file descriptor 2 (by a subprocess too) inside the block."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to silence
        yield
        return
    try:
        with open(os.devnull, "w") as sink:
            os.dup2(sink.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def rank_scores(run: Run) -> dict[str, dict[str, float]]:
    """``{qid: {doc_id: score}}`` with scores from ranks (first hit highest); a repeated id keeps its best rank."""
    scores: dict[str, dict[str, float]] = {}
    for qid, hits in run.items():
        ranking: dict[str, float] = {}
        for rank, hit in enumerate(hits):
            ranking.setdefault(hit.id, float(len(hits) - rank))
        scores[qid] = ranking
    return scores


def per_query(run: Run, qrels: Qrels, measures: MeasureLike | Iterable[MeasureLike]) -> dict[str, dict[str, float]]:
    """``{measure_name: {qid: value}}`` over every query of ``qrels`` (sorted ids); missing queries score 0.
    ``qrels`` as :func:`sleuth.corpus.qrels.checked_qrels` takes them (a relevance that is not a whole number is a
    ConfigError)."""
    parsed = parse_measures(measures)
    judged = checked_qrels(qrels)
    qids = sorted(judged)
    values: dict[str, dict[str, float]] = {str(m): dict.fromkeys(qids, 0.0) for m in parsed}
    if not qids or not parsed:
        return values
    ranked = {qid: docs for qid, docs in rank_scores(run).items() if qid in judged and docs}
    try:
        for metric in ir_measures.iter_calc(parsed, judged, ranked):
            if metric.query_id in judged:
                values[str(metric.measure)][metric.query_id] = float(metric.value)
    except Exception as error:  # e.g. a measure whose provider is not installed
        raise ConfigError(f"cannot compute {', '.join(map(str, parsed))}: {_reason(error)}") from None
    return values


def mean(values: Iterable[float]) -> float:
    """The arithmetic mean, 0.0 for no values."""
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def aggregate(metric: str, values: Iterable[float]) -> float:
    """A measure's figure over the queries as ir_measures and trec_eval give it: the mean, but the sum of a count
    (NumRet, NumRel, NumRelRet, NumQ: before, averaged); the mean for a name that is not an ir_measures measure (an
    answer accuracy), 0.0 for no values."""
    values = list(values)
    try:
        measure = parse_measure_name(metric)
    except (ValueError, NameError, TypeError, SyntaxError, KeyError):
        return mean(values)
    if not values:
        return 0.0
    aggregator = measure.aggregator()
    for value in values:
        aggregator.add(value)
    return float(aggregator.result())


def evaluate(run: Run, qrels: Qrels, measures: MeasureLike | Iterable[MeasureLike]) -> dict[str, float]:
    """``{measure_name: its figure over the queries of qrels}`` (:func:`aggregate`: the mean, the sum of a count);
    queries missing from the run count as 0."""
    return {name: aggregate(name, by_query.values()) for name, by_query in per_query(run, qrels, measures).items()}
