"""The classifier shipped in the package on real val queries, and QUEST's service endpoint and page (FastAPI
TestClient over a real BM25 index of the val proxy corpus and the shipped adapter)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents
from sleuth.systems.quest.methods import quest_workspace, retriever, shipped_classifier_dir
from sleuth.systems.quest.task import load_task

QUERIES = 12
CANDIDATES = 20


@pytest.fixture(scope="module")
def val_setup(data_dir, tmp_path_factory):
    """The val proxy corpus, its BM25 workspace (in a module-wide home) and the films/books val task."""
    folder = tmp_path_factory.mktemp("quest-shipped")
    documents = folder / "documents.jsonl"
    write_quest_documents(documents, quest_attribution_documents(data_dir / "quest" / "val.jsonl"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SLEUTH_HOME", str(tmp_path_factory.mktemp("home")))
        ws = quest_workspace(documents, show_progress=False)
        ws.bm25()
    return ws, load_task(data_dir / "quest" / "val.jsonl", ["films", "books"]), documents


def test_the_shipped_adapter_is_small_documented_and_tuned():
    from sleuth.models.adapters import adapter_bytes, adapter_info

    path = shipped_classifier_dir()
    assert adapter_bytes(path) < 5_000_000
    assert adapter_info(path)["backbone"] == "minilm"
    card = (path / "README.md").read_text(encoding="utf-8")
    for needed in ("sleuth quest train", "seed", "Hardware", "examples/s", "held out", "tuned on val"):
        assert needed in card
    record = json.loads((path / "training.json").read_text(encoding="utf-8"))
    assert {"bm25", "bm25+setops"} <= set(record["cuts"]) and record["steps"] > 0


def test_the_setops_pipeline_is_anchored_votes_and_reads_the_tuning_half_rules(val_setup):
    from sleuth.pipelines.config import load_pipeline
    from sleuth.service.depth import Depth, depth
    from sleuth.service.served import reads
    from sleuth.systems.quest.set_ops import SetOperations

    record = json.loads((shipped_classifier_dir() / "training.json").read_text(encoding="utf-8"))
    pipeline = load_pipeline("quest-bm25-setops", val_setup[0])
    stage = pipeline.stages[-1]
    assert isinstance(stage, SetOperations) and stage.anchor and stage.expand_depth == 0
    # the service refuses a k above its 30 BM25 candidates, naming the key (before: a system stage's depth was
    # unknown, and k=100 got at most 30 hits unsaid)
    assert depth(pipeline) == Depth(30, ("bm25.k",))
    # it reads its BM25 folder alone, so a service keeps it through an update of another index (before: a system
    # stage's folders were unknown, and every update of any folder rebuilt it, classifier and all)
    folder = pipeline.stages[0].folder
    assert folder is not None and pipeline.index_folders() == {folder}
    assert reads(pipeline, folder) and not reads(pipeline, folder.parent / "another-index")
    assert stage.not_weight == record["not_weights"]["bm25+setops"]
    assert stage.retriever_weight == record["retriever_weights"]["bm25+setops"] == record["retriever_weights"]["bm25"]
    assert stage.constraint_weight == record["constraint_weights"]["bm25+setops"]
    assert "tuning half" in record["rules_tuned_on"]
    assert stage.cut is not None and stage.cut.record() == record["cuts"]["bm25+setops"]


def test_the_shipped_classifier_separates_gold_from_bm25_candidates(val_setup):
    """On real val queries, the classifier ranks gold documents above BM25's other candidates far better than
    chance (AUC) and its tuned set is more precise than BM25's top 10."""
    import torch

    from sleuth.models.cross_encoder import CrossEncoderClassifier
    from sleuth.systems.quest.builders import resolve_threshold, resolve_weight
    from sleuth.systems.quest.classify import Classify

    ws, task, _ = val_setup
    queries = task.queries[:QUERIES]
    torch.set_num_threads(1)
    candidates = retriever(ws, "bm25", CANDIDATES).transform(queries)
    classify = Classify(CrossEncoderClassifier(str(shipped_classifier_dir()), int8=True))
    scored = classify.transform(queries, candidates)
    gold = task.gold
    aucs = []
    for query in queries:
        labels = np.array([h.id in gold[query.id] for h in scored[query.id]])
        scores = np.array([h.score for h in scored[query.id]])
        if labels.any() and not labels.all():
            positives, negatives = scores[labels], scores[~labels]
            aucs.append(float((positives[:, None] > negatives[None, :]).mean()))
    assert len(aucs) >= QUERIES // 2 and np.mean(aucs) > 0.75
    shipped = Classify(classify.classifier, resolve_threshold("tuned", None, "bm25"),
                       retriever_weight=resolve_weight("tuned", None, "bm25"))
    shipped.cache = classify.cache

    def precision(sets):
        return np.mean([len(set(s) & set(gold[q])) / len(s) for q, s in sets.items() if s])

    members = {qid: [h.id for h in hits] for qid, hits in shipped.transform(queries, candidates).items()}
    bm25_top10 = {q.id: [h.id for h in candidates[q.id][:10]] for q in queries}
    assert precision(members) > precision(bm25_top10)


@pytest.fixture(scope="module")
def client(val_setup, tmp_path_factory):
    from fastapi.testclient import TestClient

    from sleuth.pipelines.config import load_pipeline
    from sleuth.service.app import create_app
    from sleuth.systems.quest.service import QuestEndpoint

    ws, _, _ = val_setup
    config = tmp_path_factory.mktemp("pipelines") / "quest-small-setops.yaml"
    config.write_text("name: quest-small-setops\nstages:\n  - bm25: {k: 5}\n"
                      "  - setops: {threshold: 0.0, system: bm25+setops, int8: true, anchor: false, not_weight: 1.0,"
                      " retriever_weight: 0.0}\n", encoding="utf-8")
    app = create_app({"bm25": retriever(ws, "bm25", 10), "quest-small-setops": load_pipeline(config, ws)},
                     extensions=[QuestEndpoint()])
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_quest_predict_gives_the_set_with_scores_and_constraints(client):
    query = "Films about World War III that are not Environmental films"
    response = client.post("/quest/predict", json={"query": query})
    assert response.status_code == 200
    body = response.json()
    assert body["pipeline"] == "quest-small-setops" and body["symbol"] == "A\\B"
    assert [c["negated"] for c in body["constraints"]] == [False, True]
    assert 0 < len(body["members"]) <= 5 + 5  # the top 5 plus the positive constraint's own top 5 at most
    scores = [m["score"] for m in body["members"]]
    assert scores == sorted(scores, reverse=True) and all(0.0 <= s <= 1.0 for s in scores)
    for member in body["members"]:
        positive, negated = member["constraint_scores"]
        assert member["score"] == pytest.approx(min(positive, 1.0 - negated))
        assert member["title"] and member["text"]
    assert client.get("/quest/pipelines").json() == {"pipelines": ["quest-small-setops"]}


def test_quest_predict_rejects_bad_requests_with_one_line(client):
    for body, status, message in (({}, 400, "'query' must be a non-empty string"),
                                  ({"query": "x", "pipeline": "bm25"}, 400, "unknown QUEST pipeline 'bm25'"),
                                  ({"query": "x", "k": 3}, 400, "k"),
                                  ([1, 2], 400, "JSON object")):
        response = client.post("/quest/predict", json=body)
        assert response.status_code == status, body
        assert message in response.json()["error"] and "\n" not in response.json()["error"]


def test_the_quest_page_and_its_files_are_served_with_the_security_headers(client):
    page = client.get("/quest")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert 'src="/quest/static/quest.js"' in page.text and 'id="members"' in page.text
    assert client.get("/static/dom.js").status_code == 200 and 'src="/static/dom.js"' in page.text  # shared helpers
    script = client.get("/quest/static/quest.js")
    assert script.status_code == 200 and "/quest/predict" in script.text and "innerHTML" not in script.text


def test_a_service_without_quest_pipelines_answers_404(val_setup):
    from fastapi.testclient import TestClient

    from sleuth.service.app import create_app
    from sleuth.systems.quest.service import QuestEndpoint

    ws, _, _ = val_setup
    with TestClient(create_app({"bm25": retriever(ws, "bm25", 10)}, extensions=[QuestEndpoint()])) as client:
        response = client.post("/quest/predict", json={"query": "Novels set in Paris"})
        assert response.status_code == 404 and "no QUEST pipeline is served" in response.json()["error"]
