"""Documents added to an index are read as its corpus was (sleuth.index.as_built): with the field mapping and the
splitter its manifest records, by `sleuth update --add` and by `POST /admin/documents`, so that the updated index
searches exactly as a fresh build over the same documents does."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from sleuth.index.bm25 import BM25Index
from sleuth.pipelines.index_stage import stage_for_index
from sleuth.service.app import create_app
from tests.cli_support import one_line_error

KEY = "as-built-key-7c"


def write_jsonl(path, records) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")


def ranking(folder, queries):
    index = BM25Index.load(folder)
    positions, scores = index.search(queries, k=20)
    return [[(index.docstore.ids[p], round(float(s), 5)) for p, s in zip(row, values)]
            for row, values in zip(positions, scores)]


def test_an_added_document_is_split_as_the_build_split_the_corpus(sleuth, tmp_path, scifact_rows):
    """Before: an index built with --splitter window took a 250-word document as one passage 'z' (a build made
    'z#0', 'z#1', 'z#2'), so its BM25 statistics and ids differed from a fresh build's."""
    rows = [{"_id": r["_id"], "title": r["title"], "text": r["text"]} for r in scifact_rows[:40]]
    long_row = {"_id": "z", "title": "Long", "text": " ".join(r["text"] for r in scifact_rows[40:43])}
    write_jsonl(tmp_path / "base.jsonl", rows)
    write_jsonl(tmp_path / "new.jsonl", [long_row])
    write_jsonl(tmp_path / "all.jsonl", [*rows, long_row])
    for name, corpus in (("updated", "base.jsonl"), ("fresh", "all.jsonl")):
        built = sleuth("index", tmp_path / corpus, "--kind", "bm25", "--splitter", "window", "--window-words", "60",
                       "--out", tmp_path / name)
        assert built.returncode == 0, built.stderr
    added = sleuth("update", tmp_path / "updated", "--add", tmp_path / "new.jsonl")
    assert added.returncode == 0, added.stderr
    pieces = sum(1 for i in BM25Index.load(tmp_path / "fresh").docstore.ids if i.startswith("z#"))
    assert pieces >= 3 and f"added 1 document as {pieces} passages (--splitter window60, as built)" in \
        " ".join(added.stderr.split())
    queries = [scifact_rows[41]["title"], scifact_rows[42]["text"][:200], scifact_rows[5]["title"]]
    assert ranking(tmp_path / "updated", queries) == ranking(tmp_path / "fresh", queries)
    # a record naming another document cannot be split as a document
    write_jsonl(tmp_path / "part.jsonl", [{"id": "p1", "doc_id": "z", "text": "a passage of z"}])
    one_line_error(sleuth("update", tmp_path / "updated", "--add", tmp_path / "part.jsonl"),
                   "'p1' names document 'z' (doc_id), but this index splits its documents into passages "
                   "(--splitter window60): add whole documents")


def test_an_added_document_is_read_with_the_build_field_mapping(sleuth, tmp_path, scifact_rows):
    """Before: an index built with --field id=docno --field title=headline --field text=body refused documents in
    its own format ("field 'id': missing"), and `update` had no --field."""
    def custom(row):
        return {"docno": row["_id"], "headline": row["title"], "body": row["text"]}

    write_jsonl(tmp_path / "base.jsonl", [custom(r) for r in scifact_rows[:30]])
    write_jsonl(tmp_path / "new.jsonl", [custom(scifact_rows[30])])
    mapping = ["--field", "id=docno", "--field", "title=headline", "--field", "text=body"]
    assert sleuth("index", tmp_path / "base.jsonl", *mapping, "--kind", "bm25", "--out", tmp_path / "ix").returncode == 0
    added = sleuth("update", tmp_path / "ix", "--add", tmp_path / "new.jsonl")
    assert added.returncode == 0, added.stderr
    index = BM25Index.load(tmp_path / "ix")
    assert index.docstore.ids[-1] == scifact_rows[30]["_id"] and index.docstore.titles[-1] == scifact_rows[30]["title"]
    # a file in sleuth's own keys names the mapping it lacks, and --field reads it
    write_jsonl(tmp_path / "plain.jsonl", [{"id": "p9", "title": "t", "text": "plain keys"}])
    one_line_error(sleuth("update", tmp_path / "ix", "--add", tmp_path / "plain.jsonl"),
                   "plain.jsonl:1: field 'docno': missing (the record's keys: id, text, title; the index reads id "
                   "from 'docno')")
    assert sleuth("update", tmp_path / "ix", "--add", tmp_path / "plain.jsonl", "--field", "id=id", "--field",
                  "text=text", "--field", "title=title").returncode == 0
    assert BM25Index.load(tmp_path / "ix").docstore.ids[-1] == "p9"
    one_line_error(sleuth("update", tmp_path / "ix", "--delete", "p9", "--field", "id=id"),
                   "--field names the keys of the --add file: it goes with --add, not with a deletion")


def test_admin_documents_are_read_and_split_as_the_index_was_built(sleuth, tmp_path, scifact_rows):
    """The same through `POST /admin/documents`: mapped keys accepted, documents split by the recorded splitter."""
    write_jsonl(tmp_path / "base.jsonl", [{"docno": r["_id"], "body": r["text"]} for r in scifact_rows[:30]])
    built = sleuth("index", tmp_path / "base.jsonl", "--field", "id=docno", "--field", "text=body", "--kind", "bm25",
                   "--splitter", "window", "--window-words", "50", "--out", tmp_path / "ix")
    assert built.returncode == 0, built.stderr
    folder = tmp_path / "ix"

    def load():
        return {"ix": stage_for_index(folder, 50, "cpu")}

    app = create_app(load(), api_key=KEY, loader=load, index_dirs={"ix": folder}, extensions=[])
    text = " ".join(r["text"] for r in scifact_rows[30:32])
    with TestClient(app) as client:
        added = client.post("/admin/documents", json={"documents": [{"docno": "new", "body": text}]},
                            headers={"X-API-Key": KEY})
        assert added.status_code == 200, added.text
        hits = client.post("/search", json={"query": scifact_rows[31]["text"][:150], "k": 1}).json()["hits"]
        assert hits[0]["doc_id"] == "new" and hits[0]["id"].startswith("new#")
        wrong = client.post("/admin/documents", json={"documents": [{"id": "x", "text": "plain"}]},
                            headers={"X-API-Key": KEY})
        assert wrong.status_code == 400 and "'docno' missing" in wrong.json()["error"]
    ids = BM25Index.load(folder).docstore.ids
    assert sum(1 for i in ids if i.startswith("new#")) == len(text.split()) // 50 + (len(text.split()) % 50 > 0)


def test_a_message_piped_to_a_log_stays_one_line(sleuth, tmp_path, scifact_rows):
    """Before: rich wrapped every message at 80 columns when stderr was not a terminal (a training log's step
    lines, this summary), so a log could not be read line by line."""
    write_jsonl(tmp_path / "base.jsonl", [{"_id": r["_id"], "text": r["text"]} for r in scifact_rows[:20]])
    write_jsonl(tmp_path / "new.jsonl", [{"_id": "long-" + "x" * 60, "text": " ".join(["word"] * 130)}])
    folder = tmp_path / "an-index-folder-with-a-rather-long-name"
    built = sleuth("index", tmp_path / "base.jsonl", "--kind", "bm25", "--splitter", "window", "--window-words",
                   "60", "--out", folder)
    assert built.returncode == 0, built.stderr
    added = sleuth("update", folder, "--add", tmp_path / "new.jsonl")
    line = next(line for line in added.stderr.splitlines() if line.startswith("bm25 index at "))
    assert len(line) > 100 and "as built), now " in line, added.stderr
