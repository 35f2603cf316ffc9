"""PyTerrier both ways, on a slice of SciFact: sleuth stages and pipelines as ``pt.Transformer``s (bm25, dense, dhr,
a Chain-of-Skills chain, QUEST set operations and private search) in one ``pt.Experiment`` next to a pure-PyTerrier
reranker, and a PyTerrier transformer as a sleuth stage. Nothing starts Java."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import sleuth
from sleuth.errors import MissingExtraError
from sleuth.pyterrier import as_transformer, from_transformer, qrels_frame, queries_frame

pt = pytest.importorskip("pyterrier")

QUERIES = 10
OTHERS = 50  # abstracts besides the judged ones: every system indexes them with MiniLM, at ~0.15 s each


@pytest.fixture(scope="module")
def collection(tmp_path_factory, data_dir):
    """The first 10 judged SciFact claims, and a corpus of their judged abstracts plus the first 50 others."""
    qrels = sleuth.read_qrels(data_dir / "scifact")
    queries = sleuth.read_queries(data_dir / "scifact")[:QUERIES]
    qrels = {q.id: qrels[q.id] for q in queries}
    judged = {doc for docs in qrels.values() for doc in docs}
    folder = tmp_path_factory.mktemp("scifact-slice")
    with open(data_dir / "scifact" / "corpus.jsonl", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    kept = [r for r in rows if r["_id"] in judged] + [r for r in rows if r["_id"] not in judged][:OTHERS]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return folder / "corpus.jsonl", queries, qrels


def overlap(row) -> float:
    """A pure-PyTerrier scorer: the share of the query's words found in the document's title and text."""
    words = set(row["query"].lower().split())
    text = set(f"{row['title']} {row['text']}".lower().split())
    return len(words & text) / max(len(words), 1)


def test_a_stage_as_a_transformer_gives_pyterrier_frames(collection):
    corpus, queries, _ = collection
    bm25 = as_transformer(sleuth.open(corpus, progress=False).pipeline("bm25", k=10))
    results = bm25(queries_frame(queries[:3]))
    assert {"qid", "query", "docno", "score", "rank", "title", "text"} <= set(results.columns)
    first = results[results["qid"] == queries[0].id]
    assert list(first["rank"]) == list(range(10)) and first["score"].is_monotonic_decreasing
    reranked = (bm25 >> pt.apply.doc_score(overlap))(queries_frame(queries[:3]))  # PyTerrier composition
    assert set(reranked["qid"]) == {q.id for q in queries[:3]} and len(reranked) == 30


def test_a_transformer_as_a_stage_reranks_sleuth_candidates(collection):
    corpus, queries, qrels = collection
    ws = sleuth.open(corpus, progress=False)
    stage = ws.pipeline("bm25", k=10) >> from_transformer(pt.apply.doc_score(overlap), name="overlap")
    run = stage(queries)
    first = run[queries[0].id]
    assert len(first) == 10 and all(0.0 <= h.score <= 1.0 for h in first)
    assert [h.score for h in first] == sorted((h.score for h in first), reverse=True)
    result = sleuth.Experiment([ws.pipeline("bm25", k=10), ("bm25 >> overlap", stage)], queries, qrels,
                               ["nDCG@10"]).run()
    assert result.aggregate["bm25 >> overlap"]["nDCG@10"] > 0.2


@pytest.mark.slow
def test_pt_experiment_runs_every_system_next_to_a_pyterrier_transformer(collection, tmp_path):
    from sleuth.systems.private_search.client import PrivateSearch
    from sleuth.systems.private_search.registry import load_vocabulary_table, make_obfuscator
    from sleuth.systems.private_search.remote import StageEngine
    from sleuth.systems.private_search.rescore import TextRescore

    corpus, queries, qrels = collection
    ws = sleuth.open(corpus, progress=False)
    bm25 = ws.pipeline("bm25")
    private = PrivateSearch(make_obfuscator("vickrey-mahalanobis", embeddings=load_vocabulary_table()),
                            StageEngine(ws.pipeline("bm25", k=100)), TextRescore(ws.encoder("minilm-onnx")), n=5,
                            epsilon=12.5, depth=20, seed=7, name="private")
    quest = tmp_path / "quest.yaml"  # quest-bm25-setops over BM25's top 5 (not 30), int8 classifier: CPU-sized
    quest.write_text("name: quest-bm25-setops\nstages:\n  - bm25: {k: 5}\n  - setops: {threshold: tuned, "
                     "system: bm25+setops, t_norm: min, anchor: true, not_weight: tuned, int8: true}\n")
    systems = {"bm25": bm25, "dense": ws.pipeline("dense"), "dhr": ws.pipeline("dhr"),
               "cos-retrieval": ws.pipeline("cos-retrieval"), "quest-bm25-setops": ws.pipeline(quest),
               "private": private}
    transformers = [as_transformer(stage) for stage in systems.values()]
    transformers.append(as_transformer(bm25 % 100) >> pt.apply.doc_score(overlap))
    names = [*systems, "bm25 >> pt overlap"]
    from ir_measures import R, nDCG

    table = pt.Experiment(transformers, queries_frame(queries), qrels_frame(qrels), [nDCG @ 10, R @ 100],
                          names=names, baseline=0)
    print(table.to_string())
    assert list(table["name"]) == names
    scores = dict(zip(table["name"], table[str(nDCG @ 10)]))
    assert all(0.0 < score <= 1.0 for score in scores.values()), scores
    assert scores["dense"] > 0.4 and scores["bm25"] > 0.4
    assert scores["bm25"] == pytest.approx(sleuth.Experiment([bm25], queries, qrels, ["nDCG@10"]).run()
                                           .aggregate["bm25"]["nDCG@10"], abs=1e-4)  # same figures as sleuth's


def test_without_pyterrier_the_error_names_the_extra(tmp_path):
    (tmp_path / "pyterrier.py").write_text("raise ImportError('not installed')\n", encoding="utf-8")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from sleuth.pyterrier import as_transformer;"
            "from sleuth.stages.base import Cutoff\ntry:\n as_transformer(Cutoff(3))\n"
            "except Exception as exc: print(type(exc).__name__, exc)")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True,
                         cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}).stdout
    assert out.strip() == ("MissingExtraError pyterrier==1.1.2 is needed for PyTerrier transformers: "
                           "pip install 'sleuth[pyterrier]'")
    assert issubclass(MissingExtraError, Exception)
