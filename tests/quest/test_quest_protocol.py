"""QUEST's val protocol on real val queries: the fixed tuning / report split, `sleuth quest train`'s tuning on the
tuning half, rules that never read the report half (the shipped classifier), and the voting setops stage scoring
as the protocol's offline tuning does."""

from __future__ import annotations

import hashlib
import json

import pytest

from sleuth.corpus.model import Query
from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents
from sleuth.errors import ConfigError
from sleuth.systems.quest.task import load_task
from sleuth.systems.quest.val_halves import half_of, split_halves

PER_HALF = 4
DEPTH = 5


@pytest.fixture(scope="module")
def val_task(data_dir):
    return load_task(data_dir / "quest" / "val.jsonl", ["films", "books"])


def test_the_split_is_fixed_disjoint_and_halves_val(val_task):
    tune, report = split_halves(val_task.queries)
    assert (len(tune), len(report)) == (89, 93)
    assert not {q.id for q in tune} & {q.id for q in report}
    assert {q.id for q in tune} | {q.id for q in report} == {q.id for q in val_task.queries}
    reordered = [Query(f"other-{i}", q.text, q.metadata) for i, q in enumerate(reversed(val_task.queries))]
    assert {q.text for q in split_halves(reordered)[0]} == {q.text for q in tune}  # text decides, not order or id
    for query in tune[:5]:
        assert int(hashlib.sha1(query.text.encode("utf-8")).hexdigest(), 16) % 2 == 0
        assert half_of(query.text) == "tune"


def test_quest_train_tunes_on_the_tuning_half_only(val_task):
    from sleuth.systems.quest.classifier_training import Documents
    from sleuth.systems.quest.task import QuestTask
    from sleuth.systems.quest.training import TuningPlan, tuning_queries

    titles = {d: d for docs in val_task.gold.values() for d in docs}
    documents = Documents(titles, dict(titles))
    tune, report = split_halves(val_task.queries)
    chosen, _ = tuning_queries(TuningPlan(tune=val_task, held_out=1000), [], documents)
    assert [q.id for q in chosen] == [q.id for q in tune]
    everything, _ = tuning_queries(TuningPlan(tune=QuestTask(val_task.queries), held_out=1000, tune_half=False),
                                   [], documents)
    assert {q.id for q in report} <= {q.id for q in everything}


@pytest.fixture(scope="module")
def small_val(data_dir, tmp_path_factory, val_task):
    """A val file of the first PER_HALF films/books queries of each half, their proxy corpus, and a home."""
    folder = tmp_path_factory.mktemp("quest-protocol")
    tune, report = split_halves(val_task.queries)
    texts = {q.text for q in tune[:PER_HALF] + report[:PER_HALF]}
    lines = [line for line in (data_dir / "quest" / "val.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip() and json.loads(line)["query"] in texts]
    examples = folder / "val.jsonl"
    examples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    documents = folder / "documents.jsonl"
    write_quest_documents(documents, quest_attribution_documents(data_dir / "quest" / "val.jsonl"))
    return examples, documents, folder, tmp_path_factory.mktemp("home")


def with_gold(examples, target, half: str) -> None:
    """``examples`` with each ``half`` query's gold cut to its first document, written to ``target``."""
    rows = [json.loads(line) for line in examples.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if half_of(row["query"]) == half:
            row["docs"] = row["docs"][:1] + ["not a real document"]
    target.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def test_rules_are_chosen_on_the_tuning_half_and_never_read_the_report_half(small_val, monkeypatch):
    import torch

    from sleuth.systems.quest.protocol import CandidateSource, protocol_report

    examples, documents, folder, home = small_val
    monkeypatch.setenv("SLEUTH_HOME", str(home))
    torch.set_num_threads(1)
    source, runs = CandidateSource("bm25", depth=DEPTH), folder / "runs.json"
    first = protocol_report(None, documents, examples, source, runs_path=runs, int8=True, show_progress=False)
    assert (first["tune_queries"], first["report_queries"]) == (PER_HALF, PER_HALF)
    changed = folder / "changed" / "val.jsonl"
    changed.parent.mkdir()
    with_gold(examples, changed, "report")
    second = protocol_report(None, documents, changed, source, runs_path=runs, int8=True, show_progress=False)
    assert second["rules"] == first["rules"]  # the same rules ...
    assert second["report"] != first["report"]  # ... measured against the changed report gold
    control = folder / "control" / "val.jsonl"
    control.parent.mkdir()
    with_gold(examples, control, "tune")
    third = protocol_report(None, documents, control, source, runs_path=runs, int8=True, show_progress=False)
    assert third["rules"]["tuned_f1"] != first["rules"]["tuned_f1"]  # the tuning half's gold does reach the rules
    with pytest.raises(ConfigError, match="other inputs"):
        protocol_report(None, documents, examples, CandidateSource("bm25", depth=DEPTH - 1), runs_path=runs,
                        int8=True, show_progress=False)


def test_the_voting_setops_stage_scores_as_the_protocol_tunes(small_val, monkeypatch, val_task):
    """The pipelines' setops stage (anchored, a share of the set operation, voting with BM25) gives the scores the
    protocol's offline tuning computes from the cached runs, so the rules it chooses mean the same there."""
    import numpy as np
    import torch

    from sleuth.models.cross_encoder import CrossEncoderClassifier
    from sleuth.systems.quest.classify import Classify
    from sleuth.systems.quest.cut import SetCut, predicted_sets
    from sleuth.systems.quest.methods import (
        quest_workspace,
        routed_sets,
        set_operation_ids,
        shipped_classifier_dir,
        voted_anchored_run,
    )
    from sleuth.systems.quest.protocol import CandidateSource, score_runs
    from sleuth.systems.quest.query_parser import parse_query
    from sleuth.systems.quest.set_ops import SetOperations

    examples, documents, _, home = small_val
    monkeypatch.setenv("SLEUTH_HOME", str(home))
    torch.set_num_threads(1)
    ws = quest_workspace(documents, show_progress=False)
    task = load_task(examples)
    classifier = CrossEncoderClassifier(str(shipped_classifier_dir()))  # fp32: int8 scales depend on the batch
    runs = score_runs(ws, task, classifier, CandidateSource("bm25", depth=DEPTH))
    parsed = {q.id: parse_query(q.text) for q in task.queries}
    assert any(len(p.constraints) > 1 and not p.is_union for p in parsed.values())
    offline = voted_anchored_run(runs["classify"], runs["setops"], parsed, 0.5, runs["candidates"], 0.4, 0.25)
    stage = SetOperations(Classify(classifier), anchor=True, not_weight=0.5, retriever_weight=0.4,
                          constraint_weight=0.25)
    online = stage.transform(task.queries, runs["candidates"])
    for query in task.queries:
        want = {h.id: h.score for h in offline[query.id]}
        got = {h.id: h.score for h in online[query.id]}
        assert want.keys() == got.keys()
        assert np.allclose([got[d] for d in want], list(want.values()), atol=1e-4)
    # set-operation queries take their own set rule, the others the general one (what routed_sets predicts)
    loose, strict = SetCut(0.0), SetCut(0.9, keep_top=True)
    cut_stage = SetOperations(Classify(classifier), anchor=True, not_weight=0.5, retriever_weight=0.4,
                              constraint_weight=0.25, threshold=loose, set_threshold=strict)
    members = {qid: [h.id for h in hits] for qid, hits in cut_stage.transform(task.queries, runs["candidates"]).items()}
    assert members == routed_sets(offline, parsed, loose, strict)
    routed = [qid for qid in set_operation_ids(parsed) if members[qid] != predicted_sets(offline, loose)[qid]]
    assert routed and all(members[q] == predicted_sets(offline, loose)[q] for q in parsed if q not in routed
                          and not parsed[q].is_set_operation)
    with pytest.raises(ConfigError, match="constraint_weight"):
        SetOperations(Classify(classifier), anchor=False, constraint_weight=0.5)


def test_quest_train_records_rules_of_the_tuning_half_for_the_shipped_pipelines(small_val, monkeypatch, val_task,
                                                                                tmp_path):
    """`sleuth quest train` (two steps) with val as tuning examples: the tuning queries are all of the tuning half,
    and the record holds the voting setops rules the pipelines read."""
    import torch

    from sleuth.systems.quest.classifier_training import ExampleBudget, TrainingConfig
    from sleuth.systems.quest.methods import quest_workspace
    from sleuth.systems.quest.training import TuningPlan, train_and_tune

    examples, documents, _, home = small_val
    monkeypatch.setenv("SLEUTH_HOME", str(home))
    torch.set_num_threads(1)
    ws = quest_workspace(documents, show_progress=False)
    task = load_task(examples)
    plan = TuningPlan(tune=task, held_out=100, retrievers=("bm25",), candidates=DEPTH, expand_depth=0)
    record = train_and_tune(ws, task.subset([task.queries[0].id]), plan,
                            ExampleBudget(positive_repeats=1, retriever_negatives=2, random_negatives=2,
                                          retriever_depth=20),
                            TrainingConfig(batch_size=4, max_steps=2, max_length=64), tmp_path / "clf")
    tune, report = split_halves(task.queries)
    assert record["tune_query_ids"] == [q.id for q in tune] and len(tune) == PER_HALF
    assert not set(record["tune_query_ids"]) & {q.id for q in report}
    assert "tuning half" in record["tune_split"] and "tuning half" in record["rules_tuned_on"]
    assert {"bm25", "bm25+setops"} <= set(record["cuts"]) and "bm25+setops" in record["constraint_weights"]
    assert record["cuts"]["bm25+setops"] == record["cuts"]["bm25"]  # atomic and union queries: classify's rule
    assert set(record["set_operation_cuts"]) == {"bm25+setops"}  # set-operation queries: their own


@pytest.mark.slow
def test_a_run_that_fails_while_tuning_leaves_the_earlier_model(small_val, monkeypatch, tmp_path):
    """Before: the trained classifier replaced --out before its rules were tuned, so a run that failed (or was
    stopped) while tuning left a model whose training.json was {} where a good one had been."""
    import torch

    from sleuth.systems.quest.classifier_training import ExampleBudget, TrainingConfig
    from sleuth.systems.quest.methods import quest_workspace
    from sleuth.systems.quest.training import TuningPlan, train_and_tune

    examples, documents, _, home = small_val
    monkeypatch.setenv("SLEUTH_HOME", str(home))
    torch.set_num_threads(1)
    earlier = tmp_path / "clf"
    earlier.mkdir()
    (earlier / "config.json").write_text("{}")
    (earlier / "training.json").write_text('{"thresholds": {"bm25": 0.5}}')
    task = load_task(examples)
    plan = TuningPlan(tune=task, retrievers=("bm25", "nope"), candidates=DEPTH, expand_depth=0)  # "nope": fails late
    with pytest.raises(ConfigError, match="unknown QUEST retriever 'nope'"):
        train_and_tune(quest_workspace(documents, show_progress=False), task.subset([task.queries[0].id]), plan,
                       ExampleBudget(positive_repeats=1, retriever_negatives=2, random_negatives=2, retriever_depth=20),
                       TrainingConfig(batch_size=4, max_steps=1, max_length=64), earlier)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["clf"]  # no temporary folder left beside it
    assert sorted(path.name for path in earlier.iterdir()) == ["config.json", "training.json"]
    assert (earlier / "training.json").read_text() == '{"thresholds": {"bm25": 0.5}}'


@pytest.mark.parametrize("text, message", [('{"provenance": ', "malformed JSON"),
                                           ("[1, 2]", "not a scored-runs file")])
def test_a_broken_runs_cache_is_one_error_line(tmp_path, text, message):
    """Before: a truncated --runs cache (a killed bench) was a JSONDecodeError traceback."""
    from sleuth.errors import InputError
    from sleuth.systems.quest.protocol import cached_runs

    (tmp_path / "runs.json").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=rf"runs\.json.*{message}"):
        cached_runs(tmp_path / "runs.json", {}, lambda: {})
