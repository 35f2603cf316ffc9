"""`sleuth eval` and the Experiment on bad input: measures that cannot be computed, names that look like markup,
options that would be ignored, judgements that do not fit the corpus, run files that could not be read back."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from rich.console import Console

from sleuth.corpus.model import Query
from sleuth.corpus.qrels import read_qrels
from sleuth.errors import ConfigError, InputError
from sleuth.eval import Experiment, parse_measures, per_query
from sleuth.stages.base import Stage
from sleuth.stages.run import Hit, Run
from tests.cli_support import one_line_error
from tests.core.test_cli import measures

DOCS = [("d1", "Vitamin D", "vitamin d and tuberculosis risk"), ("d2", "Cats", "cats purr and sleep"),
        ("d3", "Dogs", "dogs bark loudly"), ("d4", "TB", "tuberculosis is a disease of the lungs")]
QRELS = "query-id\tcorpus-id\tscore\nq1\td2\t1\nq2\td1\t1\nq2\td4\t1\nq3\td3\t2\n"


def write_beir(folder: Path, docs: Sequence[tuple[str, str, str]], queries: dict[str, str], qrels: str) -> Path:
    """A BEIR folder: corpus.jsonl, queries.jsonl and qrels/train.tsv."""
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n"
                                                 for i, t, x in docs))
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n"
                                                  for i, t in queries.items()))
    (folder / "qrels" / "train.tsv").write_text(qrels)
    return folder


@pytest.fixture
def beir(tmp_path) -> Path:
    """Four documents, three judged queries."""
    return write_beir(tmp_path / "beir", DOCS, {"q1": "cats", "q2": "tuberculosis", "q3": "dogs bark"}, QRELS)


def no_index_built(home: Path) -> bool:
    return not home.exists() or not any(path.is_file() for path in home.rglob("*"))


class Fixed(Stage):
    """A pipeline that returns the same run for any queries."""

    def __init__(self, run: Run, name: str = "fixed"):
        self.run, self.name = run, name

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        return Run({q.id: self.run.get(q.id, []) for q in queries})


RUN = Run({"q1": [Hit("d2", 2.0), Hit("d1", 1.0)], "q2": [Hit("d1", 1.0)]})
TOPICS = [Query("q1", "cats"), Query("q2", "tuberculosis")]
JUDGED = {"q1": {"d2": 1}, "q2": {"d4": 1}}


@pytest.mark.parametrize(("measure", "reason"), [
    ("AP(rel=0)", "relevance_level should be positive"),
    ("P(rel=1.5)@1", "invalid param rel=1.5"),
    ("IPrec@2", "invalid param recall=2"),
    ("RBP(p=0)", "invalid param p=0"),
    ("NERR8@10", "parameter max_rel is required"),
    ("SDCG@5", "parameter max_rel is required"),
    ("ERR@10", "gdeval"),  # gdeval (perl) takes numeric query ids only; these are q1, q2, q3
])
def test_a_measure_that_cannot_be_computed_is_refused_before_any_index(sleuth, tmp_path, beir, measure, reason):
    """Before: each parsed, every pipeline ran, and then a traceback: TypeError (AP(rel=0)), AssertionError
    (RBP(p=0), SDCG@5, ...) or perl's CalledProcessError (ERR@10)."""
    home = tmp_path / "home"
    result = sleuth("eval", beir, "--metric", measure, env={"SLEUTH_HOME": str(home)})
    one_line_error(result, f"measure '{measure}' cannot be computed", reason)
    assert no_index_built(home), "an index was built first"


def test_measures_are_checked_when_the_experiment_is_made():
    """Before: Experiment(..., measures=["AP(rel=0)"]) was made, ran every pipeline and failed in run() with a
    TypeError; P@100000000000000000000 with a KeyError; gdeval turned query 'a-1' into '1' and scored 0."""
    with pytest.raises(ConfigError, match=r"measure 'AP\(rel=0\)' cannot be computed"):
        Experiment([Fixed(RUN)], TOPICS, JUDGED, measures=["AP(rel=0)"])
    with pytest.raises(ConfigError, match="the cutoff must be at most 1,000,000"):
        parse_measures("P@100000000000000000000")
    dashed = {"a-1": {"d1": 1}, "b-1": {"d1": 2}}
    with pytest.raises(ConfigError, match=r"measure 'ERR@10' cannot be computed: .*reads the query ids differently"):
        Experiment([Fixed(Run({}))], [Query("a-1", "x"), Query("b-1", "y")], dashed, measures=["ERR@10"])
    numeric = per_query(Run({"1": [Hit("d1", 1.0)]}), {"1": {"d1": 1}}, ["ERR@10", "P@1000000"])
    assert numeric["ERR@10"] == {"1": pytest.approx(1 / 16)}  # gdeval: (2^1 - 1) / 2^4; numeric ids still work
    assert numeric["P@1000000"] == {"1": pytest.approx(1e-6)}


def test_names_are_shown_as_written_not_as_markup(sleuth, tmp_path, beir):
    """Before: a pipeline named "[/]" ended in rich's MarkupError traceback, and --index 'idx[v2]' was shown as
    'idx' (its "[v2]" read as a style)."""
    config = tmp_path / "odd.yaml"
    config.write_text('name: "[/]"\nstages:\n  - bm25: {}\n')
    index = tmp_path / "idx[v2]"
    assert sleuth("index", beir / "corpus.jsonl", "--kind", "bm25", "--out", index).returncode == 0
    result = sleuth("eval", beir, "--pipeline", config, "--index", index)
    assert result.returncode == 0, result.stderr
    assert "│ [/]  " in result.stdout and "│ idx[v2] " in result.stdout and "vs '[/]'" in result.stdout
    table = Experiment({"[bold]x[/bold]": Fixed(RUN)}, TOPICS, JUDGED, measures=["RR"]).run().to_table()
    console = Console(width=200, color_system=None)
    with console.capture() as capture:
        console.print(table)
    assert "[bold]x[/bold]" in capture.get()


@pytest.mark.parametrize("options", [["--queries", "nowhere.jsonl"], ["--qrels", "nowhere.tsv"],
                                     ["--corpus", "nowhere.jsonl"], ["--questions", "nowhere.jsonl"]])
def test_a_beir_folder_refuses_the_files_it_would_ignore(sleuth, beir, options):
    """Before: `sleuth eval DATASET --qrels other.tsv` evaluated DATASET's own qrels without a word (a path that did
    not exist included)."""
    one_line_error(sleuth("eval", beir, *options), f"DATASET {beir} brings its own corpus, queries and "
                   f"qrels: leave out {options[0]}")


def test_judged_documents_missing_from_the_corpus_are_warned(sleuth, tmp_path, beir):
    """Before: qrels judging only a document 'zz' that the corpus lacks gave nDCG@10 0.0000, exit 0, not a word."""
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\tzz\t1\nq2\tzz\t1\nq2\td4\t1\n")
    result = sleuth("eval", "--corpus", beir / "corpus.jsonl", "--queries", beir / "queries.jsonl",
                    "--qrels", qrels, "--json")
    assert result.returncode == 0, result.stderr
    assert "warning: 1 of 2 judged document id(s) are not in the corpus" in result.stderr
    assert "most judged document ids are not in the corpus" not in result.stderr  # half is not most
    assert json.loads(result.stdout)["judged_documents"] == {"total": 2, "not_in_corpus": 1}
    experiment = Experiment([Fixed(RUN)], TOPICS, {"q1": {"zz": 1}, "q2": {"zy": 1}}, measures=["RR"],
                            corpus_ids={"d1", "d2"})
    assert experiment.coverage.missing_docs == 2 and experiment.coverage.poor
    assert "most judged document ids are not in the corpus" in " ".join(experiment.run().notes)


def test_judged_documents_missing_from_an_index_folder_are_warned(sleuth, tmp_path, beir):
    """Before: `sleuth eval --index` without a corpus checked no judged document: qrels of another corpus scored
    0.0000 without a word. The index's passages are now the corpus the judged ids are checked against."""
    index = tmp_path / "idx"
    assert sleuth("index", beir / "corpus.jsonl", "--kind", "bm25", "--out", index).returncode == 0
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\tzz\t1\nq2\tzy\t1\nq2\td4\t1\n")
    result = sleuth("eval", "--index", index, "--queries", beir / "queries.jsonl", "--qrels", qrels, "--json")
    assert result.returncode == 0, result.stderr
    assert "warning: 2 of 3 judged document id(s) are not in the corpus" in result.stderr
    assert "most judged document ids are not in the corpus" in result.stderr
    assert json.loads(result.stdout)["judged_documents"] == {"total": 3, "not_in_corpus": 2}
    fitting = sleuth("eval", "--index", index, "--queries", beir / "queries.jsonl", "--qrels", beir / "qrels" /
                     "train.tsv", "--json")
    assert fitting.returncode == 0 and "not in the corpus" not in fitting.stderr, fitting.stderr
    assert json.loads(fitting.stdout)["judged_documents"] == {"total": 4, "not_in_corpus": 0}


def test_ray_evaluation_of_an_index_folder_checks_judged_documents_and_is_quiet(sleuth_process, tmp_path, beir):
    """The Ray path reads the folders' ids in the driver; before, it also printed Ray's "Token authentication is
    enabled" warning on every local start."""
    pytest.importorskip("ray", reason="ray is not installed (pip install 'sleuth[ray]')")
    index = tmp_path / "idx"
    assert sleuth_process("index", beir / "corpus.jsonl", "--kind", "bm25", "--out", index).returncode == 0
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("q1\tzz\t1\nq2\td1\t1\nq2\td4\t1\n")
    result = sleuth_process("eval", "--index", index, "--queries", beir / "queries.jsonl", "--qrels", qrels, "--json",
                    "--ray-address", "local")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["judged_documents"] == {"total": 3, "not_in_corpus": 1}
    assert "Token authentication" not in result.stderr and "WARNING" not in result.stderr, result.stderr


def test_a_fractional_relevance_on_the_first_line_is_an_error_not_a_header(tmp_path):
    """Before: a headerless qrels file whose first line was `q1<TAB>d2<TAB>1.5` lost that line as BEIR's header;
    the same value on line 2 was an error."""
    path = tmp_path / "qrels.tsv"
    path.write_text("q1\td2\t1.5\nq2\td1\t1\n")
    with pytest.raises(InputError, match=r"qrels.tsv:1: relevance must be an integer, found '1.5'"):
        read_qrels(path)
    path.write_text("query-id\tcorpus-id\tscore\nq2\td1\t1\n")
    assert read_qrels(path) == {"q2": {"d1": 1}}  # a header is still a header


def test_runs_dir_writes_each_pipelines_whole_run(sleuth, tmp_path, beir):
    """Before: adding a pipeline of depth 1 cut the baseline's run file to 1 hit per query (the common depth the
    figures are measured at)."""
    shallow = tmp_path / "shallow.yaml"
    shallow.write_text("name: shallow\nstages:\n  - bm25: {k: 1}\n")
    result = sleuth("eval", beir, "--pipeline", "bm25", "--pipeline", shallow, "--runs-dir", tmp_path / "runs")
    assert result.returncode == 0, result.stderr
    assert "common depth 1" in result.stdout
    assert len(Run.read_trec(tmp_path / "runs" / "bm25.run")["q2"]) == 2  # d1 and d4 both say tuberculosis
    assert len(Run.read_trec(tmp_path / "runs" / "shallow.run")["q2"]) == 1


def test_run_files_with_whitespace_ids_are_json_lines_and_names_that_collide_are_refused(sleuth, tmp_path, beir):
    """A run whose ids hold whitespace is written as JSON Lines (before session 33: refused, and before that a
    document id 'd 2' was written as is, a 7-column line no reader takes); pipelines named 'a/b' and 'a_b' were
    written to a_b.run and a_b_1.run, tagged a_b_1."""
    from sleuth.stages.run_formats import read_run

    spaced_run = Run({"q1": [Hit("d 2", 1.0)]})
    result = Experiment({"p": Fixed(spaced_run), "plain": Fixed(RUN)}, TOPICS, JUDGED, measures=["RR"]).run()
    paths = result.save_runs(tmp_path / "runs")
    assert paths == {"p": tmp_path / "runs" / "p.jsonl", "plain": tmp_path / "runs" / "plain.run"}
    assert read_run(paths["p"]) == spaced_run and read_run(paths["plain"]) == Run.read_trec(paths["plain"])
    both = Experiment({"a/b": Fixed(RUN), "a_b": Fixed(RUN)}, TOPICS, JUDGED, measures=["RR"]).run()
    with pytest.raises(ConfigError, match=r"pipelines 'a/b' and 'a_b' would both be written to a_b.run"):
        both.save_runs(tmp_path / "runs")
    for name, body in (("ab1", "a/b"), ("ab2", "a_b")):
        (tmp_path / f"{name}.yaml").write_text(f"name: {body}\nstages:\n  - bm25: {{}}\n")
    home = tmp_path / "home"
    result = sleuth("eval", beir, "--pipeline", tmp_path / "ab1.yaml", "--pipeline", tmp_path / "ab2.yaml",
                    "--runs-dir", tmp_path / "runs", env={"SLEUTH_HOME": str(home)})
    one_line_error(result, "pipelines 'a/b' and 'a_b' would both be written to a_b.run")
    assert no_index_built(home)
    spaced = write_beir(tmp_path / "spaced", DOCS, {"q 1": "cats"}, "q 1\td2\t1\n")
    result = sleuth("eval", spaced, "--runs-dir", tmp_path / "spaced-runs", env={"SLEUTH_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    assert "bm25.jsonl written as JSON Lines" in " ".join(result.stderr.split())
    assert list(read_run(tmp_path / "spaced-runs" / "bm25.jsonl")) == ["q 1"]


def test_self_exclusion_stays_off_where_the_qrels_judge_a_querys_own_document(sleuth, tmp_path):
    """Before: queries that are corpus documents turned self-exclusion on although the qrels judged each query's own
    document relevant: P@1 and RR 0.0000, exit 0, said only in the table's caption."""
    docs = [("1", "", "cats purr and sleep all day"), ("2", "", "dogs bark at night"), ("3", "", "fish swim")]
    own = write_beir(tmp_path / "own", docs, {"1": "cats purr", "2": "dogs bark"}, "1\t1\t1\n2\t2\t1\n")
    result = sleuth("eval", own, "--metric", "P@1", "--metric", "RR", "--json")
    assert result.returncode == 0, result.stderr
    assert measures(result)["bm25"] == {"P@1": 1.0, "RR": 1.0}
    assert "warning: the queries are corpus documents, but their own documents are kept" in result.stderr
    others = write_beir(tmp_path / "others", docs, {"1": "cats purr", "2": "dogs bark"}, "1\t2\t1\n2\t1\t1\n")
    result = sleuth("eval", others, "--metric", "RR", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["excluded_self_hits"] == 2
    assert "note: a query's own document is excluded from its hits" in result.stderr  # on stderr, not only the caption


@pytest.mark.parametrize(("options", "message"), [
    (["--pipeline", "bm25", "--pipeline", "bm25"], "--pipeline bm25 is given twice"),
    (["--depth", "1"], "--depth is the number of results per query of an --index folder: it needs --index"),
    (["--qrels", "QRELS"], "--questions are measured by their answers"),
    (["--queries", "QUERIES"], "--questions are measured by their answers"),
    (["--pipeline", "ALIAS", "--pipeline", "bm25"], "two pipelines are named 'bm25'"),
])
def test_options_that_would_be_ignored_are_refused(sleuth, tmp_path, beir, options, message):
    """Before: `--pipeline bm25 --pipeline bm25` evaluated one pipeline, `--depth 1` without --index and --qrels or
    --queries beside --questions were ignored, and a YAML pipeline named 'bm25' given before `bm25` was replaced by
    it; each without a word."""
    alias = tmp_path / "alias.yaml"
    alias.write_text("name: bm25\nstages:\n  - bm25: {k: 5}\n")
    questions = tmp_path / "questions.jsonl"
    questions.write_text('{"id": "q1", "question": "cats", "answers": ["purr"]}\n')
    known = {"QRELS": beir / "qrels" / "train.tsv", "QUERIES": beir / "queries.jsonl", "ALIAS": alias}
    given = [known.get(option, option) for option in options]
    where = ["--questions", questions] if "QRELS" in options or "QUERIES" in options else [
        "--queries", beir / "queries.jsonl", "--qrels", beir / "qrels" / "train.tsv"]
    home = tmp_path / "home"
    result = sleuth("eval", "--corpus", beir / "corpus.jsonl", *where, *given, env={"SLEUTH_HOME": str(home)})
    one_line_error(result, message)
    assert no_index_built(home)


def test_hits_show_ids_and_texts_as_written():
    """Before: rich's escape doubled a trailing backslash that no tag followed: an id 'a\\' was shown as 'a\\\\',
    and an evidence path's title 't\\' as 't\\\\ -> h2'."""
    from sleuth.cli.render import hits_table, path_cell

    console = Console(width=120, color_system=None)
    with console.capture() as capture:
        console.print(hits_table("q[/]\\", [Hit("a\\", 1.0, title="t[/]", text="x\\"), Hit("b[/]", 0.5, text="y")]))
        console.print(path_cell([Hit("h1", 1.0, title="t\\"), Hit("h2", 1.0)]))
    shown = capture.get()
    assert shown.splitlines()[0].strip() == "q[/]\\"
    assert "│ a\\ " in shown and "│ b[/] " in shown and "t[/]" in shown
    assert "x\\ " in shown and "\\\\" not in shown and "t\\ -> h2" in shown
