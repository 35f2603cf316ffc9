"""A QUEST evaluation task: examples with their gold sets, templates and domains, and the evaluation of a Run
(predicted sets plus rankings) or of a predictions file against them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sleuth.corpus.model import Query
from sleuth.corpus.quest import numbered_quest_examples
from sleuth.errors import ConfigError, InputError
from sleuth.stages.run import Run
from sleuth.systems.quest.set_metrics import (
    RECALL_KS,
    average,
    check_gold,
    grouped,
    recall_per_query,
    set_per_query,
)


@dataclass
class QuestTask:
    """Queries with non-empty gold sets; ``gold``, ``templates`` and ``domains`` are keyed by query id;
    ``lines``: where each query was read (file, line), when it was read from a file."""

    queries: list[Query]
    lines: dict[str, tuple[str | Path, int]] = field(default_factory=dict, repr=False)

    @property
    def gold(self) -> dict[str, list[str]]:
        return {q.id: list(q.metadata.get("docs") or []) for q in self.queries}

    @property
    def templates(self) -> dict[str, str]:
        return {q.id: q.metadata.get("template") or "?" for q in self.queries}

    @property
    def domains(self) -> dict[str, str]:
        return {q.id: q.metadata.get("domain") or "?" for q in self.queries}

    def subset(self, ids: Iterable[str]) -> QuestTask:
        keep = set(ids)
        return QuestTask([q for q in self.queries if q.id in keep], self.lines)

    def where(self, query_id: str) -> dict[str, Any]:
        """``path`` and ``line`` of a query, for an InputError that names them (None when not read from a file)."""
        path, line = self.lines.get(query_id, (None, None))
        return {"path": path, "line": line}


def load_task(paths: str | Path | Sequence[str | Path], domains: Sequence[str] | None = None,
              skip_empty: bool = False) -> QuestTask:
    """Examples of one or more files, optionally only some domains. An example with an empty gold set stays (the
    metrics then raise an error naming it) unless ``skip_empty``, which drops it (QUEST's train split has ten).
    A file without examples is an InputError naming it, and so is a query id given twice (in one file or two);
    domains that select nothing, a ConfigError naming those the files have."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    queries: list[Query] = []
    lines: dict[str, tuple[str | Path, int]] = {}
    for path in paths:
        read = list(numbered_quest_examples(path))
        if not read:
            raise InputError("no QUEST examples (a JSON object per line with query and docs)", path=path)
        for line, query in read:  # a repeat within one file is refused as it is read
            if query.id in lines:
                raise InputError(f"query id '{query.id}' is also on line {lines[query.id][1]:,} of "
                                 f"{lines[query.id][0]} (give the examples unique ids)", path=path, line=line)
            lines[query.id] = (path, line)
            queries.append(query)
    if domains:
        present = sorted({str(q.metadata.get("domain")) for q in queries})
        queries = [q for q in queries if q.metadata.get("domain") in set(domains)]
        if not queries:
            raise ConfigError(f"no examples in domain {', '.join(domains)}; the examples' domains: "
                              f"{', '.join(present)}")
    if skip_empty:
        queries = [q for q in queries if q.metadata.get("docs")]
        if not queries:
            raise InputError("no example with a non-empty gold set (docs)", path=paths[0])
    return QuestTask(queries, lines)


def joined_predictions(task: QuestTask, predicted: dict[str, Query], path: str | Path,
                       gold: str | Path) -> dict[str, Query]:
    """The predictions of the task's queries (by query id), each checked to ask the same query as its gold one.
    Predictions of queries the gold file does not hold are left out (as trec_eval leaves out a run's unjudged
    queries: a prediction file of a whole split scores against a gold subset); a file none of whose ids is a gold
    query's is refused. A predictions file without ids is joined by line number, so a file in another order, or a
    different file, would otherwise be scored against the wrong gold sets without a word."""
    texts = {q.id: q.text for q in task.queries}
    unknown = sorted(set(predicted) - set(texts))
    if unknown and len(unknown) == len(predicted):
        # the hint's prefix: the gold ids' own ('val' of val-0001) where they have one (before: the file's name,
        # which gave 'val30' for a val30.jsonl whose ids are val-NNNN, and failed again)
        first = task.queries[0].id if task.queries else ""
        prefix = first.rsplit("-", 1)[0] if "-" in first else Path(gold).name.split(".")[0]
        theirs = unknown[0].rsplit("-", 1)[0] if "-" in unknown[0] else ""
        renamed = (f"; {Path(gold).name} numbers its queries by its own name ({first}, ...): to keep "
                   f"{theirs}.jsonl's ids ({unknown[0]}, ...) in a part of it, save the part as {theirs}.jsonl in "
                   "another folder, or give its rows 'id' fields") if theirs and theirs != prefix else ""
        raise ConfigError(f"{path}: query id '{unknown[0]}' is not in {gold}, nor is any of its {len(unknown)} "
                          f"ids; predictions are joined to gold by id (a file without ids by line: --id-prefix "
                          f"{prefix} if it lists {Path(gold).name}'s queries in its order){renamed}")
    predicted = {qid: query for qid, query in predicted.items() if qid in texts}
    for qid, query in predicted.items():
        if " ".join(query.text.split()) != " ".join(texts[qid].split()):
            raise ConfigError(f"{path}: the prediction for '{qid}' is for the query '{query.text}', but {gold}'s "
                              f"'{qid}' is '{texts[qid]}'; predictions are joined to gold by id (a file without "
                              f"ids by line: it must list the gold queries in the same order)")
    return predicted


def run_sets(run: Run) -> dict[str, list[str]]:
    """The predicted set of every query of a run: its hits' ids."""
    return {qid: [h.id for h in hits] for qid, hits in run.items()}


def evaluate(task: QuestTask, predicted: Mapping[str, Sequence[str]] | None = None,
             ranking: Mapping[str, Sequence[str]] | None = None, ks: Sequence[int] = RECALL_KS) -> dict[str, dict]:
    """Average set P / R / F1 of ``predicted`` and Recall@K / MRecall@K of ``ranking`` (either may be None):
    ``{"overall": {...}, "per_template": {t: {...}}, "per_domain": {d: {...}}, "count": {...}}``."""
    gold = task.gold
    check_gold(gold, task.where)  # with the file and line of an empty gold set
    values: dict[str, dict[str, float]] = {}
    if predicted is not None:
        values.update(set_per_query(predicted, gold))
    if ranking is not None:
        values.update(recall_per_query(ranking, gold, ks))
    counts = {"overall": len(gold)}
    for group in (task.templates, task.domains):
        for label in group.values():
            counts[label] = counts.get(label, 0) + 1
    return {"overall": average(values), "per_template": grouped(values, task.templates),
            "per_domain": grouped(values, task.domains), "count": counts}
