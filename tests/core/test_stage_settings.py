"""`--set STAGE.KEY=VALUE` on sleuth search, retrieve and eval: a stage's key set from the command line over every
pipeline run (BM25's k1 and b on the bundled SciFact), as `load_pipeline(stage_keys=...)` sets it in Python."""

from __future__ import annotations

import json

import pytest

from sleuth.cli.stage_settings import parse_settings
from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.errors import ConfigError
from sleuth.pipelines.config import load_pipeline
from sleuth.pipelines.front import open as open_workspace
from sleuth.pipelines.front import read_queries
from sleuth.stages.run import Run
from tests.cli_support import one_line_error

QUERIES = 40
KEYS = {"bm25": {"k1": 1.6, "b": 0.9}}


@pytest.fixture(scope="module")
def scifact() -> str:
    return str(bundled_dataset_dir())


def test_parse_settings_reads_values_as_yaml():
    assert parse_settings(["bm25.k1=1.2", "bm25.stemmer=null", "fuse.weights=[1, 2]", "dense.index="]) == {
        "bm25": {"k1": 1.2, "stemmer": None}, "fuse": {"weights": [1, 2]}, "dense": {"index": None}}
    with pytest.raises(ConfigError, match="stage 'bm25' has no key 'kk'"):
        parse_settings(["bm25.kk=1"])


def test_stopwords_and_stemmer_none_read_as_in_the_cli():
    """A YAML config's (or --set's) `stopwords: none` was refused, "unknown stopword language 'none' (known: ...,
    or none)", where `sleuth index --stopwords none` takes it."""
    from sleuth.index.tokenize import Analyzer

    assert parse_settings(["bm25.stopwords=none"]) == {"bm25": {"stopwords": "none"}}
    analyzer = Analyzer(stopwords="none", stemmer="None")
    assert analyzer.stopwords is None and analyzer.stemmer is None and analyzer == Analyzer(stopwords=None,
                                                                                             stemmer=None)


def test_eval_and_retrieve_with_set_run_the_pipeline_with_those_keys(sleuth, scifact, tmp_path):
    measured = {}
    for keys in ((), ("--set", "bm25.k1=1.6", "--set", "bm25.b=0.9")):
        result = sleuth("eval", scifact, "--pipeline", "bm25", *keys, "--max-queries", QUERIES, "--metric", "RR",
                        "--json")
        assert result.returncode == 0, result.stderr
        measured[bool(keys)] = json.loads(result.stdout)["pipelines"][0]["measures"]["RR"]
        said = [note for note in json.loads(result.stdout)["notes"] if "--set" in note]
        assert said == (["stage keys set (--set): bm25.k1=1.6, bm25.b=0.9"] if keys else [])  # on record
    queries = read_queries(scifact)[:QUERIES]
    ws = open_workspace(scifact, progress=False)
    from sleuth.eval.measures import mean, per_query
    from sleuth.pipelines.front import read_qrels

    expected = load_pipeline("bm25", ws, stage_keys=KEYS).transform(queries)
    qrels = {q.id: read_qrels(scifact)[q.id] for q in queries}
    assert measured[True] == pytest.approx(mean(per_query(expected, qrels, ["RR"])["RR"].values()))
    assert measured[True] != pytest.approx(measured[False])  # the keys were set, not ignored

    result = sleuth("retrieve", scifact, "--set", "bm25.k1=1.6", "--set", "bm25.b=0.9", "--max-queries", QUERIES,
                    "-k", 20, "--out", tmp_path / "run.trec")
    assert result.returncode == 0, result.stderr
    written = Run.read_trec(tmp_path / "run.trec")
    assert {q.id: expected.ids(q.id)[:20] for q in queries} == {q.id: written.ids(q.id) for q in queries}


@pytest.mark.parametrize("args, fragment", [
    (("eval", "--set", "bm25k1=1"), "expected STAGE.KEY=VALUE"),
    (("eval", "--set", "bm25.k1=-1"), "--set 'bm25.k1=-1': must be at least 0"),
    (("eval", "--set", "dhr.lam=1"), "no stage 'dhr' in the pipeline(s) run (bm25)"),
    (("eval", "--set", "nope.k=1"), "unknown stage 'nope'"),
    (("eval", "--set", "bm25.k1=1", "--set", "bm25.k1=2"), "bm25.k1 is set twice"),
    (("search", "vitamin", "--set", "dense.k=5"), "no stage 'dense' in the pipeline(s) run (bm25)"),
    (("eval", "--set", "bm25.index=indexes/x", "--set", "bm25.k1=1.2"), "k1 is fixed when an index is built"),
    (("retrieve", "QUERIES", "--out", "OUT", "--set", "bm25.k1=[1"), "the value is not YAML"),
])
def test_bad_settings_are_one_line(sleuth, scifact, tmp_path, args, fragment):
    args = [str(bundled_dataset_dir() / "queries.jsonl") if a == "QUERIES" else
            str(tmp_path / "out.trec") if a == "OUT" else a for a in args]
    one_line_error(sleuth(*args), fragment)


def test_a_stage_named_as_the_pipeline_gets_its_keys_from_set(sleuth, scifact, tmp_path):
    """A stage name is a pipeline in every command (as in `load_pipeline` and `sleuth search`), and `--set` gives it
    the keys it needs: `retrieve --pipeline run_file --set run_file.path=RUN` rewrites the run. Before, `retrieve`
    and `eval` refused the stage name ("unknown pipeline 'run_file'") and `load_pipeline("run_file",
    stage_keys=...)` checked the entry before merging the keys ("missing key 'path'")."""
    queries = str(bundled_dataset_dir() / "queries.jsonl.gz")
    first = tmp_path / "bm25.trec"
    assert sleuth("retrieve", queries, "--max-queries", QUERIES, "-k", 10, "--out", first).returncode == 0
    again = tmp_path / "again.trec"
    result = sleuth("retrieve", queries, "--max-queries", QUERIES, "-k", 10, "--pipeline", "run_file", "--set",
                    f"run_file.path={first}", "--tag", "bm25", "--out", again)
    assert result.returncode == 0, result.stderr
    assert again.read_text() == first.read_text()
    three = read_queries(queries)[:3]
    from_file = load_pipeline("run_file", stage_keys={"run_file": {"path": str(first)}}).transform(three)
    assert [from_file.ids(q.id) for q in three] == [Run.read_trec(first).ids(q.id) for q in three]

    result = sleuth("eval", scifact, "--pipeline", "run_file", "--set", f"run_file.path={first}", "--run",
                    f"file={first}", "--max-queries", QUERIES, "--metric", "nDCG@10", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["pipelines"]
    assert [row["name"] for row in rows] == ["run_file", "file"]
    assert rows[0]["measures"] == rows[1]["measures"]


def test_a_cutoff_cannot_be_the_pipeline_of_a_command(sleuth, tmp_path):
    """`--pipeline cutoff --set cutoff.k=3` has no ranking to cut: refused, not a run of empty rankings."""
    for args in (("search", "vitamin d"), ("retrieve", str(bundled_dataset_dir() / "queries.jsonl.gz"), "--out",
                                           tmp_path / "run.trec")):
        one_line_error(sleuth(*args, "--pipeline", "cutoff", "--set", "cutoff.k=3"), "cannot come first")
