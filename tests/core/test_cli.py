"""The command line as a user runs it: real processes, real files, one-line errors and exit codes."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.cli_support import one_line_error


def measures(result: subprocess.CompletedProcess) -> dict[str, dict[str, float]]:
    """Pipeline name -> measure -> value, from `sleuth eval --json`."""
    return {p["name"]: p["measures"] for p in json.loads(result.stdout)["pipelines"]}


def test_help_lists_the_commands(sleuth):
    result = sleuth("--help")
    assert result.returncode == 0
    for command in ("index", "search", "eval", "demo"):
        assert command in result.stdout
    for command in ("index", "search", "eval", "demo"):
        assert sleuth(command, "--help").returncode == 0


def test_index_then_search_a_jsonl_corpus(sleuth, tmp_path, scifact_jsonl, scifact_rows):
    out = tmp_path / "ix"
    result = sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out)
    assert result.returncode == 0, result.stderr
    assert (out / "manifest.json").is_file()
    result = sleuth("search", scifact_rows[5]["title"], "--index", out, "-k", "3", "--json")
    assert result.returncode == 0, result.stderr
    hits = json.loads(result.stdout)["hits"]
    assert len(hits) == 3 and hits[0]["id"] == scifact_rows[5]["_id"]


def test_malformed_corpus_line_names_file_and_line(sleuth, tmp_path, scifact_rows):
    corpus = tmp_path / "bad.jsonl"
    lines = [json.dumps(r) for r in scifact_rows[:5]]
    lines[2] = lines[2][:-7]  # cut the closing of line 3
    corpus.write_text("\n".join(lines) + "\n")
    one_line_error(sleuth("index", corpus, "--kind", "bm25", "--out", tmp_path / "ix"), "bad.jsonl:3",
                   "malformed JSON")
    assert not (tmp_path / "ix").exists()


def test_missing_field_is_named(sleuth, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "a", "text": "x"}\n{"_id": "b", "body": "y"}\n')
    one_line_error(sleuth("index", corpus, "--kind", "bm25", "--out", tmp_path / "ix"), "c.jsonl:2",
                   "field 'text'")


def test_a_repeated_document_id_names_the_corpus_not_a_pipeline_file(sleuth, tmp_path):
    """Before: "<site-packages>/sleuth/pipelines/builtin/bm25.yaml, stage 1 'bm25': duplicate passage id 'a' in the
    corpus": the packaged YAML's path, as if the configuration were wrong, and not the corpus file."""
    corpus = tmp_path / "dup.jsonl"
    corpus.write_text('{"_id": "a", "text": "cats and dogs"}\n{"_id": "b", "text": "birds"}\n'
                      '{"_id": "a", "text": "fish"}\n')
    done = sleuth("search", "--corpus", corpus, "cats")
    one_line_error(done, "dup.jsonl: duplicate passage id 'a' (documents 1 and 3)")
    assert "yaml" not in done.stderr


def test_field_mapping_reads_other_keys(sleuth, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"docid": "a", "body": "red apples"}\n{"docid": "b", "body": "green pears"}\n')
    result = sleuth("index", corpus, "--field", "id=docid", "--field", "text=body", "--kind", "bm25",
                    "--out", tmp_path / "ix")
    assert result.returncode == 0, result.stderr
    result = sleuth("search", "pears", "--index", tmp_path / "ix", "--json")
    assert [h["id"] for h in json.loads(result.stdout)["hits"]] == ["b"]
    # before: a query with no indexed word printed an empty table and nothing else
    result = sleuth("search", "the ??? of", "--index", tmp_path / "ix")
    assert result.returncode == 0 and "no results: nothing matched" in result.stderr, result.stderr
    result = sleuth("search", "the ??? of", "--index", tmp_path / "ix", "--json")
    assert json.loads(result.stdout)["hits"] == [] and "no results" not in result.stderr


@pytest.mark.parametrize("query", ["", "   "])
def test_empty_query(sleuth, tmp_path, scifact_jsonl, query):
    sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", tmp_path / "ix")
    one_line_error(sleuth("search", query, "--index", tmp_path / "ix"), "empty")


def test_empty_query_is_refused_before_any_index_is_built(sleuth, tmp_path, scifact_jsonl):
    home = tmp_path / "home"
    result = sleuth("search", " ", "--corpus", scifact_jsonl, "--pipeline", "dense", env={"SLEUTH_HOME": str(home)})
    one_line_error(result, "the query is empty")
    assert not home.exists() or not any(p.is_file() for p in home.rglob("*")), "an index was built for an empty query"


@pytest.mark.parametrize("qrels_line, option, message", [
    ("q9\t0\td1\t1\n", [], "no query of the experiment has qrels"),
    ("q1\t0\td1\t1\n", ["--metric", "nDCG@x"], "unknown measure 'nDCG@x'"),
])
def test_eval_checks_its_judgements_before_any_index_is_built(sleuth, tmp_path, scifact_jsonl, qrels_line, option,
                                                               message):
    home, queries, qrels = tmp_path / "home", tmp_path / "queries.jsonl", tmp_path / "qrels.txt"
    queries.write_text('{"_id": "q1", "text": "vitamin d"}\n')
    qrels.write_text(qrels_line)
    result = sleuth("eval", "--corpus", scifact_jsonl, "--queries", queries, "--qrels", qrels, "--pipeline", "dense",
                    *option, env={"SLEUTH_HOME": str(home)})
    one_line_error(result, message)
    assert not home.exists() or not any(p.is_file() for p in home.rglob("*")), "an index was built first"


def test_missing_and_corrupt_index(sleuth, tmp_path, scifact_jsonl):
    one_line_error(sleuth("search", "x", "--index", tmp_path / "none"), "no index at")
    sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", tmp_path / "ix")
    (tmp_path / "ix" / "manifest.json").write_text("{not json")
    one_line_error(sleuth("search", "x", "--index", tmp_path / "ix"), "corrupt manifest")


def test_bad_pipeline_config(sleuth, tmp_path):
    config = tmp_path / "p.yaml"
    config.write_text("stages:\n  - bm25: {k1: 1.2, kay: 3}\n")
    one_line_error(sleuth("eval", "--pipeline", config), "unknown key 'kay'")
    one_line_error(sleuth("eval", "--pipeline", "nosuch"), "unknown pipeline 'nosuch'")


def test_unknown_format_and_missing_corpus(sleuth, tmp_path, scifact_jsonl):
    one_line_error(sleuth("index", scifact_jsonl, "--format", "csv", "--kind", "bm25"), "unknown corpus format 'csv'")
    one_line_error(sleuth("index", tmp_path / "nothing.jsonl"), "not found")
    # before: the format was dropped and the bundled SciFact searched
    one_line_error(sleuth("search", "cats", "--format", "tsv"), "format 'tsv' is for a corpus you give")


def test_eval_beir_folder_json(sleuth, data_dir):
    result = sleuth("eval", data_dir / "scifact", "--pipeline", "bm25", "--metric", "nDCG@10", "--metric", "R@100",
                    "--json")
    assert result.returncode == 0, result.stderr
    scores = measures(result)["bm25"]
    assert 0.6 < scores["nDCG@10"] < 0.75      # BEIR reports about 0.665 on the test split
    assert scores["R@100"] > scores["nDCG@10"]


def test_eval_answer_accuracy_on_nq_subset(sleuth, tmp_path, data_dir):
    questions = tmp_path / "q.jsonl"
    with open(data_dir / "nq" / "questions.jsonl") as handle:
        questions.write_text("".join(next(handle) for _ in range(50)))
    result = sleuth("eval", "--corpus", data_dir / "nq" / "corpus.jsonl", "--questions", questions,
                    "--pipeline", "bm25", "--top-k", "1", "--top-k", "20", "--json")
    assert result.returncode == 0, result.stderr
    scores = measures(result)["bm25"]
    assert 0.0 < scores["Top-1"] <= scores["Top-20"] <= 1.0
    assert scores["Top-20"] > 0.4
