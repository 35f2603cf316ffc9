"""A newcomer's first commands: long work reports its progress in a log (periodic lines on stderr, never silence),
the evaluation says how long its indexes took to build, the bundled corpus is named when it is used, ``--out`` takes
an index the cache already holds, and a malformed JSON body gets a clear 400."""

from __future__ import annotations

import json
import re

import pytest
from fastapi.testclient import TestClient

from sleuth.index.bm25 import BM25Index
from sleuth.models.registry import load_encoder
from sleuth.progress import PERIOD_ENV
from sleuth.service.app import create_app
from sleuth.stages.retrieve import BM25Retrieve

FAST = {PERIOD_ENV: "0.02", "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """One sleuth home for the CLI runs of this module (the bundled SciFact's BM25 index is built once)."""
    return str(tmp_path_factory.mktemp("home"))


def test_encoding_prints_periodic_progress_lines_when_not_on_a_terminal(monkeypatch, capsys, scifact_rows):
    monkeypatch.setenv(PERIOD_ENV, "0.01")
    encoder = load_encoder("minilm-onnx")
    texts = [row["text"] for row in scifact_rows[:64]]
    encoder.encode_passages(texts, show_progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert any(re.match(r"encoding with \S+: \d+/64 passages \(\d+%\)", line) for line in lines), lines
    assert lines[-1].startswith("encoding with") and "done, 64 passages in" in lines[-1]


def test_eval_reports_progress_and_index_build_time(sleuth, home):
    result = sleuth("eval", "--max-queries", "300", env={**FAST, "SLEUTH_HOME": home})
    assert result.returncode == 0, result.stderr
    assert re.search(r"^bm25 index: .*passages", result.stderr, re.M), result.stderr
    assert re.search(r"^evaluating bm25: \d+/300 queries", result.stderr, re.M), result.stderr
    assert re.search(r"built 1 index in [\d.]+ s \(bm25-\w+: [\d.]+ s\)", result.stdout), result.stdout
    again = sleuth("eval", "--max-queries", "20", "--json", env={**FAST, "SLEUTH_HOME": home})
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["index_build_seconds"] == {}  # the cached index is loaded, not built


def test_search_without_corpus_names_the_bundled_corpus(sleuth, home, scifact_jsonl):
    result = sleuth("search", "vitamin d", "-k", "1", env={**FAST, "SLEUTH_HOME": home})
    assert result.returncode == 0, result.stderr
    assert "no --corpus given: searching the bundled BEIR SciFact corpus" in " ".join(result.stderr.split())
    own = sleuth("search", "vitamin d", "-k", "1", "--corpus", scifact_jsonl, env={**FAST, "SLEUTH_HOME": home})
    assert own.returncode == 0 and "bundled" not in own.stderr


def test_index_out_copies_the_index_the_cache_holds(sleuth, home, scifact_jsonl, tmp_path):
    built = sleuth("index", scifact_jsonl, "--kind", "bm25", env={**FAST, "SLEUTH_HOME": home})
    assert built.returncode == 0, built.stderr
    cached = re.search(r"at (\S+) \(", " ".join(built.stderr.split())).group(1)
    out = tmp_path / "out"
    copied = sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out, env={**FAST, "SLEUTH_HOME": home})
    assert copied.returncode == 0, copied.stderr
    assert "copied from the cache" in " ".join(copied.stderr.split())
    assert (out / "manifest.json").read_text() == (tmp_path.parent / cached / "manifest.json").read_text()
    assert BM25Index.load(out).docstore.ids == BM25Index.load(cached).docstore.ids
    other = sleuth("index", scifact_jsonl, "--kind", "bm25", "--k1", "1.2", "--out", tmp_path / "other",
                   env={**FAST, "SLEUTH_HOME": home})  # other parameters: built, not copied
    assert other.returncode == 0 and "copied" not in other.stderr


def test_malformed_json_body_gets_a_clear_400(scifact_passages):
    app = create_app({"bm25": BM25Retrieve(BM25Index.build(scifact_passages[:50], show_progress=False))},
                     extensions=[])
    with TestClient(app) as client:
        response = client.post("/search", content=b'{"query": }', headers={"content-type": "application/json"})
        assert response.status_code == 400
        assert response.json() == {"error": "request body is not valid JSON: Expecting value at line 1 column 11"}
        response = client.post("/search", content=b'{\n  "query": "a",\n  "k": 5,\n}',
                               headers={"content-type": "application/json"})
        assert response.status_code == 400 and response.json()["error"].endswith("at line 4 column 1")


def test_serve_on_the_bundled_corpus_serves_every_builtin_pipeline(tmp_path, scifact_rows):
    """`sleuth serve` without options serves every built-in pipeline on the bundled SciFact (not bm25 alone); each
    of them loads and answers on real SciFact abstracts (the first 12, to keep encoding and chains short)."""
    from sleuth.cli.serve_cmd import BUNDLED_PIPELINES, served_pipelines
    from sleuth.pipelines.config import builtin_pipelines, load_pipeline
    from sleuth.pipelines.workspace import CorpusSource, Workspace

    served = served_pipelines(None, None)
    assert served == list(BUNDLED_PIPELINES)
    assert sorted(served) == sorted(builtin_pipelines())
    assert served_pipelines(tmp_path, None) == ["bm25"] and served_pipelines(None, ["dense"]) == ["dense"]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:12]), encoding="utf-8")
    ws = Workspace(CorpusSource(corpus), show_progress=False)
    for name in served:
        hits = load_pipeline(name, ws).search(scifact_rows[3]["title"], k=3)
        assert hits, name
