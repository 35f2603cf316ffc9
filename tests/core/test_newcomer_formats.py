"""A newcomer's own collections: TSV and SMART readers (real Cranfield files), JSONL id keys, the corpus options of
every command, and evaluation that says what it left out (unjudged topics, a query's own document, depths)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sleuth.corpus.beir import load_beir
from sleuth.corpus.formats import FORMATS, detect_format, read_documents, read_queries
from sleuth.corpus.model import Query
from sleuth.corpus.qrels import read_qrels
from sleuth.corpus.smart import align_query_ids
from sleuth.errors import InputError
from sleuth.eval.experiment import Experiment
from sleuth.pipelines.config import load_pipeline
from sleuth.pipelines.workspace import CorpusSource, Workspace
from tests.cli_support import one_line_error

FIXTURES = Path(__file__).parent.parent / "fixtures"
CRAN, CISI = FIXTURES / "cranfield", FIXTURES / "cisi"


def test_cranfield_files_as_distributed():
    docs = list(read_documents(CRAN / "cran.all.1400"))
    assert detect_format(CRAN / "cran.all.1400") == "smart"
    assert [d.id for d in docs] == [str(i) for i in range(1, 15)]
    assert docs[0].title == "experimental investigation of the aerodynamics of a wing in a slipstream ."
    assert docs[0].metadata == {"author": "brenckman,m.", "bib": "j. ae. scs. 25, 1958, 324."}
    assert docs[4].text.startswith("one-dimensional transient heat conduction")
    queries = read_queries(CRAN / "cran.qry")
    assert [q.id for q in queries] == ["1", "2", "4", "8", "9", "10", "12", "13", "15", "18"]  # .I 001 -> 1
    qrels = read_qrels(CRAN / "cranqrel")  # 'qid docid rel', whitespace-separated, trailing blanks
    assert qrels["3"] == {"5": 3, "6": 3, "90": 3, "91": 3, "119": 3, "144": 3, "181": 3, "399": 3, "485": -1}
    aligned, note = align_query_ids(queries, qrels)  # cranqrel numbers the queries by position
    assert note and "by position" in note
    assert [q.id for q in aligned] == [str(i) for i in range(1, 11)]
    assert aligned[2].text.startswith("what problems of heat conduction in composite slabs")  # .I 004 = qrels 3


def test_cranfield_evaluates_in_one_command(sleuth):
    result = sleuth("eval", "--corpus", CRAN / "cran.all.1400", "--queries", CRAN / "cran.qry",
                    "--qrels", CRAN / "cranqrel", "--metric", "nDCG@10", "--json")
    assert result.returncode == 0, result.stderr
    assert "numbering by position" in result.stderr
    report = json.loads(result.stdout)
    assert report["queries"] == 10 and report["coverage"]["unjudged"] == 0
    assert report["excluded_self_hits"] is None  # numeric ids shared by queries and documents are not self-hits
    assert report["pipelines"][0]["measures"]["nDCG@10"] > 0.1


def test_trec_topics_are_never_numbered_by_position(sleuth, tmp_path):
    """Cranfield's position numbering is a SMART query file's layout. Before, TREC topics were renumbered too, so
    DL'19 topics (ids 156493, ...) beside SciFact's qrels (1, 3, 5, ...) were scored on other queries' judgements
    after a note (exit 0); now no topic has qrels, which is refused."""
    topics, qrels = tmp_path / "topics.tsv", tmp_path / "qrels.txt"
    topics.write_text("156493\tdo goldfish grow\n1110199\twhat is wifi vs bluetooth\n", encoding="utf-8")
    qrels.write_text("1 0 2 1\n2 0 5 1\n", encoding="utf-8")
    one_line_error(sleuth("eval", "--corpus", CRAN / "cran.all.1400", "--queries", topics, "--qrels", qrels),
                   "no query of the experiment has qrels", "do the topic ids match the qrels?")


def test_cisi_layout_and_unjudged_topics_counted(sleuth):
    assert read_qrels(CISI / "CISI.REL") == {"1": {"1": 1}, "3": {"3": 1}, "5": {"5": 1, "6": 1}, "7": {"2": 1}}
    docs = list(read_documents(CISI / "CISI.ALL"))
    assert [d.id for d in docs] == ["1", "2", "3", "5", "6"]
    assert docs[2].title == "Two Kinds of Power An Essay on Bibliographic Control"
    assert docs[0].metadata["references"] == "1\t5\t1\n92\t1\t1" and ".X" not in docs[0].text
    result = sleuth("eval", "--corpus", CISI / "CISI.ALL", "--queries", CISI / "CISI.QRY",
                    "--qrels", CISI / "CISI.REL", "--metric", "AP", "--json")
    assert result.returncode == 0, result.stderr
    assert "2 of 5 topics have no qrels; evaluating on 3" in result.stderr
    assert "1 judged query id(s) have no topic" in result.stderr
    report = json.loads(result.stdout)
    assert report["queries"] == 3
    assert report["coverage"] == {"topics": 5, "evaluated": 3, "unjudged": 2, "judged_without_topic": 1}


def test_tsv_collections_from_real_rows(tmp_path, scifact_rows):
    rows = scifact_rows[:50]
    two = tmp_path / "collection.tsv"
    two.write_text("".join(f"{r['_id']}\t{' '.join(r['text'].split())}\n" for r in rows), encoding="utf-8")
    three = tmp_path / "nfcorpus-like.txt"
    three.write_text("doc_id\ttitle\ttext\n" + "".join(
        f"{r['_id']}\t{r['title']}\t{' '.join(r['text'].split())}\n" for r in rows), encoding="utf-8")
    for path, titled in ((two, False), (three, True)):
        assert detect_format(path) == "tsv"
        docs = list(read_documents(path))
        assert [d.id for d in docs] == [r["_id"] for r in rows]
        assert docs[0].title == (rows[0]["title"] if titled else "")
        assert docs[3].text == " ".join(rows[3]["text"].split())
    broken = tmp_path / "broken.tsv"
    broken.write_text("1\ta\tb\n2\tonly two\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"broken.tsv:2.*3 tab-separated columns"):
        list(read_documents(broken))


@pytest.mark.parametrize("key", ["_id", "id", "docid", "doc_id", "pid"])
def test_jsonl_id_keys(tmp_path, scifact_rows, key):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({key: r["_id"], "text": r["text"]}) + "\n" for r in scifact_rows[:5]))
    assert [d.id for d in read_documents(path)] == [r["_id"] for r in scifact_rows[:5]]


def test_jsonl_without_an_id_key_suggests_the_field_option(tmp_path, scifact_rows):
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"key": "1", "body": scifact_rows[0]["text"]}) + "\n")
    with pytest.raises(InputError, match=r"docs.jsonl:1.*--field id=KEY"):
        list(read_documents(path))
    assert next(iter(read_documents(path, fields={"id": "key", "text": "body"}))).id == "1"


def test_format_error_names_the_option_and_the_help_lists_the_same_formats(tmp_path, sleuth):
    notes = tmp_path / "notes.txt"
    notes.write_text("just some words\n")
    with pytest.raises(InputError, match="pass --format with one of: " + ", ".join(FORMATS) + r" \(in Python: format="):
        detect_format(notes)
    for command in ("index", "eval", "search", "serve"):
        shown = sleuth(command, "--help").stdout
        assert "--format" in shown and "--field" in shown and "Corpus options" in shown, command
        assert " ".join(", ".join(FORMATS).split()) in " ".join(shown.replace("│", " ").split()), command


def test_search_takes_the_field_mapping(tmp_path, scifact_rows, sleuth):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"key": r["_id"], "body": r["text"]}) + "\n" for r in scifact_rows[:100]))
    result = sleuth("search", "microRNA", "--corpus", path, "--field", "id=key", "--field", "text=body", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["hits"]


def test_search_eval_retrieve_and_serve_take_the_splitter(tmp_path, scifact_rows, sleuth):
    """Only `sleuth index` split documents into passages, so `sleuth search --corpus enwiki.xml.bz2 --pipeline dhr`
    (the README's DHR example) searched whole articles: the corpus options now hold --splitter and --window-words
    for every command that reads a corpus."""
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"_id": r["_id"], "text": r["text"]}) + "\n" for r in scifact_rows[:60]))
    words = scifact_rows[5]["text"].split()
    result = sleuth("search", " ".join(words[40:52]), "--corpus", path, "--splitter", "window", "--window-words", 30,
                    "--json")
    assert result.returncode == 0, result.stderr
    top = json.loads(result.stdout)["hits"][0]
    assert top["id"].startswith(scifact_rows[5]["_id"] + "#") and top["doc_id"] == scifact_rows[5]["_id"]
    for command in ("index", "search", "retrieve", "eval", "serve"):
        shown = " ".join(sleuth(command, "--help").stdout.replace("│", " ").split())
        assert "--splitter" in shown and "--window-words" in shown, command
    one_line_error(sleuth("search", "x", "--index", tmp_path, "--splitter", "sections"), "--splitter")
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("1 Q0 a 1 1.0 t\n")
    qrels.write_text("1 0 a 1\n")
    one_line_error(sleuth("eval", "--run", run, "--qrels", qrels, "--splitter", "window"),
                   "--splitter window cuts the corpus the pipelines read, and none is read here")


def test_beir_split_missing_lists_the_splits(tmp_path):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t2\t1\n")
    with pytest.raises(InputError, match=r"no 'train' split; the splits present are test: pass --split test"):
        load_beir(tmp_path, "train")


@pytest.fixture
def scifact_workspace(scifact_jsonl) -> Workspace:
    return Workspace(CorpusSource(scifact_jsonl, format="jsonl"))


def test_exclude_self_where_queries_are_documents(scifact_workspace, scifact_rows):
    rows = scifact_rows[:20]  # queries that are documents, as in ArguAna: the same id, the document's text
    queries = [Query(r["_id"], r["text"][:300]) for r in rows]
    qrels = {r["_id"]: {scifact_rows[20 + i]["_id"]: 1} for i, r in enumerate(rows)}
    texts = {r["_id"]: r["title"] + " " + r["text"] for r in scifact_rows}
    bm25 = load_pipeline("bm25", scifact_workspace)
    kept = Experiment({"bm25": bm25}, queries, qrels, measures=["RR"], exclude_self=False).run()
    assert sum(kept.runs["bm25"][q.id][0].id == q.id for q in queries) >= 18  # its own document ranks first
    result = Experiment({"bm25": bm25}, queries, qrels, measures=["RR"], corpus_texts=texts).run()  # detected
    assert result.excluded_self and result.excluded_self >= 18
    assert all(q.id not in {h.id for h in result.runs["bm25"][q.id]} for q in queries)
    assert any("own document is excluded" in note for note in result.notes)
    assert result.aggregate["bm25"]["RR"] >= kept.aggregate["bm25"]["RR"]


def test_runs_of_different_depths_are_cut_before_testing(scifact_workspace, scifact_rows):
    queries = [Query(str(i), r["title"]) for i, r in enumerate(scifact_rows[:15])]
    qrels = {str(i): {r["_id"]: 1} for i, r in enumerate(scifact_rows[:15])}
    bm25 = load_pipeline("bm25", scifact_workspace)
    pipelines = {"deep": bm25 % 100, "shallow": bm25 % 5}
    result = Experiment(pipelines, queries, qrels, measures=["AP", "R@100"]).run()
    assert any("common depth 5" in note for note in result.notes)
    assert max(len(hits) for run in result.runs.values() for hits in run.values()) == 5
    assert result.aggregate["deep"] == result.aggregate["shallow"]  # the same ranking, cut alike
    refused = Experiment(pipelines, queries, qrels, measures=["AP"], same_depth=False).run()
    assert refused.comparison("shallow", "AP") is None
    assert any("no significance test for shallow" in note for note in refused.notes)


def test_a_beir_folder_as_corpus_evaluates_and_max_queries_warns_of_nothing(sleuth, data_dir):
    """`sleuth eval --corpus <BEIR folder>` (as `sleuth search --corpus` takes one) said "give a BEIR folder";
    and --max-queries counted the judgements of the queries it left out as judgements without a topic, with a
    warning that the topics and the qrels do not belong together."""
    result = sleuth("eval", "--corpus", data_dir / "scifact", "--max-queries", 5, "--metric", "nDCG@10", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["queries"] == 5
    assert report["coverage"] == {"topics": 5, "evaluated": 5, "unjudged": 0, "judged_without_topic": 0}
    assert "have no topic" not in result.stderr and "do not match" not in result.stderr
