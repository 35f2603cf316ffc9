"""`sleuth dhr compare`, `sleuth dhr tune` and `sleuth train dhr` as a user runs them, on a small real NQ slice."""

from __future__ import annotations

import json

import pytest

from tests.squad_nq_support import nq_questions_with_gold


@pytest.fixture(scope="module")
def nq_slice(data_dir, tmp_path_factory):
    """40 NQ questions and a 70-passage corpus holding their gold passages."""
    return nq_questions_with_gold(data_dir, tmp_path_factory.mktemp("nq"), 40, 30)


def test_compare_and_tune(sleuth, nq_slice, tmp_path):
    result = sleuth("dhr", "compare", "--corpus", nq_slice / "corpus.jsonl", "--questions",
                    nq_slice / "questions.jsonl", "--split", "all", "--k1", "10", "--top-k", "1", "--top-k", "5",
                    "--json", tmp_path / "rows.json", "--max-queries", "30")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "rows.json").read_text())["questions"] == 30  # the first 30 of the 40
    rows = {r["name"]: r["measures"] for r in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert list(rows) == ["BM25", "flat dense (minilm)", "DHR-D (documents)", "DHR-P", "DHR w/o rerank (k1=10)",
                          "DHR serial (k1=10, lambda=1)", "DHR parallel (lambda=1)"]
    assert "P Top-1" not in rows["DHR-D (documents)"] and rows["DHR-D (documents)"]["D Top-5"] > 0.5
    assert all(0.5 < row["D Top-5"] <= 1.0 for row in rows.values())
    assert "DHR serial" in result.stdout and "P Top-5" in result.stdout
    # the tables are sleuth.eval.Experiment's: each row tested against BM25 (paired t-test, Holm-corrected)
    assert "Passage level" in result.stdout and "Document level" in result.stdout and "P Top-5 p" in result.stdout
    assert "vs 'BM25'" in result.stdout
    pvalues = {r["name"]: r["pvalues"] for r in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert pvalues["BM25"] == {} and 0.0 <= pvalues["DHR-P"]["P Top-5"] <= 1.0
    assert set(pvalues["DHR-D (documents)"]) <= {"D Top-1", "D Top-5"}
    tuned = sleuth("dhr", "tune", "--corpus", nq_slice / "corpus.jsonl", "--questions", nq_slice / "questions.jsonl",
                   "--split", "all", "--k1", "10", "--metric-k", "5")
    assert tuned.returncode == 0, tuned.stderr
    choice = json.loads(tuned.stdout.strip().splitlines()[-1])
    assert choice["questions"] == 40
    assert 0.0 <= choice["lambda"] <= 2.0 and len(choice["coarse"]) == 21
    assert choice["Top-5"] == max(choice["coarse"].values())
    prior = sleuth("dhr", "tune", "--corpus", nq_slice / "corpus.jsonl", "--questions", nq_slice / "questions.jsonl",
                   "--split", "all", "--search", "length-prior", "--metric-k", "1")
    assert prior.returncode == 0, prior.stderr
    choice = json.loads(prior.stdout.strip().splitlines()[-1])
    assert choice["search"] == "length-prior" and 0.0 <= choice["length_prior"] <= 0.1
    assert len(choice["coarse"]) == 21 and choice["Top-1"] >= max(choice["coarse"].values())
    assert 10 <= len(choice["gates"]) <= 20 and "None" in choice["gates"]  # <= 19 percentiles of the best scores, none
    assert choice["Top-1"] == max(g["Top-1"] for g in choice["gates"].values())
    assert choice["length_prior_below"] is None or 0.0 < choice["length_prior_below"] < 1.0


def test_bad_inputs_are_one_line_errors(sleuth, nq_slice, tmp_path):
    empty, one = tmp_path / "empty.jsonl", tmp_path / "one.jsonl"
    empty.write_text("\n", encoding="utf-8")
    one.write_text((nq_slice / "questions.jsonl").read_text(encoding="utf-8").splitlines()[0] + "\n")
    for args, fragment in (
        (("dhr", "compare", "--corpus", nq_slice / "corpus.jsonl", "--questions", nq_slice / "questions.jsonl",
          "--split", "test"), "unknown split 'test'"),
        (("dhr", "compare", "--corpus", nq_slice / "corpus.jsonl", "--questions", nq_slice / "questions.jsonl",
          "--index", tmp_path / "nothing"), "no index at"),
        (("dhr", "train", "--corpus", nq_slice / "corpus.jsonl", "--questions", nq_slice / "questions.jsonl",
          "--out", tmp_path / "out", "--passage-negatives", "bm25"), "KIND=COUNT"),
        (("dhr", "train", "--corpus", nq_slice / "corpus.jsonl", "--questions", nq_slice / "questions.jsonl",
          "--out", tmp_path / "out", "--passage-negatives", "random=1", "--rounds", "1"), "unknown passage negative"),
        (("dhr", "tune", "--corpus", nq_slice / "corpus.jsonl", "--questions", nq_slice / "questions.jsonl",
          "--search", "beta"), "unknown search 'beta'"),
        (("dhr", "compare", "--corpus", nq_slice / "corpus.jsonl", "--questions", empty), "empty.jsonl: no questions"),
        (("dhr", "tune", "--corpus", nq_slice / "corpus.jsonl", "--questions", one), "the dev side of 1 questions"),
        (("dhr", "compare", "--corpus", nq_slice / "corpus.jsonl", "--questions", nq_slice / "questions.jsonl",
          "--lambda", "nan"), "--lambda must be a number >= 0, got nan"),
        # a base model that is neither minilm nor a folder: named before the data (here empty) is read; it was
        # retried against the Hugging Face hub for a minute after the article split was written to --out
        (("dhr", "train", "--corpus", nq_slice / "corpus.jsonl", "--questions", empty, "--out", tmp_path / "out",
          "--document-model", "nosuch"),
         "--document-model 'nosuch': neither minilm (the packaged MiniLM) nor a model folder"),
    ):
        result = sleuth(*args)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert lines[-1].startswith("error: ") and fragment in lines[-1] and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()  # no run wrote its --out


def test_eval_on_squad_articles_with_distractors(sleuth, data_dir, nq_slice, tmp_path):
    """A SQuAD file is its own test collection (gold paragraphs, answers where present); --distractors mixes in NQ
    passages; the default dhr is never below the default flat dense at rank 1 (it reads passages as dense does)."""
    squad = json.loads((data_dir / "squad2" / "dev-v2.0.json").read_text(encoding="utf-8"))
    small = {"version": "v2.0", "data": [{"title": a["title"], "paragraphs": a["paragraphs"][:5]}
                                         for a in squad["data"][:2]]}
    path = tmp_path / "small-squad.json"
    path.write_text(json.dumps(small), encoding="utf-8")
    result = sleuth("eval", "--corpus", path, "--distractors", nq_slice / "corpus.jsonl", "--pipeline", "bm25",
                    "--pipeline", "dense", "--pipeline", "dhr", "--metric", "R@1", "--top-k", "1", "--json")
    assert result.returncode == 0, result.stderr
    table = json.loads(result.stdout)
    assert table["queries"] == sum(len(p["qas"]) for a in small["data"] for p in a["paragraphs"])
    means = {p["name"]: p["measures"] for p in table["pipelines"]}
    assert all(0 < m["R@1"] <= 1 and 0 < m["Top-1"] <= 1 for m in means.values())
    assert means["dhr"]["R@1"] >= means["dense"]["R@1"]
    result = sleuth("eval", "--corpus", path, "--distractors", tmp_path / "missing.jsonl", "--pipeline", "bm25")
    assert result.returncode == 2 and "distractor corpus not found" in result.stderr
    # the SQuAD file as --questions (before: refused, "a SQuAD JSON file, where questions JSONL ... is read"), here
    # with the articles as the distractors of the NQ passages: the same questions, judgements and figures
    result = sleuth("eval", "--corpus", nq_slice / "corpus.jsonl", "--distractors", path, "--questions", path,
                    "--pipeline", "bm25", "--metric", "R@1", "--top-k", "1", "--json")
    assert result.returncode == 0, result.stderr
    swapped = json.loads(result.stdout)
    assert swapped["queries"] == table["queries"] and swapped["pipelines"][0]["measures"] == means["bm25"]
    # dhr compare reads the same file's answerable questions (before: refused as "a SQuAD JSON file")
    answerable = sum(bool(qa["answers"]) for a in small["data"] for p in a["paragraphs"] for qa in p["qas"])
    result = sleuth("dhr", "compare", "--corpus", path, "--questions", path, "--split", "all", "--k1", "5",
                    "--top-k", "1", "--json", tmp_path / "rows.json")
    assert result.returncode == 0, result.stderr
    assert f"Passage level: {answerable} all questions" in " ".join(result.stdout.split())
    rows = {r["name"]: r["measures"] for r in json.loads((tmp_path / "rows.json").read_text())["rows"]}
    assert 0 < rows["BM25"]["P Top-1"] <= 1 and 0 < rows["DHR parallel (lambda=1)"]["P Top-1"] <= 1


def test_length_prior_tuning_scores_as_the_default_dhr(sleuth, data_dir, tmp_path):
    """`dhr tune --search length-prior` scored with lam 1 (the default until it became lam 0), so its grid was of
    another ranking than the pipeline whose prior it chose: its Top-1 at a prior must be `sleuth eval`'s of the
    default `dhr` with that prior, ungated."""
    from sleuth.corpus.squad import read_squad_questions
    from tests.squad_nq_support import nq_slice, squad_articles

    squad = squad_articles(data_dir, tmp_path, ("Steam_engine", "Warsaw", "Force"))
    nq, _ = nq_slice(data_dir, tmp_path, 300)
    answerable = [q for q in read_squad_questions(squad) if q.metadata.get("answers")][:40]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({"id": q.id, "question": q.text, "answers": q.metadata["answers"]}) + "\n"
                                 for q in answerable), encoding="utf-8")
    common = ("--corpus", squad, "--distractors", nq, "--questions", questions)
    tuned = sleuth("dhr", "tune", *common, "--search", "length-prior", "--separator", " ", "--metric-k", 1,
                   "--split", "all")
    assert tuned.returncode == 0, tuned.stderr
    coarse = json.loads(tuned.stdout.strip().splitlines()[-1])["coarse"]
    result = sleuth("eval", *common, "--pipeline", "dhr", "--set", "dhr.length_prior=0.05", "--set",
                    "dhr.length_prior_below=null", "--top-k", 1, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["pipelines"][0]["measures"]["Top-1"] == pytest.approx(coarse["0.05"])
    # every prior of the grid, in this process over the same (cached) index
    from sleuth.eval.answers import top_k_accuracy
    from sleuth.pipelines.config import load_pipeline
    from sleuth.pipelines.mixed_source import MixedCorpusSource
    from sleuth.pipelines.workspace import Workspace

    ws = Workspace(MixedCorpusSource(squad, distractors=(nq,)), show_progress=False)
    answers = {q.id: q.metadata["answers"] for q in answerable}
    for prior, tuned_top1 in coarse.items():
        run = load_pipeline("dhr", ws, length_prior=float(prior), length_prior_below=None).transform(answerable)
        assert top_k_accuracy(run, None, answers, ks=(1,))["Top-1"] == pytest.approx(tuned_top1), prior
