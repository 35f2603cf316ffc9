"""Bad input to `sleuth dhr shard|compare|tune|train` is one `error:` line and exit 2, checked before any work,
on a tiny real NQ slice (8 questions, 12 passages) and its hierarchical index (MiniLM) built as `dhr compare` builds
it (the corpus fingerprint in its manifest)."""

from __future__ import annotations

import json
import shutil

import pytest

from sleuth.models.registry import load_encoder
from sleuth.pipelines.workspace import CorpusSource
from sleuth.systems.dhr.index import HierarchicalIndex
from sleuth.systems.dhr.structure import documents_to_groups
from tests.cli_support import one_line_error


@pytest.fixture(scope="module")
def tiny(data_dir, tmp_path_factory):
    """corpus.jsonl (the 8 questions' gold passages and 4 others), questions.jsonl, index/ (hierarchical, of
    corpus.jsonl) and other.jsonl (the same corpus plus 4 further passages)."""
    folder = tmp_path_factory.mktemp("tiny")
    questions = [json.loads(line) for line in open(data_dir / "nq" / "questions.jsonl", encoding="utf-8")][:8]
    gold = {q["gold_passage"] for q in questions}
    rows = [json.loads(line) for line in open(data_dir / "nq" / "corpus.jsonl", encoding="utf-8")]
    others = [r for r in rows if r["_id"] not in gold]
    kept = [r for r in rows if r["_id"] in gold] + others[:4]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    (folder / "other.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept + others[4:8]), encoding="utf-8")
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    source = CorpusSource(folder / "corpus.jsonl")
    encoder = load_encoder("minilm")
    HierarchicalIndex.build(documents_to_groups(source.documents(), None), encoder, encoder, folder / "index",
                            corpus_info=source.info(), show_progress=False)
    return folder



def compare(sleuth, tiny, *args, corpus="corpus.jsonl"):
    return sleuth("dhr", "compare", "--corpus", tiny / corpus, "--questions", tiny / "questions.jsonl",
                  "--split", "all", "--k1", "5", "--top-k", "1", *args)


def test_dhr_shard_refuses_an_out_that_would_destroy_data(sleuth, tiny, tmp_path):
    """Before: `dhr shard` wrote OUT whatever it was, exit 0: `--out INDEX` replaced the unsharded input index by
    its sharded version (no longer usable for serial DHR), a user folder lost its files, a regular file was replaced
    by a folder, and `--out INDEX/sub` wrote a sharded index inside the input index."""
    index = tmp_path / "index"
    shutil.copytree(tiny / "index", index)
    manifest = (index / "manifest.json").read_text(encoding="utf-8")
    user = tmp_path / "userdir"
    user.mkdir()
    (user / "notes.txt").write_text("important\n", encoding="utf-8")
    afile = tmp_path / "afile"
    afile.write_text("x\n", encoding="utf-8")
    for out, fragment in ((index, "refusing to"), (user, "not a sleuth index"), (afile, "not a sleuth index"),
                          (index / "sub", "inside the input index"), (tiny / "index", "'hierarchical' index")):
        one_line_error(sleuth("dhr", "shard", index, "--shards", "2", "--out", out), str(out), fragment)
    assert (index / "manifest.json").read_text(encoding="utf-8") == manifest and not (index / "sub").exists()
    assert [p.name for p in user.iterdir()] == ["notes.txt"] and afile.read_text(encoding="utf-8") == "x\n"
    # a new folder, then the same sharded index again (an index of the right kind is replaced)
    for _ in range(2):
        result = sleuth("dhr", "shard", index, "--shards", "2", "--out", tmp_path / "sharded")
        assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "sharded" / "manifest.json").read_text())["kind"] == "sharded-hierarchical"


def test_dhr_compare_and_tune_refuse_an_index_of_another_corpus(sleuth, tiny):
    """Before: the manifest's corpus fingerprint was never compared with --corpus: with a superset corpus BM25 and
    flat dense searched it while the DHR rows searched the index's passages, and the table compared them (exit 0);
    `dhr tune` tuned lambda on an index of another corpus."""
    compared = compare(sleuth, tiny, "--index", tiny / "index", corpus="other.jsonl")
    one_line_error(compared, f"--index {tiny / 'index'}", "corpus.jsonl", "other.jsonl", "fingerprint")
    tuned = sleuth("dhr", "tune", "--corpus", tiny / "other.jsonl", "--questions", tiny / "questions.jsonl",
                   "--index", tiny / "index", "--split", "all", "--k1", "5", "--metric-k", "1")
    one_line_error(tuned, "corpus.jsonl", "other.jsonl", "fingerprint")


def test_dhr_compare_and_tune_refuse_build_options_with_an_index(sleuth, tiny):
    """Before: with --index the options that only build an index (encoders, factory, separator, grouping) and
    `tune --distractors` were silently ignored (exit 0, the table still said "document encoder minilm"; the
    distractor passages were never searched)."""
    compared = compare(sleuth, tiny, "--index", tiny / "index", "--document-encoder", "/nonexistent/enc",
                       "--separator", " | ")
    one_line_error(compared, "--document-encoder", "--separator", "--index")
    tuned = sleuth("dhr", "tune", "--corpus", tiny / "corpus.jsonl", "--questions", tiny / "questions.jsonl",
                   "--index", tiny / "index", "--split", "all", "--k1", "5", "--metric-k", "1",
                   "--distractors", tiny / "other.jsonl")
    one_line_error(tuned, "--distractors", "--index")


def test_dhr_compare_refuses_a_json_folder_before_the_run(sleuth, tiny, tmp_path):
    """Before: `--json FOLDER` failed only after the whole comparison, naming a temporary file
    (".FOLDER.xxxx.tmp: cannot write (Is a directory)"), and the results were lost."""
    folder = tmp_path / "jdir"
    folder.mkdir()
    result = compare(sleuth, tiny, "--index", tiny / "index", "--json", folder)
    line = one_line_error(result, f"--json {folder}", "folder")
    assert ".tmp" not in line and "Passage level" not in result.stdout


def test_dhr_train_refuses_mined_negatives_that_are_never_mined(sleuth, tiny, tmp_path):
    """Before: `--mined 5 --rounds 1` without --mine-from-base trained without mining (exit 0) and report.json
    recorded mined_negatives 5."""
    result = sleuth("dhr", "train", "--corpus", tiny / "corpus.jsonl", "--questions", tiny / "questions.jsonl",
                    "--out", tmp_path / "out", "--rounds", "1", "--steps", "1", "--batch-size", "2", "--no-index",
                    "--mined", "5")
    one_line_error(result, "--mined", "--rounds", "--mine-from-base")
    assert not (tmp_path / "out").exists()


def test_dhr_compare_refuses_a_trained_index_of_another_corpus(sleuth, tiny, tmp_path):
    """Before: `dhr train` wrote its round indexes with no corpus in the manifest, so `dhr compare --index
    <out>/round1/index` with another --corpus compared rows over different passages (exit 0)."""
    trained = sleuth("dhr", "train", "--corpus", tiny / "corpus.jsonl", "--questions", tiny / "questions.jsonl",
                     "--out", tmp_path / "out", "--rounds", "1", "--steps", "1", "--batch-size", "2",
                     "--shared-encoder")
    assert trained.returncode == 0, trained.stderr
    index = tmp_path / "out" / "round1" / "index"
    one_line_error(compare(sleuth, tiny, "--index", index, corpus="other.jsonl"), "other.jsonl", "fingerprint")


def test_dhr_compare_takes_an_index_of_a_copied_corpus(sleuth, tiny, tmp_path):
    """Before: the corpus fingerprint reads the file's path, size and time, so a copy of the same corpus (another
    folder, machine or checkout) was refused as 'another corpus'; now the passages themselves are compared."""
    shutil.copy(tiny / "corpus.jsonl", tiny / "copy.jsonl")
    result = compare(sleuth, tiny, "--index", tiny / "index", "--json", tmp_path / "rows.json", corpus="copy.jsonl")
    assert result.returncode == 0, result.stderr
    rows = {r["name"] for r in json.loads((tmp_path / "rows.json").read_text(encoding="utf-8"))["rows"]}
    assert any(name.startswith("DHR") for name in rows), rows


def test_a_hierarchical_index_is_searched_through_dhr_without_the_bundled_corpus(sleuth, tiny):
    """Before: `sleuth search --index HIER` said "is a 'hierarchical' index, not a 'dense' index", and `--pipeline
    dhr --set dhr.index=HIER` noted that it searched the bundled SciFact (it searched the index)."""
    index = tiny / "index"
    one_line_error(sleuth("search", "who", "--index", index),
                   f"is a 'hierarchical' index: --index reads bm25 and dense folders (sharded or not); search it "
                   f"with the pipeline of the system that built it and its index key (a hierarchical index: "
                   f"--pipeline dhr --set dhr.index={index})")
    done = sleuth("search", "who", "--pipeline", "dhr", "--set", f"dhr.index={index}", "-k", "2", "--json")
    assert done.returncode == 0, done.stderr
    assert "bundled" not in done.stderr and len(json.loads(done.stdout)["hits"]) == 2


@pytest.mark.parametrize("command", [["compare", "--split", "all"], ["tune", "--split", "all"], ["train", "--out", "unused-dhr-run"]])
def test_dhr_commands_take_the_corpus_field_mapping(sleuth, tmp_path, command):
    """Before: a JSONL corpus with its text under another key was refused with "name the text key with --field
    text=KEY", and `--field` was "No such option" for dhr compare, tune and train; it now reaches the reader (here
    a wrong key, named before any encoder loads)."""
    corpus, questions = tmp_path / "corpus.jsonl", tmp_path / "questions.jsonl"
    corpus.write_text(json.dumps({"id": "p1", "title": "Goldfish", "body": "Goldfish grow all their lives."}) + "\n",
                      encoding="utf-8")
    questions.write_text(json.dumps({"id": "q1", "question": "do goldfish grow", "answers": ["lives"]}) + "\n",
                         encoding="utf-8")
    one_line_error(sleuth("dhr", *command[:1], "--corpus", corpus, "--field", "text=bdy", "--questions", questions,
                          *command[1:]), "field 'bdy': missing (the record's keys: body, id, title)")
