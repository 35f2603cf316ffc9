"""TREC run files in and out: `sleuth retrieve` runs a pipeline over a query file and writes one, `sleuth eval --run`
measures one beside sleuth's pipelines, and the `run_file` stage puts one in a pipeline (fused, or reranked).
Real BM25 over the bundled SciFact; real question files of ../shared/data."""

from __future__ import annotations

import json
import re

import pytest

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.corpus.model import Query
from sleuth.pipelines.config import load_pipeline, reads_corpus
from sleuth.pipelines.front import open as open_workspace
from sleuth.pipelines.front import read_queries
from sleuth.pipelines.registry import load_stage_modules
from sleuth.stages.run import Hit, Run
from sleuth.stages.run_file import RunFile
from tests.cli_support import one_line_error

QUERIES = 40


@pytest.fixture(scope="module")
def scifact() -> str:
    return str(bundled_dataset_dir())


def test_retrieve_writes_the_pipelines_run_and_eval_run_measures_it_as_the_pipeline(sleuth, scifact, tmp_path):
    run_path = tmp_path / "bm25.trec"
    result = sleuth("retrieve", scifact, "--max-queries", QUERIES, "-k", 50, "--out", run_path)
    assert result.returncode == 0, result.stderr
    assert f"wrote {run_path}: {QUERIES} queries, " in result.stderr and "queries/s" in result.stderr
    lines = run_path.read_text().splitlines()
    assert all(line.split()[5] == "bm25" and line.split()[1] == "Q0" for line in lines)  # tag: the pipeline's name
    written = Run.read_trec(run_path)
    queries = read_queries(scifact)[:QUERIES]
    expected = load_pipeline("bm25", open_workspace(scifact, progress=False)).transform(queries).cut(50)
    assert list(written) == [q.id for q in queries]  # every query, in file order
    assert {qid: [h.id for h in hits] for qid, hits in written.items()} == \
           {qid: [h.id for h in hits] for qid, hits in expected.items()}
    assert max(len(hits) for hits in written.values()) == 50

    measured = {}
    for how in (("--pipeline", "bm25"), ("--run", f"mine={run_path}")):
        result = sleuth("eval", scifact, *how, "--max-queries", QUERIES, "--metric", "nDCG@10", "--metric", "R@50",
                        "--json")
        assert result.returncode == 0, result.stderr
        measured[how[0]] = {row["name"]: row["measures"] for row in json.loads(result.stdout)["pipelines"]}
    pipeline, run = measured["--pipeline"]["bm25"], measured["--run"]["mine"]
    assert pipeline["nDCG@10"] == pytest.approx(run["nDCG@10"], abs=1e-6) and pipeline["nDCG@10"] > 0.5
    assert pipeline["R@50"] == pytest.approx(run["R@50"], abs=1e-6)


def test_eval_of_run_files_alone_needs_only_qrels(sleuth, scifact, tmp_path):
    """As trec_eval: two run files and a qrels file, no corpus and no topics; paired tests between the runs."""
    for name, k in (("deep", 100), ("shallow", 3)):
        assert sleuth("retrieve", scifact, "--max-queries", QUERIES, "-k", k, "--out", tmp_path / f"{name}.trec",
                      "--tag", name).returncode == 0
    qrels = bundled_dataset_dir() / "qrels" / "train.tsv"
    result = sleuth("eval", "--run", tmp_path / "deep.trec", "--run", tmp_path / "shallow.trec", "--qrels", qrels,
                    "--metric", "R@100", "--json")
    assert result.returncode == 0, result.stderr
    whole = json.loads(result.stdout)
    report = {row["name"]: row for row in whole["pipelines"]}
    assert set(report) == {"deep", "shallow"} and whole["queries"] == 809  # the judged queries stand for topics
    # judged queries the runs do not rank count as zero; the runs are cut to their common depth (3) first
    deep, shallow = report["deep"]["measures"]["R@100"], report["shallow"]["measures"]["R@100"]
    assert deep == pytest.approx(shallow) and 0.02 < deep < QUERIES / 809
    assert report["shallow"]["comparisons"]["R@100"]["significant"] is False
    assert "judged document" not in result.stderr  # no corpus: its judged documents are not checked
    assert f"warning: run 'deep' ranks {QUERIES} of the 809 queries evaluated; the others count as zero" in \
        " ".join(result.stderr.split())


def test_eval_writes_every_querys_values_with_per_query(sleuth, scifact, tmp_path):
    """trec_eval -q's figures for every row of the table, whose means they are; refused over an input."""
    for name, k in (("deep", 100), ("shallow", 3)):
        assert sleuth("retrieve", scifact, "--max-queries", QUERIES, "-k", k, "--out", tmp_path / f"{name}.trec",
                      "--tag", name).returncode == 0
    qrels = bundled_dataset_dir() / "qrels" / "train.tsv"
    runs = ("--run", tmp_path / "deep.trec", "--run", tmp_path / "shallow.trec", "--qrels", qrels)
    result = sleuth("eval", *runs, "--metric", "map", "--metric", "R@3", "--json", "--per-query", tmp_path / "q.tsv")
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "q.tsv").read_text().splitlines()
    assert lines[0] == "pipeline\tqid\tmeasure\tvalue" and len(lines) == 1 + 2 * 2 * 809
    values: dict[tuple[str, str], list[float]] = {}
    for line in lines[1:]:
        name, qid, measure, value = line.split("\t")
        values.setdefault((name, measure), []).append(float(value))
    for row in json.loads(result.stdout)["pipelines"]:
        for measure, mean in row["measures"].items():
            assert sum(values[row["name"], measure]) / 809 == pytest.approx(mean)
    assert sum(value > 0 for value in values["deep", "R@3"]) > 20  # the 40 queries ranked: not all zeros
    one_line_error(sleuth("eval", *runs, "--per-query", qrels), "--per-query", "refusing to write over the input")


@pytest.mark.parametrize("args, fragments", [
    (("eval", "--run", "missing.trec", "--qrels", "q.tsv"), ("--run missing.trec", "file not found")),
    (("eval", "--run", "RUN"), ("--run needs judgements",)),
    (("eval", "--run", "RUN", "--run", "RUN", "--qrels", "QRELS"), ("the name 'bm25' is given to two runs",)),
    (("eval", "--run", "bm25=RUN", "--pipeline", "bm25", "--corpus", "SCIFACT", "--queries", "QUERIES", "--qrels",
      "QRELS"), ("another pipeline evaluated has the name 'bm25'",)),
    (("eval", "--run", "RUN", "--qrels", "QRELS"), ("ranks none of the 809 queries evaluated", "like '1'")),
    (("eval", "--run", "BAD", "--qrels", "QRELS"), ("bad.trec:2: expected 6 columns",)),
    (("retrieve", "QUERIES", "--out", "TMP"), ("--out", "is a folder; give a file")),
    (("retrieve", "QUERIES", "--out", "TMP/run.trec", "--tag", "my run"), ("--tag 'my run' has whitespace",)),
    (("retrieve", "SPACED", "--out", "TMP/run.trec"), ("query id 'a b' has whitespace", "name the --out file .jsonl")),
    (("retrieve", "QUERIES", "--out", "TMP/run.trec", "--index", "TMP", "--pipeline", "dense"),
     ("--index searches an index folder", "--pipeline")),
    (("retrieve", "QUERIES", "--out", "QUERIES"), ("--out",)),
])
def test_bad_run_file_input_is_one_line(sleuth, scifact, tmp_path, args, fragments):
    run_path = tmp_path / "bm25.trec"
    run_path.write_text("1 Q0 d1 1 2.0 x\n")
    bad = tmp_path / "bad.trec"
    bad.write_text("1 Q0 d1 1 2.0 x\n1 Q0 d2 2 1.0\n")
    spaced = tmp_path / "spaced.tsv"
    spaced.write_text("a b\tsome query\n")
    values = {"RUN": str(run_path), "QRELS": str(bundled_dataset_dir() / "qrels" / "train.tsv"), "SCIFACT": scifact,
              "QUERIES": str(bundled_dataset_dir() / "queries.jsonl"), "SPACED": str(spaced), "TMP": str(tmp_path),
              "BAD": str(bad)}
    given = [values.get(arg, arg) for arg in args]
    given = [arg.replace("TMP/", f"{tmp_path}/").replace("RUN", str(run_path)) if isinstance(arg, str) else arg
             for arg in given]
    one_line_error(sleuth(*given), *fragments)
    assert run_path.read_text() == "1 Q0 d1 1 2.0 x\n"


def test_eval_refuses_run_files_where_answers_are_measured(sleuth, data_dir, tmp_path):
    run_path = tmp_path / "r.trec"
    run_path.write_text("nqq0000 Q0 d1 1 2.0 x\n")
    one_line_error(sleuth("eval", "--run", run_path, "--questions", data_dir / "nq" / "questions.jsonl",
                          "--corpus", data_dir / "nq" / "corpus.jsonl"), "--run files hold document ids", "answers")


def test_run_file_stage_fuses_and_is_reranked_in_a_yaml_pipeline(scifact, tmp_path):
    """A run file as a first stage: cut to k, fused with BM25 by rank, and its candidates rescored by BM25."""
    ws = open_workspace(scifact, progress=False)
    queries = read_queries(scifact)[:10]
    bm25 = load_pipeline("bm25", ws).transform(queries)
    reversed_run = Run({qid: [Hit(h.id, float(rank)) for rank, h in enumerate(hits[:20])]
                        for qid, hits in bm25.items()}).sorted()
    reversed_run.write_trec(tmp_path / "reversed.trec", tag="rev")
    config = tmp_path / "p.yaml"
    config.write_text(f"name: fused\nstages:\n  - fuse:\n      branches:\n        - run_file: {{path: "
                      f"{tmp_path / 'reversed.trec'}, k: 10}}\n        - bm25: {{k: 10}}\n")
    fused = load_pipeline(config, ws).transform(queries)
    for query in queries:
        top_bm25, worst_kept = bm25.ids(query.id)[:10], reversed_run.ids(query.id)[:10]
        assert set(fused.ids(query.id)) == set(top_bm25) | set(worst_kept)
    rerank = tmp_path / "rerank.yaml"
    rerank.write_text(f"name: rerank\nstages:\n  - run_file: {{path: {tmp_path / 'reversed.trec'}}}\n  - bm25: {{}}\n")
    reranked = load_pipeline(rerank, ws).transform(queries)
    for query in queries:  # BM25's own order of the 20 the file holds, from the file's reverse order
        assert reranked.ids(query.id) == bm25.ids(query.id)[:20]


def test_retrieve_says_its_index_builds_apart_and_run_files_alone_read_no_corpus(sleuth, scifact, tmp_path):
    """The summary's time and rate are the retrieval's, the index built before it a clause of its own; a pipeline of
    run files alone gets no corpus (before: the bundled SciFact, with its note)."""
    first = sleuth("retrieve", scifact, "--max-queries", 5, "-k", 20, "--out", tmp_path / "a.trec")
    assert first.returncode == 0, first.stderr
    assert re.search(r"queries/s; built 1 index in [^(]+ \(bm25-\w+: ", " ".join(first.stderr.split()))
    again = sleuth("retrieve", scifact, "--max-queries", 5, "-k", 10, "--out", tmp_path / "b.trec", "--tag", "b")
    assert again.returncode == 0 and "built" not in again.stderr and "bundled" in again.stderr
    config = tmp_path / "fused.yaml"
    config.write_text(f"name: fused\nstages:\n  - fuse:\n      branches:\n        - run_file: {{path: "
                      f"{tmp_path / 'a.trec'}}}\n        - run_file: {{path: {tmp_path / 'b.trec'}}}\n")
    fused = sleuth("retrieve", scifact, "--max-queries", 5, "--pipeline", config, "--out", tmp_path / "f.trec")
    assert fused.returncode == 0, fused.stderr
    assert "bundled" not in fused.stderr and "built" not in fused.stderr
    assert Run.read_trec(tmp_path / "f.trec").ids("0")[:10] == Run.read_trec(tmp_path / "b.trec").ids("0")


def test_a_pipeline_of_index_paths_searches_them_without_naming_the_bundled_corpus(sleuth, data_dir, tmp_path):
    """Before: `sleuth search --pipeline mine.yaml` (an index: path) said it searched the bundled SciFact."""
    corpus = tmp_path / "nq.jsonl"
    corpus.write_text("".join((data_dir / "nq" / "corpus.jsonl").read_text().splitlines(keepends=True)[:300]))
    assert sleuth("index", corpus, "--kind", "bm25", "--out", tmp_path / "idx").returncode == 0
    config = tmp_path / "mine.yaml"
    config.write_text(f"name: mine\nstages:\n  - bm25: {{index: {tmp_path / 'idx'}}}\n")
    result = sleuth("search", "nobel prize in physics", "--pipeline", config, "-k", 3, "--json")
    assert result.returncode == 0, result.stderr
    assert "bundled" not in result.stderr and "SciFact" not in result.stderr
    hits = json.loads(result.stdout)["hits"]
    direct = json.loads(sleuth("search", "nobel prize in physics", "--index", tmp_path / "idx", "-k", 3,
                               "--json").stdout)["hits"]
    assert [hit["id"] for hit in hits] == [hit["id"] for hit in direct] and hits[0]["id"].startswith("nq")
    # and sleuth eval takes it without --corpus, as it takes the --index folder (before: "--questions needs --corpus")
    result = sleuth("eval", "--pipeline", config, "--index", tmp_path / "idx", "--questions",
                    data_dir / "nq" / "questions.jsonl", "--max-queries", 200, "--top-k", 20, "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row["measures"]["Top-20"] for row in json.loads(result.stdout)["pipelines"]}
    assert rows["mine"] == rows["idx"] > 0


def test_search_takes_a_stage_name_as_its_pipeline(sleuth, data_dir, tmp_path):
    """As load_pipeline and sleuth serve do (`--pipeline dhr_p`: that one stage); this session's --set and
    corpus checks had made search refuse it ("unknown pipeline 'dhr_p'")."""
    corpus = tmp_path / "nq.jsonl"
    corpus.write_text("".join((data_dir / "nq" / "corpus.jsonl").read_text().splitlines(keepends=True)[:60]))
    result = sleuth("search", "nobel prize in physics", "--corpus", corpus, "--pipeline", "dhr_p", "-k", 2, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["hits"][0]["id"] == "nq00000"  # "List of Nobel laureates in Physics"


@pytest.mark.parametrize("stages, reads", [
    ([{"run_file": {"path": "r.trec"}}, {"cutoff": {"k": 5}}], False),
    ([{"fuse": {"branches": [{"run_file": {"path": "r.trec"}}, {"bm25": {"index": "indexes/x"}}]}}], False),
    ([{"fuse": {"branches": [{"run_file": {"path": "r.trec"}}, [{"dense": {}}]]}}], True),
    ([{"run_file": {"path": "r.trec"}}, "bm25"], True),
    ([{"dhr": {}}], True),
])
def test_reads_corpus_of_a_config(stages, reads):
    load_stage_modules()
    assert reads_corpus(stages) is reads


def test_run_file_given_candidates_keeps_those_it_ranks_with_its_scores():
    stage = RunFile(Run({"q": [Hit("a", 3.0), Hit("b", 2.0), Hit("c", 1.0)]}), k=2)
    assert stage.transform([Query("q", "x"), Query("other", "y")]) == {"q": [Hit("a", 3.0), Hit("b", 2.0)],
                                                                      "other": []}
    candidates = Run({"q": [Hit("c", 9.0, title="T"), Hit("z", 8.0), Hit("a", 7.0)]})
    scored = stage.transform([Query("q", "x")], candidates)
    assert [(h.id, h.score, h.title) for h in scored["q"]] == [("a", 3.0, None), ("c", 1.0, "T")]


@pytest.mark.parametrize("path, count, first", [
    ("squad2/dev-v2.0.json", 6078, "In what country is Normandy located?"),
    ("hotpotqa/hotpot_dev_distractor_100.json", 100, None),
    ("2wikimultihopqa/2wiki_dev.json", 157, None),
    ("musique/musique_dev_200.jsonl", 200, None),
    ("musique/musique_train_100.json", 100, None),
    ("trec-dl19/topics.dl19-passage.txt", 43, "do goldfish grow"),
])
def test_query_files_of_every_dataset_read_as_queries(data_dir, path, count, first):
    """`sleuth retrieve QUERIES` and ``sleuth.read_queries`` read a dataset's own question file (before: SQuAD,
    HotpotQA, 2Wiki and MuSiQue files were read as TREC topics and refused, "expected 'qid<TAB>query'")."""
    queries = read_queries(data_dir / path)
    assert len(queries) == count and len({q.id for q in queries}) == count
    assert all(q.text.strip() for q in queries)
    if first is not None:
        assert queries[0].text == first


def test_json_lines_run_files_are_checked_line_by_line(tmp_path):
    from sleuth.errors import InputError
    from sleuth.stages.run_formats import read_run, write_run

    run = Run({"q 1": [Hit("a b", 2.0), Hit("c", 1.0)], "q2": [Hit("d", 0.5)]})
    write_run(run, tmp_path / "r.jsonl", tag="x y")
    assert read_run(tmp_path / "r.jsonl") == run
    for lines, message in ((['{"qid": "1", "docno": "a", "score": "high"}'], "r2.jsonl:1: field 'score': score 'high'"),
                           (['{"qid": "1", "docno": "a", "score": 1}', '{"qid": "1", "docno": "a", "score": 2}'],
                            "r2.jsonl:2: document 'a' ranked twice for query '1' (first on line 1)"),
                           (['{"qid": "1", "score": 1}'], "r2.jsonl:1: field 'docno': missing")):
        (tmp_path / "r2.jsonl").write_text("\n".join(lines) + "\n")
        with pytest.raises(InputError) as error:
            read_run(tmp_path / "r2.jsonl")
        assert message in str(error.value)


def test_a_pipeline_that_retrieves_no_judged_document_is_noted(scifact):
    """Ids that are not the documents the qrels judge (another collection's run, a chain's paths) score zero; the
    experiment says so instead of a silent row of zeros (before: no note)."""
    from sleuth.eval.experiment import Experiment
    from sleuth.pipelines.front import read_qrels

    queries, qrels = read_queries(scifact)[:20], read_qrels(scifact)
    bm25 = load_pipeline("bm25", open_workspace(scifact, progress=False))
    paths = Run({q.id: [Hit(f"{h.id} || {h.id}", h.score) for h in hits] for q, hits in zip(
        queries, bm25.transform(queries).values())})
    result = Experiment({"bm25": bm25, "paths": RunFile(paths)}, queries, qrels, ["nDCG@10"]).run()
    assert result.aggregate["paths"]["nDCG@10"] == 0 < result.aggregate["bm25"]["nDCG@10"]
    notes = [note for note in result.notes if "retrieved no judged document" in note]
    assert len(notes) == 1 and notes[0].startswith("pipeline 'paths' retrieved no judged document for any of its 20")
    assert " || " in notes[0]


def test_path_passages_expands_paths_and_the_note_names_it(scifact):
    from sleuth.eval.experiment import Experiment
    from sleuth.pipelines.front import read_qrels
    from sleuth.stages.paths import PathPassages

    a, b, c = Hit("a", 0.9), Hit("b", 0.8), Hit("c", 0.7)
    paths = Run({"q": [Hit("a||b", 3.0, extras={"path": [a, b]}), Hit("b||c", 2.0, extras={"path": [b, c]}),
                       Hit("d", 1.0)]})
    expanded = PathPassages().transform([Query("q", "x")], paths)["q"]
    assert [(h.id, h.score, h.extras.get("path_id")) for h in expanded] == [
        ("a", 3.0, "a||b"), ("b", 3.0, "a||b"), ("c", 2.0, "b||c"), ("d", 1.0, None)]
    queries, qrels = read_queries(scifact)[:6], read_qrels(scifact)
    judged = Run({q.id: [Hit(f"{doc}||x", 1.0, extras={"path": [Hit(doc, 1.0), Hit("x", 0.5)]})
                         for doc in qrels[q.id]] for q in queries})
    result = Experiment({"paths": RunFile(judged), "passages": RunFile(judged) >> PathPassages()}, queries, qrels,
                        ["R@10"]).run()
    assert result.aggregate["paths"]["R@10"] == 0 and result.aggregate["passages"]["R@10"] == 1
    assert any("add the path_passages stage" in note for note in result.notes)


@pytest.mark.slow
def test_retrieve_on_ray_writes_the_same_run_as_in_process(sleuth, sleuth_process, scifact, tmp_path):
    """`--ray-address local`: the queries split over two Ray workers, each loading the pipeline once; the run file
    is the in-process one, byte for byte (before: no Ray option), a --set key reaching the workers too."""
    pytest.importorskip("ray", reason="ray is not installed (pip install 'sleuth[ray]')")
    home = {"SLEUTH_HOME": str(tmp_path / "home")}
    args = ("retrieve", scifact, "--max-queries", QUERIES, "-k", 20, "--set", "bm25.k1=1.6")
    assert sleuth(*args, "-o", tmp_path / "here.trec", env=home).returncode == 0
    result = sleuth_process(*args, "-o", tmp_path / "ray.trec", "--ray-address", "local", env=home)
    assert result.returncode == 0, result.stderr
    assert f"{QUERIES} queries, 800 hits" in result.stderr and "WARNING" not in result.stderr
    assert (tmp_path / "ray.trec").read_text() == (tmp_path / "here.trec").read_text()
    assert sleuth(*args[:-2], "-o", tmp_path / "default.trec", env=home).returncode == 0
    assert (tmp_path / "default.trec").read_text() != (tmp_path / "here.trec").read_text()  # k1 was set
    one_line_error(sleuth(*args, "-o", tmp_path / "x.trec", "--ray-workers", 3), "--ray-workers does not apply")


def test_run_files_named_gz_or_bz2_are_written_compressed_and_read_back(sleuth, scifact, tmp_path):
    """Before: `--out run.trec.gz` wrote plain text under that name, which sleuth then refused to read ("the
    compressed file is truncated or damaged")."""
    import bz2
    import gzip

    for name, opener in (("run.trec.gz", gzip.open), ("run.jsonl.bz2", bz2.open)):
        assert sleuth("retrieve", scifact, "--max-queries", 5, "-k", 10, "--out", tmp_path / name).returncode == 0
        with opener(tmp_path / name, "rt", encoding="utf-8") as handle:
            first = handle.readline()
        assert first.startswith('{"qid": ') if "jsonl" in name else first.split()[1] == "Q0"
    plain = tmp_path / "run.trec"
    assert sleuth("retrieve", scifact, "--max-queries", 5, "-k", 10, "--out", plain).returncode == 0
    assert gzip.open(tmp_path / "run.trec.gz", "rt").read() == plain.read_text()
    result = sleuth("eval", "--run", tmp_path / "run.trec.gz", "--run", f"lines={tmp_path / 'run.jsonl.bz2'}",
                    "--qrels", bundled_dataset_dir() / "qrels" / "train.tsv", "--metric", "RR", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row["measures"]["RR"] for row in json.loads(result.stdout)["pipelines"]}
    assert set(rows) == {"run", "lines"}  # the name of run.trec.gz is 'run', as run.trec's
    assert rows["run"] == rows["lines"] > 0


def test_an_output_over_a_file_of_an_input_folder_or_of_the_pipeline_is_refused(sleuth, tmp_path):
    """Before (each exit 0): `eval FOLDER --per-query FOLDER/queries.jsonl` and `retrieve FOLDER --out
    FOLDER/qrels/train.tsv` replaced a file of the BEIR folder they read, `retrieve --pipeline run_file --set
    run_file.path=a.run --out a.run` the run it read, `eval --pipeline p.yaml --per-query p.yaml` its own config, and
    `eval --run runs/a.run --runs-dir runs` wrote the run over its own file. Nothing is written now, a new file in
    the folder is still fine."""
    import shutil

    import sleuth as api

    folder = tmp_path / "sf"
    shutil.copytree(bundled_dataset_dir(), folder)
    before = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    for args, option in ((("eval", folder, "--per-query", folder / "queries.jsonl.gz"), "--per-query"),
                         (("retrieve", folder, "--out", folder / "qrels" / "train.tsv"), "--out")):
        one_line_error(sleuth(*args), f"{option} {args[-1]}", f"refusing to write over a file of the input {folder}")
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == before
    run = tmp_path / "a.run"
    api.write_run(Run({"1": [Hit("31715818", 1.0)]}), run)
    written = run.read_bytes()
    one_line_error(sleuth("retrieve", folder, "--pipeline", "run_file", "--set", f"run_file.path={run}", "--out", run),
                   f"--out {run}", "refusing to write over the input")
    (tmp_path / "p.yaml").write_text("name: p\nstages:\n  - bm25: {k: 10}\n", encoding="utf-8")
    one_line_error(sleuth("eval", folder, "--pipeline", tmp_path / "p.yaml", "--per-query", tmp_path / "p.yaml"),
                   "--per-query", "refusing to write over the input")
    one_line_error(sleuth("eval", "--run", run, "--qrels", folder / "qrels" / "train.tsv", "--runs-dir", tmp_path),
                   f"--runs-dir {tmp_path}: its a.run would be written over the input {run}")
    assert run.read_bytes() == written and "bm25" in (tmp_path / "p.yaml").read_text()
    result = sleuth("retrieve", folder, "--out", folder / "new.run", "--max-queries", 2, "-k", 3)
    assert result.returncode == 0, result.stderr
    assert len((folder / "new.run").read_text().splitlines()) == 6


def test_read_run_and_write_run_from_the_front_door(tmp_path):
    """`sleuth.write_run` / `sleuth.read_run` (before: only `sleuth.stages.run_formats`): TREC or JSON Lines by the
    name, compressed by the name; ids with spaces need JSON Lines."""
    import sleuth

    run = Run({"q 1": [Hit("Some Title", 2.0), Hit("Other", 1.0)], "q2": [Hit("d3", 0.5)]})
    sleuth.write_run(run, tmp_path / "run.jsonl.gz", tag="mine")
    back = sleuth.read_run(tmp_path / "run.jsonl.gz")
    assert sleuth.RunFile(tmp_path / "run.jsonl.gz").name == "run"  # as `--run run.jsonl.gz` names its row
    assert {qid: [(h.id, h.score) for h in hits] for qid, hits in back.items()} == \
           {qid: [(h.id, h.score) for h in hits] for qid, hits in run.items()}
    with pytest.raises(Exception, match="whitespace|space"):
        sleuth.write_run(run, tmp_path / "run.trec")
    assert not (tmp_path / "run.trec").exists()


def test_a_compression_suffix_in_capitals_is_written_and_read_compressed(tmp_path, scifact_rows):
    """`run.TREC.GZ` was written as plain text (the writer matched '.gz' only) under a name that read_run named
    'run' (it dropped '.GZ'), and `corpus.JSONL.BZ2` was read as plain text: "not UTF-8". One rule now
    (`sleuth.io.compression_of`), in any case."""
    import bz2
    import gzip

    import sleuth
    from sleuth.corpus.jsonl import read_jsonl_documents

    run = Run({"1": [Hit("a", 2.0), Hit("b", 1.0)]})
    sleuth.write_run(run, tmp_path / "RUN.TREC.GZ")
    assert (tmp_path / "RUN.TREC.GZ").read_bytes()[:2] == b"\x1f\x8b"  # gzip's magic number
    assert gzip.decompress((tmp_path / "RUN.TREC.GZ").read_bytes()).decode().split()[:3] == ["1", "Q0", "a"]
    assert sleuth.read_run(tmp_path / "RUN.TREC.GZ").ids("1") == ["a", "b"]
    assert RunFile(tmp_path / "RUN.TREC.GZ").name == "RUN"
    corpus = tmp_path / "corpus.JSONL.BZ2"
    corpus.write_bytes(bz2.compress("".join(json.dumps(row) + "\n" for row in scifact_rows[:3]).encode()))
    assert [doc.id for doc in read_jsonl_documents(corpus)] == [row["_id"] for row in scifact_rows[:3]]


def test_write_run_takes_what_stages_take_and_a_fusion_reads_back_in_its_order(tmp_path):
    """write_run of a {qid: [Hit]} mapping or a results frame was an AttributeError; a NaN score was written, then
    refused by read_run; and 6 decimals tied RRF scores 1e-6 apart, so a fused run read back in another order."""
    import pandas as pd

    import sleuth
    from sleuth.errors import InputError
    from sleuth.stages.fusion import reciprocal_rank_fusion

    sleuth.write_run({"1": [Hit("a", 2.0), Hit("b", 3.0)]}, tmp_path / "dict.trec")
    assert sleuth.read_run(tmp_path / "dict.trec").ids("1") == ["b", "a"]
    frame = pd.DataFrame({"qid": ["1", "1"], "docno": ["a", "b"], "score": [1.0, 0.5]})
    sleuth.write_run(frame, tmp_path / "frame.jsonl")
    assert sleuth.read_run(tmp_path / "frame.jsonl").ids("1") == ["a", "b"]
    with pytest.raises(InputError, match="document 'a' has score nan"):
        sleuth.write_run(Run({"1": [Hit("a", float("nan"))]}), tmp_path / "nan.trec")
    assert not (tmp_path / "nan.trec").exists()

    ranking = [Hit(f"d{999 - i:03d}", float(-i)) for i in range(1000)]  # ids descending: a tie reads back reversed
    fused = Run.from_scores({"1": reciprocal_rank_fusion([ranking], [1.0])})
    sleuth.write_run(fused, tmp_path / "fused.trec")
    assert sleuth.read_run(tmp_path / "fused.trec").ids("1") == fused.ids("1")


def test_a_trec_run_ranking_a_document_twice_names_both_lines(tmp_path):
    """read_trec keeps no line number per (query, document) any more (1.6 million tuples for two SciFact runs): the
    first line of a repeated document is found again when it is refused."""
    from sleuth.errors import InputError

    path = tmp_path / "twice.trec"
    path.write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0 t\n2 Q0 a 1 1.0 t\n1 Q0 a 3 0.5 t\n")
    with pytest.raises(InputError, match=r"twice.trec:4: document 'a' ranked twice for query '1' \(first on line 1\)"):
        Run.read_trec(path)


def test_to_frame_takes_queries_in_every_form_a_pipeline_does():
    """Before: an AttributeError traceback for strings, an {id: text} dict or a topics frame."""
    import pandas as pd

    from sleuth.stages.run import Hit, Run

    run = Run({"q1": [Hit("d1", 2.0)], "q2": [Hit("d2", 1.0)]})
    for queries in (["first", "second"], {"q1": "first", "q2": "second"},
                    pd.DataFrame({"qid": ["q1", "q2"], "query": ["first", "second"]})):
        assert run.to_frame(queries)[["qid", "query", "docno"]].values.tolist() == [["q1", "first", "d1"],
                                                                                     ["q2", "second", "d2"]]


def test_a_run_is_a_results_frame_and_back():
    """Before: no Run.to_frame (PyTerrier users went through sleuth.pyterrier.results_frame)."""
    from sleuth.corpus.model import Query
    from sleuth.stages.run import Hit, Run

    run = Run({"q1": [Hit("d1", 2.0, "d1", "T1", "one"), Hit("d2", 1.0, "d2", "T2", "two")], "q2": [Hit("d3", 0.5)]})
    frame = run.to_frame()
    assert list(frame.columns) == ["qid", "docno", "score", "rank", "title", "text"]
    assert frame[["qid", "docno", "rank"]].values.tolist() == [["q1", "d1", 0], ["q1", "d2", 1], ["q2", "d3", 0]]
    assert Run.from_frame(frame).scores() == run.scores()
    with_queries = run.to_frame([Query("q2", "second"), Query("q1", "first")])
    assert with_queries[["qid", "query"]].values.tolist()[0] == ["q2", "second"]


def test_a_results_frame_keeps_the_hits_documents_and_extras(scifact_rows):
    """A passage's document and a stage's extras go through a frame and back (before: dropped, so a grouping or a
    chain's paths could not follow a PyTerrier transformer): 40-word windows of real SciFact abstracts, their BM25
    ranking and max_passage's grouping of it."""
    import sleuth
    from sleuth.stages.run import Run

    ws = sleuth.open(scifact_rows[:60], splitter="window", window_words=40, progress=False)
    query = ["vitamin d and cancer risk"]
    ranked = ws.pipeline("bm25", k=20)(query)
    grouped = ws.pipeline("max_passage")(query, ranked)
    assert "doc_id" in ranked.to_frame(query) and "extras" in grouped.to_frame(query)  # a document is its own
    for run in (ranked, grouped):
        back = Run.from_frame(run.to_frame(query))
        assert [(h.id, h.doc_id, h.extras) for h in back["q1"]] == [(h.id, h.doc_id, h.extras) for h in run["q1"]]
    assert any(h.id != h.doc_id for h in ranked["q1"]) and all(h.extras["passage"] for h in grouped["q1"])
