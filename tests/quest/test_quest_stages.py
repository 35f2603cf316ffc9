"""QUEST stages on real data at small scale: set-operation-aware scoring, the relevance classifier (a real MiniLM
cross-encoder), training pairs, a few training steps, saving and threshold tuning."""

from __future__ import annotations

import numpy as np
import pytest

from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents
from sleuth.errors import ConfigError, InputError
from sleuth.stages.run import Hit, Run
from sleuth.systems.quest.classifier_training import ExampleBudget, TrainingConfig, training_pairs
from sleuth.systems.quest.cut import THRESHOLDS, SetCut, best_cut, cut_sweep, predicted_sets
from sleuth.systems.quest.methods import corpus_documents, quest_workspace, retriever
from sleuth.systems.quest.ranking import SetWithRanking, set_members
from sleuth.systems.quest.set_ops import SetOperations
from sleuth.systems.quest.task import load_task
from sleuth.systems.quest.templates import ParsedQuery


@pytest.fixture(scope="module")
def quest_setup(data_dir, tmp_path_factory):
    """The proxy corpus of the real val split (about 1,500 documents), its BM25 workspace and the val task."""
    folder = tmp_path_factory.mktemp("quest")
    documents = folder / "documents.jsonl"
    write_quest_documents(documents, quest_attribution_documents(data_dir / "quest" / "val.jsonl"))
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLEUTH_HOME", str(home))
        ws = quest_workspace(documents, show_progress=False)
        ws.bm25()
    task = load_task(data_dir / "quest" / "val.jsonl", ["films", "books"])
    return ws, task


def fixed(template: str, *constraints: str):
    return lambda text: ParsedQuery(template, constraints)


def test_union_keeps_the_better_constraint_and_expansion_adds_its_documents(quest_setup):
    ws, task = quest_setup
    query = task.queries[0]  # "Philippine remakes of South Korean films or 2010s prison dramas"
    bm25 = retriever(ws, "bm25", 20)
    candidates = bm25.transform([query])
    stage = SetOperations(retriever(ws, "bm25", 20), normalise="minmax", expand=bm25, expand_depth=20)
    run = stage.transform([query], candidates)
    hits = run[query.id]
    assert hits[0].extras["template"] == "_ or _" and len(hits[0].extras["constraints"]) == 2
    for hit in hits:
        assert hit.score == pytest.approx(max(hit.extras["constraint_scores"]))
        assert all(0.0 <= s <= 1.0 for s in hit.extras["constraint_scores"])
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    pooled = {h.id for h in hits}
    assert {h.id for h in candidates[query.id]} < pooled  # the disjuncts' own results joined the pool
    assert len(set(query.metadata["docs"]) & pooled) >= len(set(query.metadata["docs"]) & {
        h.id for h in candidates[query.id]})


def test_difference_subtracts_the_negated_constraint(quest_setup):
    ws, task = quest_setup
    query = task.queries[0]
    candidates = retriever(ws, "bm25", 30).transform([query])
    parser = fixed("_ that are not _", "films", "prison")
    run = SetOperations(retriever(ws, "bm25", 30), parser=parser, normalise="minmax").transform([query], candidates)
    for hit in run[query.id]:
        positive, negated = hit.extras["constraint_scores"]
        assert hit.score == pytest.approx(min(positive, 1.0 - negated))
    most_prison = max(run[query.id], key=lambda h: h.extras["constraint_scores"][1])
    assert most_prison.score == 0.0 and run[query.id][-1].score == 0.0


def test_anchored_difference_needs_the_whole_query_and_softens_the_subtraction(quest_setup):
    ws, task = quest_setup
    query = task.queries[0]
    candidates = retriever(ws, "bm25", 30).transform([query])
    parser = fixed("_ that are not _", "films", "prison")
    stage = SetOperations(retriever(ws, "bm25", 30), parser=parser, normalise="minmax", anchor=True, not_weight=0.5)
    hits = stage.transform([query], candidates)[query.id]
    assert len(hits) == len(candidates[query.id])
    for hit in hits:
        positive, negated = hit.extras["constraint_scores"]
        whole = hit.extras["whole_score"]
        assert hit.score == pytest.approx(min(whole, positive, 1.0 - 0.5 * negated))
    # the whole query's best BM25 match has whole score 1, so only the constraints can lower it
    best = next(h for h in hits if h.id == candidates[query.id][0].id)
    assert best.extras["whole_score"] == pytest.approx(1.0)
    assert min(h.score for h in hits) == 0.0  # the whole query's worst candidate (min-max 0) is out whatever else
    union = SetOperations(retriever(ws, "bm25", 30), parser=fixed("_ or _", "films", "prison"), normalise="minmax",
                          anchor=True).transform([query], candidates)[query.id]
    assert all(h.score == pytest.approx(h.extras["whole_score"]) for h in union)  # a union keeps the whole query
    with pytest.raises(ConfigError, match="not_weight"):
        SetOperations(retriever(ws, "bm25", 5), not_weight=1.5)


def test_an_atomic_query_keeps_the_scorers_order_and_a_threshold_cuts(quest_setup):
    ws, task = quest_setup
    query = task.queries[0]
    candidates = retriever(ws, "bm25", 15).transform([query])
    run = SetOperations(retriever(ws, "bm25", 15), parser=fixed("_", "anything"), normalise="minmax",
                        threshold=0.5).transform([query], candidates)
    assert [h.id for h in run[query.id]] == [h.id for h in candidates[query.id]][:len(run[query.id])]
    assert run[query.id] and all(h.score > 0.5 for h in run[query.id])
    with pytest.raises(ConfigError, match="needs candidates"):
        SetOperations(retriever(ws, "bm25", 5)).transform([query], None)
    with pytest.raises(ConfigError, match="normalise"):
        SetOperations(retriever(ws, "bm25", 5), normalise="zscore")


def test_a_set_pipelines_full_ranking_continues_past_its_set_and_its_candidates(quest_setup):
    """SetWithRanking: the set's members first (the pipeline's own set), then every candidate it scored, then the
    first-stage retriever's ranking beyond them; a pipeline without a set rule keeps its run, all members."""
    ws, task = quest_setup
    queries = [q for q in task.queries if " and " in q.text or " not " in q.text][:3]
    first = retriever(ws, "bm25", 15)
    setops = SetOperations(retriever(ws, "bm25", 15), normalise="minmax", anchor=True, not_weight=0.5,
                           threshold=SetCut(0.6), set_threshold=SetCut(0.8, keep_top=True))
    pipeline = first >> setops
    sets = pipeline.transform(queries)
    ranked = SetWithRanking(pipeline, 40).transform(queries)
    deep = retriever(ws, "bm25", 40).transform(queries)
    for query in queries:
        hits, members = ranked[query.id], [h.id for h in sets[query.id]]
        assert [h.id for h in set_members(hits)] == members and len(members) < 15
        assert [h.id for h in hits[:len(members)]] == members
        assert len(hits) == 40 and len({h.id for h in hits}) == 40
        scored = {h.id for h in hits[:15]}
        assert scored == {h.id for h in first.transform([query])[query.id]}
        assert [h.id for h in hits[15:]] == [h.id for h in deep[query.id] if h.id not in scored][:25]
    plain = SetWithRanking(retriever(ws, "bm25", 10), 40).transform(queries[:1])[queries[0].id]
    assert len(plain) == 10 and set_members(plain) == plain


def test_training_pairs_follow_the_budget(quest_setup):
    ws, task = quest_setup
    documents = corpus_documents(ws)
    queries = task.queries[:3]
    retrieved = retriever(ws, "bm25", 100).transform(queries)
    budget = ExampleBudget(positive_repeats=2, retriever_negatives=4, random_negatives=3, retriever_depth=100, seed=1)
    pairs = training_pairs(queries, task.gold, documents, retrieved, budget)
    positives = sum(2 * len([d for d in set(q.metadata["docs"]) if d in documents.texts]) for q in queries)
    assert sum(label for _, label in pairs) == positives
    assert len(pairs) - positives == 3 * (4 + 3)
    assert pairs == training_pairs(queries, task.gold, documents, retrieved, budget)  # seeded
    first = queries[0]
    negatives = [text for text, label in pairs if label == 0.0 and text.startswith(f"query: {first.text}, doc:")]
    gold_inputs = {documents.input(first.text, d) for d in first.metadata["docs"] if d in documents.texts}
    assert negatives and not gold_inputs & set(negatives)
    assert all(text.startswith("query: ") and ", doc: " in text for text, _ in pairs)


def test_threshold_sweep_by_hand():
    run = Run({"q1": [Hit("a", 0.97), Hit("b", 0.6), Hit("c", 0.2)], "q2": [Hit("d", 0.92), Hit("e", 0.5)]})
    gold = {"q1": ["a"], "q2": ["d", "e"]}
    assert predicted_sets(run, 0.55) == {"q1": ["a", "b"], "q2": ["d"]}
    sweep = cut_sweep(run, gold)
    assert [row["threshold"] for row in sweep] == list(THRESHOLDS) and THRESHOLDS[-1] == 0.95
    f1 = {row["threshold"]: row["F1"] for row in sweep}
    assert f1[0.15] == pytest.approx((0.5 + 1) / 2)  # q1 {a, b, c}, q2 {d, e}
    assert f1[0.2] == pytest.approx((2 / 3 + 1) / 2)  # q1 {a, b}
    assert f1[0.5] == pytest.approx((2 / 3 + 2 / 3) / 2)  # q2 {d}: e's 0.5 is not above 0.5
    assert f1[0.6] == pytest.approx((1 + 2 / 3) / 2) and f1[0.95] == pytest.approx(0.5)
    assert best_cut(sweep) == SetCut(0.2)  # the lowest of the tied best


def test_the_retriever_vote_mixes_min_max_scaled_retriever_scores():
    from sleuth.systems.quest.classify import fused
    from sleuth.systems.quest.methods import fused_run, tune_fusion

    assert fused(np.array([0.9, 0.1]), np.array([2.0, 12.0]), 0.0).tolist() == pytest.approx([0.9, 0.1])
    assert fused(np.array([0.9, 0.1]), np.array([2.0, 12.0]), 0.5).tolist() == pytest.approx([0.45, 0.55])
    classified = Run({"q": [Hit("a", 0.9), Hit("b", 0.2), Hit("c", 0.1)]})
    retrieved = Run({"q": [Hit("c", 30.0), Hit("b", 20.0), Hit("a", 10.0)]})
    assert [h.id for h in fused_run(classified, retrieved, 1.0)["q"]] == ["c", "b", "a"]
    weight, cut, f1 = tune_fusion(classified, retrieved, {"q": ["b", "c"]})
    assert f1 == pytest.approx(1.0) and weight > 0.5  # only the retriever ranks b and c first
    assert [h.id for h in cut.members(fused_run(classified, retrieved, weight)["q"])] == ["c", "b"]


def test_a_score_gap_and_keep_top_cut_the_set():
    run = Run({"q1": [Hit("a", 0.97), Hit("b", 0.6), Hit("c", 0.2)], "q2": [Hit("d", 0.4), Hit("e", 0.1)]})
    assert predicted_sets(run, SetCut(0.1, gap=0.3)) == {"q1": ["a"], "q2": ["d"]}  # b is .37 below a
    assert predicted_sets(run, SetCut(0.5)) == {"q1": ["a", "b"], "q2": []}
    assert predicted_sets(run, SetCut(0.5, keep_top=True)) == {"q1": ["a", "b"], "q2": ["d"]}
    gold = {"q1": ["a"], "q2": ["d"]}
    sweep = cut_sweep(run, gold, gaps=(None, 0.3), keep_top=(False, True))
    assert len(sweep) == len(THRESHOLDS) * 4
    assert {(r["threshold"], r["gap"], r["keep_top"]) for r in sweep if r["F1"] == 1.0} >= {(0.1, 0.3, False),
                                                                                          (0.6, None, True)}
    assert best_cut(sweep) == SetCut(0.6, keep_top=True)  # of the rules with F1 1: no gap first, lowest threshold
    assert SetCut.from_record(0.4) == SetCut(0.4) and SetCut.from_record(SetCut(0.3, 0.2, True).record()) == \
        SetCut(0.3, 0.2, True)
    with pytest.raises(ConfigError, match="gap"):
        SetCut(0.5, gap=0.0)


@pytest.mark.slow
def test_classifier_trains_saves_reloads_and_classifies(quest_setup, tmp_path):
    from sleuth.models.cross_encoder import CrossEncoderClassifier
    from sleuth.systems.quest.classifier_training import read_training_record, save_classifier, train_classifier
    from sleuth.systems.quest.classify import Classify

    ws, task = quest_setup
    queries = task.queries[:2]
    retrieved = retriever(ws, "bm25", 50).transform(queries)
    pairs = training_pairs(queries, task.gold, corpus_documents(ws), retrieved,
                           ExampleBudget(positive_repeats=1, retriever_negatives=2, random_negatives=2))
    classifier, losses = train_classifier(pairs[:12], TrainingConfig(batch_size=4, max_steps=2, max_length=128),
                                          show_progress=False)
    assert len(losses) == 2 and all(np.isfinite(losses))
    path = save_classifier(classifier, tmp_path / "clf", {"thresholds": {"bm25": 0.4}})
    assert read_training_record(path)["thresholds"] == {"bm25": 0.4}
    reloaded = CrossEncoderClassifier(str(path), max_length=128)
    texts = [text for text, _ in pairs[:5]]
    assert reloaded.logits(texts) == pytest.approx(classifier.logits(texts), abs=1e-4)

    candidates = retriever(ws, "bm25", 8).transform(queries)
    classify = Classify(reloaded, threshold=None)
    ranked = classify.transform(queries, candidates)
    assert all(0.0 < h.score < 1.0 and "classify_input_score" in h.extras for h in ranked[queries[0].id])
    assert len(classify.cache) == sum(len(hits) for hits in candidates.values())
    middle = float(np.median([h.score for h in ranked[queries[0].id]]))
    cut = Classify(reloaded, threshold=middle).transform(queries, candidates)
    assert 0 < len(cut[queries[0].id]) < len(ranked[queries[0].id])
    assert all(h.score > middle for h in cut[queries[0].id])
    no_text = Run({queries[0].id: [Hit("x", 1.0, title="x")]})
    with pytest.raises(InputError, match="carries no text"):
        classify.transform(queries[:1], no_text)
    with pytest.raises(ConfigError, match="threshold"):
        Classify(reloaded, threshold=1.5)


@pytest.mark.slow
def test_a_lora_classifier_trains_and_ships_as_a_small_adapter(quest_setup, tmp_path):
    from sleuth.models.adapters import adapter_bytes, adapter_info, is_adapter
    from sleuth.models.cross_encoder import CrossEncoderClassifier
    from sleuth.systems.quest.classifier_training import train_classifier

    ws, task = quest_setup
    queries = task.queries[:2]
    pairs = training_pairs(queries, task.gold, corpus_documents(ws), retriever(ws, "bm25", 50).transform(queries),
                           ExampleBudget(positive_repeats=1, retriever_negatives=2, random_negatives=2))
    config = TrainingConfig(batch_size=4, max_steps=2, max_length=64, lora_rank=4, lora_layers=(4, 5), threads=1,
                            learning_rate=5e-4)
    classifier, losses = train_classifier(pairs[:8], config, show_progress=False)
    assert len(losses) == 2 and all(np.isfinite(losses))
    trainable = {n for n, p in classifier.model.named_parameters() if p.requires_grad}
    assert trainable and not any("layer.0." in n or "layer.3." in n for n in trainable)  # lower layers frozen
    path = classifier.save(tmp_path / "adapter", card="# card\n")
    assert is_adapter(path) and adapter_info(path)["backbone"] == "minilm" and adapter_bytes(path) < 5_000_000
    assert (path / "README.md").read_text() == "# card\n"
    texts = [text for text, _ in pairs[:4]]
    expected = classifier.logits(texts)
    reloaded = CrossEncoderClassifier(str(path), max_length=64)
    assert reloaded.logits(texts) == pytest.approx(expected, abs=1e-4)
    assert classifier.merge().logits(texts) == pytest.approx(expected, abs=1e-4)


def test_builtin_quest_pipelines_validate_and_tuned_thresholds_resolve(tmp_path):
    from sleuth.pipelines.config import builtin_pipelines, validate_pipeline
    from sleuth.systems.quest.builders import resolve_set_threshold, resolve_threshold
    from sleuth.systems.quest.classifier_training import write_training_record

    names = sorted(n for n in builtin_pipelines() if n.startswith("quest-"))
    assert names == ["quest-bm25", "quest-bm25-classify", "quest-bm25-setops", "quest-dense", "quest-dense-classify",
                     "quest-dense-setops"]
    for name in names:
        validate_pipeline(name)
    write_training_record(tmp_path, {"thresholds": {"bm25": 0.85}})  # an older record: thresholds only
    assert resolve_threshold("tuned", str(tmp_path), "bm25") == SetCut(0.85)
    assert resolve_threshold(0.3, str(tmp_path), "bm25") == SetCut(0.3) and resolve_threshold(None, None, "x") is None
    write_training_record(tmp_path, {"cuts": {"bm25": {"threshold": 0.4, "gap": 0.3, "keep_top": True}}})
    assert resolve_threshold("tuned", str(tmp_path), "bm25") == SetCut(0.4, 0.3, True)
    with pytest.raises(ConfigError, match="no tuned threshold for 'dense'"):
        resolve_threshold("tuned", str(tmp_path), "dense")
    # set-operation queries' rule: the recorded one, else (an older record, or a given threshold) threshold's
    assert resolve_set_threshold("tuned", "tuned", str(tmp_path), "bm25+setops") is None
    write_training_record(tmp_path, {"set_operation_cuts": {"bm25+setops": {"threshold": 0.7, "gap": 0.2}}})
    assert resolve_set_threshold("tuned", "tuned", str(tmp_path), "bm25+setops") == SetCut(0.7, 0.2)
    assert resolve_set_threshold("tuned", 0.5, str(tmp_path), "bm25+setops") is None
    assert resolve_set_threshold(0.6, "tuned", str(tmp_path), "bm25+setops") == SetCut(0.6)
    # a wrong rule names the pipeline, the stage and the key (once a ConfigError without them, or a float() error)
    from sleuth.pipelines.config import load_pipeline
    from sleuth.pipelines.workspace import Workspace

    for key, value, message in (("set_threshold", 1.5, "set_threshold must be in"),
                                ("set_threshold", "loose", "set_threshold must be a number"),
                                ("threshold", True, "threshold must be a number")):
        with pytest.raises(ConfigError, match=f"pipeline 'setops', stage 1 'setops': {message}"):
            load_pipeline("setops", Workspace(), **{key: value})
