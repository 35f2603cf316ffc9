"""Options that do not apply to what a command was asked to do are refused in one line (not ignored), and options
left at their defaults are never taken for the user's choice; `--splitter sections` says which documents it
leaves out."""

from __future__ import annotations

import json

import pytest

from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
from tests.cli_support import one_line_error

DOCS = [("d1", "Vitamin", "vitamin deficiency and tuberculosis risk"), ("d2", "Cats", "cats sleep a lot during the day"),
        ("d3", "Dogs", "dogs bark at cats and chase them"), ("d4", "", "tuberculosis treatment with antibiotics")]


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "c1.jsonl"
    path.write_text("".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS))
    return path


@pytest.fixture
def bm25_index(tmp_path):
    out = tmp_path / "idx1"
    BM25Index.build([Passage(i, i, x, title_path=(t,)) for i, t, x in DOCS], out, show_progress=False)
    return out


@pytest.mark.parametrize("options, named", [
    (["--corpus", "c.tsv", "--json"], ["--corpus"]),
    (["--pipeline", "nonexist.yaml"], ["--pipeline"]),
    (["--pipeline", "hybrid"], ["--pipeline"]),
    (["--pipeline", "bm25"], ["--pipeline"]),
    (["--format", "tsv", "--field", "text=body"], ["--format and --field"]),
])
def test_search_index_refuses_corpus_and_pipeline_options(sleuth, tmp_path, bm25_index, options, named):
    """Before: `sleuth search --index` searched the index and exited 0, ignoring --corpus, --format, --field and
    --pipeline (even a pipeline file that does not exist)."""
    (tmp_path / "c.tsv").write_text("d1\tvitamin d and tuberculosis\nd2\tcats sleep\n")
    result = sleuth("search", "cats", "--index", bm25_index, "-k", "2", *[str(tmp_path / o) if o == "c.tsv" else o
                                                                         for o in options])
    one_line_error(result, "--index searches an index folder", *named, "not apply")
    assert result.stdout == ""


def test_search_index_takes_its_own_options(sleuth, bm25_index):
    result = sleuth("search", "cats", "--index", bm25_index, "-k", "2", "--json", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    assert [hit["id"] for hit in json.loads(result.stdout)["hits"]] == ["d2", "d3"]


@pytest.mark.parametrize("options, named", [
    (["--kind", "bm25", "--window-words", "3"], ["--window-words", "--splitter window", "--splitter none"]),
    (["--kind", "bm25", "--splitter", "sections", "--window-words", "100"], ["--window-words", "--splitter sections"]),
    (["--kind", "bm25", "--factory", "HNSW32"], ["--kind bm25 builds no dense index: --factory does not apply"]),
    (["--kind", "bm25", "--encoder", "minilm-onnx", "--factory", "Flat"], ["--encoder and --factory do not apply"]),
    (["--kind", "dense", "--k1", "5"], ["--kind dense builds no BM25 index: --k1 does not apply"]),
    (["--kind", "dense", "--method", "bm25l", "--stemmer", "none", "--b", "0.5"],
     ["--method, --b and --stemmer do not apply"]),
    (["--kind", "bm25", "--ray-workers", "5"], ["--ray-address", "--ray-workers does not apply"]),
    (["--kind", "bm25", "--shards", "2", "--actor-cpus", "1"], ["--ray-address", "--actor-cpus does not apply"]),
])
def test_index_refuses_options_of_what_it_does_not_build(sleuth, tmp_path, corpus, options, named):
    """Before: each of these built the index and exited 0, the contradictory option ignored (a window size without
    the window splitter, a dense encoder or FAISS factory for a BM25 index, BM25 parameters for a dense index, Ray
    options without Ray)."""
    out = tmp_path / "ix"
    one_line_error(sleuth("index", corpus, "--out", out, *options), *named)
    assert not out.exists()


def test_index_kind_all_takes_the_options_of_both_kinds(sleuth, tmp_path, corpus):
    out = tmp_path / "ix"
    result = sleuth("index", corpus, "--out", out, "--kind", "all", "--k1", "1.2", "--stemmer", "none",
                    "--encoder", "minilm", "--factory", "Flat", "--splitter", "window", "--window-words", "3")
    assert result.returncode == 0, result.stderr
    assert (out / "bm25" / "manifest.json").is_file() and (out / "dense" / "manifest.json").is_file()


def write_docs(path, texts: list[str]):
    path.write_text("".join(json.dumps({"_id": f"d{n}", "title": "", "text": text}) + "\n"
                            for n, text in enumerate(texts, start=1)))
    return path


def test_sections_says_which_documents_it_leaves_out(sleuth, tmp_path):
    """Before: two of these three documents (10 words or fewer) gave no passage, and `sleuth index` said only
    `bm25 index of 1 passages`, not that two documents were left out or why."""
    corpus = write_docs(tmp_path / "c.jsonl", ["cats sleep a lot", " ".join(["dogs"] * 30), "exactly ten words " * 3])
    result = sleuth("index", corpus, "--kind", "bm25", "--out", tmp_path / "ix", "--splitter", "sections")
    assert result.returncode == 0, result.stderr
    assert "index of 1 passages" in result.stderr
    assert ("note: 2 of 3 documents give no passage with --splitter sections (a lead or section of 10 words or fewer "
            "gives no passage) and are left out") in result.stderr
    assert "--splitter none" in result.stderr  # what keeps them


def test_sections_on_short_documents_only_says_why_nothing_is_indexed(sleuth, tmp_path):
    """Before: a corpus of short documents failed with `the corpus has no passages; nothing to index`, which said
    nothing of the splitter that dropped them all."""
    corpus = write_docs(tmp_path / "c.jsonl", ["cats sleep a lot", "dogs bark at cats"])
    out = tmp_path / "ix"
    one_line_error(sleuth("index", corpus, "--kind", "bm25", "--out", out, "--splitter", "sections"),
                   "c.jsonl", "none of the 2 documents gives a passage with --splitter sections (a lead or "
                   "section of 10 words or fewer gives no passage)")
    assert not out.exists()
