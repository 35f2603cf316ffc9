"""A multi-hop dataset's own question file as a corpus and as a test collection, as a SQuAD file is: HotpotQA and
2WikiMultihopQA (``_id``, ``context``) and MuSiQue (``paragraphs``) files are detected, their context paragraphs are
the corpus, and `sleuth eval --corpus FILE` measures retrieval of each question's supporting paragraphs. Before: no
format detected ("cannot tell the corpus format"), and `--format hotpotqa` read only ``*_corpus.json`` files
("expected a JSON object at the top level, found list"). Real files of ../shared/data, BM25."""

from __future__ import annotations

import json

import pytest

from sleuth.corpus.formats import detect_format, read_documents
from sleuth.corpus.hotpotqa import read_hotpotqa_questions
from sleuth.corpus.musique import read_musique_questions


@pytest.mark.parametrize("path, kind, paragraphs", [
    ("hotpotqa/hotpot_dev_distractor_100.json", "hotpotqa", 1000),
    ("2wikimultihopqa/2wiki_dev.json", "hotpotqa", 1247),
    ("musique/musique_dev_200.jsonl", "musique", 3141),
    ("musique/musique_train_100.json", "musique", 1890),
])
def test_question_files_are_detected_and_their_paragraphs_are_the_corpus(data_dir, path, kind, paragraphs):
    assert detect_format(data_dir / path) == kind
    documents = list(read_documents(data_dir / path))
    assert len(documents) == paragraphs == len({d.id for d in documents})
    assert all(d.title and d.text for d in documents)
    questions = list((read_hotpotqa_questions if kind == "hotpotqa" else read_musique_questions)(data_dir / path))
    ids = {d.id for d in documents}
    key = "supporting_titles" if kind == "hotpotqa" else "supporting_ids"
    assert all(set(q.metadata[key]) <= ids for q in questions)  # every supporting paragraph is in the corpus


@pytest.mark.parametrize("path, kind, paragraphs", [
    ("hotpotqa/hotpot_train_100_corpus.json", "hotpotqa", 994),
    ("musique/musique_train_100_corpus.json", "musique", 1890),
])
def test_corpus_files_of_those_formats_still_read(data_dir, path, kind, paragraphs):
    assert len(list(read_documents(data_dir / path, kind))) == paragraphs


@pytest.mark.parametrize("path, questions", [
    ("hotpotqa/hotpot_dev_distractor_100.json", 100),
    ("musique/musique_dev_200.jsonl", 200),
])
def test_eval_of_a_question_file_measures_its_supporting_paragraphs(sleuth, data_dir, path, questions):
    result = sleuth("eval", "--corpus", data_dir / path, "--metric", "R@2", "--metric", "R@20", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    bm25 = report["pipelines"][0]["measures"]
    assert report["queries"] == questions
    # measured: HotpotQA R@2 .535, R@20 .950; MuSiQue R@2 .388, R@20 .660 (two to four supporting paragraphs)
    assert 0.3 < bm25["R@2"] < bm25["R@20"] < 1
    assert "judged document" not in result.stderr  # every supporting paragraph is in the corpus


def test_a_question_file_is_the_queries_of_retrieve_and_its_title_ids_go_to_a_json_lines_run(sleuth, data_dir,
                                                                                             tmp_path):
    """HotpotQA's paragraph ids are their titles, which hold spaces: a TREC run file is refused in one line (nothing
    written) that names the way out, a run file named .jsonl holds them, and `sleuth eval --run` measures it as the
    pipeline itself."""
    from sleuth.stages.run_formats import read_run

    path = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    result = sleuth("retrieve", path, "--corpus", path, "-k", 20, "-o", tmp_path / "run.trec")
    assert result.returncode == 2 and "cannot write pipeline 'bm25' as a TREC run file: document id" in result.stderr
    assert "name the --out file .jsonl" in result.stderr and not (tmp_path / "run.trec").exists()
    assert sleuth("retrieve", path, "--corpus", path, "-k", 20, "-o", tmp_path / "run.jsonl").returncode == 0
    run = read_run(tmp_path / "run.jsonl")
    assert len(run) == 100 and any(" " in hit.id for hits in run.values() for hit in hits)
    first = json.loads((tmp_path / "run.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert set(first) == {"qid", "docno", "rank", "score", "tag"} and first["rank"] == 1 and first["tag"] == "bm25"
    result = sleuth("eval", "--corpus", path, "--pipeline", "bm25", "--run", f"file={tmp_path / 'run.jsonl'}",
                    "--metric", "R@2", "--metric", "R@20", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row["measures"] for row in json.loads(result.stdout)["pipelines"]}
    assert rows["file"] == pytest.approx(rows["bm25"]) and rows["bm25"]["R@20"] > 0.9
