"""Small inconsistencies the CLI audit of session 36 found, each mended: the fused run's TREC id error names its
way out, `search` takes `--hits` as `retrieve` and `fuse` do, an empty query in a topics file is called empty, and
the note on a run of passages scored against document qrels names the max_passage stage."""

from __future__ import annotations

import json

from sleuth.eval.experiment import unjudged_run_note
from sleuth.stages.run import Hit, Run
from tests.cli_support import one_line_error


def test_a_fused_run_of_ids_trec_cannot_hold_names_the_jsonl_way_out(sleuth, tmp_path):
    """Before: "cannot write pipeline 'fuse' as a TREC run file" without the hint `retrieve` gives."""
    (tmp_path / "a.trec").write_text("1 Q0 d1 1 2.0 a\n1 Q0 d2 2 1.0 a\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text(json.dumps({"qid": "1", "docno": "doc 9", "score": 3.0}) + "\n",
                                      encoding="utf-8")
    one_line_error(sleuth("fuse", tmp_path / "a.trec", tmp_path / "b.jsonl", "--out", tmp_path / "f.trec"),
                   "cannot write the fused run as a TREC run file: document id 'doc 9' has whitespace; name the "
                   "--out file .jsonl to write JSON Lines, which holds any id")
    assert sleuth("fuse", tmp_path / "a.trec", tmp_path / "b.jsonl", "--out", tmp_path / "f.jsonl").returncode == 0


def test_search_takes_hits_as_retrieve_and_fuse_do(sleuth, tmp_path, scifact_rows):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:30]), encoding="utf-8")
    done = sleuth("search", "cells", "--corpus", corpus, "--hits", "3", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["hits"]) == 3


def test_an_empty_query_in_a_topics_file_is_called_empty(sleuth, tmp_path, scifact_rows):
    """Before: `99<TAB>` was "expected 'qid<TAB>query'", of a line that has the tab."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:30]), encoding="utf-8")
    topics = tmp_path / "t.tsv"
    topics.write_text("1\tcells\n99\t \n", encoding="utf-8")
    one_line_error(sleuth("retrieve", topics, "--corpus", corpus, "--out", tmp_path / "r.trec"),
                   "t.tsv:2: query '99' is empty")


def test_passages_scored_against_document_qrels_are_told_of_max_passage():
    """Before: the note asked whether the ids name the judged documents; the passages' documents are judged."""
    run = Run({str(q): [Hit(f"d{q}#0", 1.0, f"d{q}"), Hit(f"x{q}#1", 0.5, f"x{q}")] for q in range(6)})
    qrels = {str(q): {f"d{q}": 1} for q in range(6)}
    note = unjudged_run_note("bm25", run, qrels)
    assert note is not None and note.endswith(
        "(its hits are passages of documents: add the max_passage stage to rank their documents)")
    whole = Run({str(q): [Hit(f"y{q}", 1.0, f"y{q}")] for q in range(6)})
    assert not unjudged_run_note("bm25", whole, qrels).endswith("documents)")


def test_eval_without_a_corpus_refuses_corpus_options_and_names_the_bundled_one(sleuth):
    """Before: `sleuth eval --splitter window` split the bundled SciFact (and `--format jsonl` read it) without a
    word, where search and retrieve refuse both; plain eval did not say it used the bundled corpus."""
    for args in (["--splitter", "window"], ["--format", "jsonl"]):
        one_line_error(sleuth("eval", *args, "--max-queries", "2"), "is for a corpus you give, and none was given")
    done = sleuth("eval", "--max-queries", "2", "--metric", "nDCG@10")
    assert done.returncode == 0, done.stderr
    assert "note: no --corpus given: evaluating on the bundled BEIR SciFact corpus" in " ".join(done.stderr.split())


def test_demo_refuses_max_queries_0(sleuth):
    one_line_error(sleuth("demo", "--max-queries", "0"), "--max-queries")


def test_ray_options_without_a_ray_address_and_one_ray_shard_are_refused(sleuth, tmp_path):
    """Before: eval --ray-workers and serve --actor-cpus ran in process without a word; index --ray-address without
    --shards (or with 1) was a Ray Data traceback."""
    one_line_error(sleuth("eval", "--ray-workers", "3", "--max-queries", "2"),
                   "without --ray-address nothing runs on Ray: --ray-workers does not apply")
    one_line_error(sleuth("serve", "--actor-cpus", "0.3", "--port", "0"),
                   "without --ray-address no shard actor is started: --actor-cpus does not apply")
    one_line_error(sleuth("index", "--kind", "bm25", "--ray-address", "local", "--out", tmp_path / "ix"),
                   "--ray-address builds the shards of a sharded index in parallel: give --shards 2 or more (got 1")


def test_a_sharded_folder_without_its_manifest_is_not_searched_by_one_shard(sleuth, tmp_path, scifact_passages):
    """Before: the error said to pass one shard-00N folder, which searched a third of the corpus without a word."""
    from sleuth.index.sharded import ShardedBM25Index

    ShardedBM25Index.build(scifact_passages[:60], tmp_path / "s3", shards=3, show_progress=False)
    (tmp_path / "s3" / "manifest.json").unlink()
    one_line_error(sleuth("search", "cells", "--index", tmp_path / "s3"),
                   "it holds the shards shard-000, shard-001, shard-002 of a sharded index whose own manifest is "
                   "gone: one shard alone is part of the corpus, so rebuild the sharded index")
