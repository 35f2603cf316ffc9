"""`sleuth index --out`: what may be replaced (a sleuth index), what is refused (anything else, the corpus, the
current folder, an index with `sleuth update` changes), and leftovers of killed builds removed by the next build."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

from sleuth.corpus.model import Passage
from sleuth.index.bm25 import BM25Index
from tests.cli_support import one_line_error


def test_out_refuses_a_users_folder_unless_forced(sleuth, tmp_path, scifact_jsonl):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("precious")
    one_line_error(sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", folder),
                   "is not a sleuth index", "--force")
    assert (folder / "notes.txt").read_text() == "precious"
    assert sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", folder, "--force").returncode == 0
    assert (folder / "manifest.json").is_file() and not (folder / "notes.txt").exists()


def test_out_refuses_the_corpus_file_and_the_current_folder(sleuth, tmp_path, scifact_jsonl):
    before = scifact_jsonl.read_bytes()
    for force in ((), ("--force",)):
        one_line_error(sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", scifact_jsonl, *force),
                       "refusing to build an index over")
    assert scifact_jsonl.read_bytes() == before
    result = subprocess.run([sys.executable, "-m", "sleuth", "index", str(scifact_jsonl), "--kind", "bm25",
                             "--out", "."], cwd=tmp_path, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    one_line_error(result, "the current folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.jsonl"]  # no ..tmp-* left


def test_rebuild_replaces_an_index_but_not_its_updates(sleuth, tmp_path, scifact_jsonl):
    out = tmp_path / "ix"
    assert sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out).returncode == 0
    assert sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out).returncode == 0  # an index: replaced
    added = tmp_path / "add.jsonl"
    added.write_text(json.dumps({"id": "new-1", "text": "a passage added later"}) + "\n")
    assert sleuth("update", out, "--add", added).returncode == 0
    one_line_error(sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out),
                   "sleuth update", "401 passages", "--force")
    assert BM25Index.load(out).manifest.count == 401
    assert sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out, "--force").returncode == 0
    assert BM25Index.load(out).manifest.count == 400


def test_next_build_removes_leftovers_of_killed_builds_only(tmp_path, scifact_rows, killed_build):
    """A build killed with -9 leaves .ix.tmp-HOST-PID-*; the next build removes it, but not a live build's folder,
    another host's, or a name sleuth does not write."""
    target = tmp_path / "ix"
    rows = [Passage(r["_id"], r["_id"], r["text"], (r["title"],)) for r in scifact_rows[:50]]
    pid = killed_build(target)
    killed = [p for p in tmp_path.iterdir() if p.name.startswith(".ix.tmp-")]
    assert len(killed) == 1 and f"-{pid}-" in killed[0].name
    kept = [tmp_path / f".ix.tmp-{socket.gethostname()}-{os.getpid()}-0123abcd",  # a live process
            tmp_path / f".ix.tmp-elsewhere-{pid}-0123abcd", tmp_path / ".ix.tmp-0123abcd", tmp_path / "other"]
    for path in kept:
        path.mkdir()
    BM25Index.build(rows, target, show_progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["ix", *(p.name for p in kept)])


def test_out_refuses_home_root_and_system_folders_even_forced(sleuth, tmp_path, scifact_jsonl):
    """`--out ~ --force` deleted the home folder: home (here a stand-in through $HOME), a folder above it, '/',
    system folders and an unexpanded '~' are refused with --force too (checked without building over them)."""
    import pytest

    from sleuth.errors import IndexError_
    from sleuth.index.manifest import check_build_target

    home = tmp_path / "home" / "me"
    (home / "work").mkdir(parents=True)
    (home / "notes.txt").write_text("precious")
    for out in (home, home.parent):
        one_line_error(sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", out, "--force",
                              env={"HOME": str(home)}), "system or home folder")
    assert (home / "notes.txt").read_text() == "precious"
    for folder in ("/", "/usr", "/etc", "/var/lib", "/tmp", "~", "~/indexes"):
        with pytest.raises(IndexError_, match="system or home folder|'~' is not expanded"):
            check_build_target(folder, force=True)


def test_out_below_a_file_says_the_parent_is_a_file(sleuth, scifact_jsonl):
    below_a_file = scifact_jsonl.parent / "corpus.jsonl" / "sub"
    one_line_error(sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", below_a_file),
                   "corpus.jsonl is a file, not a folder")


def test_index_mixes_in_distractors_as_eval_and_retrieve_do(sleuth, tmp_path, data_dir):
    """`sleuth index` had no --distractors, so the index `sleuth eval --corpus MINE --distractors BACKGROUND` searches
    could not be built ahead (into the cache eval reuses, or into a folder for --index)."""
    corpus, background = data_dir / "scifact" / "corpus.jsonl", tmp_path / "background.jsonl"
    background.write_text(json.dumps({"_id": "bg1", "title": "Zorblax", "text": "zorblax pastry festival"}) + "\n"
                          + json.dumps({"_id": "bg2", "title": "Other", "text": "a second background document"}) + "\n")
    built = sleuth("index", corpus, "--distractors", background, "--kind", "bm25")
    assert built.returncode == 0, built.stderr
    assert "5,185 passages" in built.stdout + built.stderr  # SciFact's 5,183 and the two
    evaluated = sleuth("eval", "--corpus", corpus, "--distractors", background, "--queries",
                       data_dir / "scifact" / "queries.jsonl", "--qrels", data_dir / "scifact" / "qrels" / "train.tsv",
                       "--pipeline", "bm25", "--max-queries", 5)
    assert evaluated.returncode == 0, evaluated.stderr
    assert "no index built by this run" in evaluated.stdout + evaluated.stderr  # the one built above
    folder = tmp_path / "mixed"
    assert sleuth("index", corpus, "--distractors", background, "--kind", "bm25", "--out", folder).returncode == 0
    found = sleuth("search", "zorblax pastry", "--index", folder, "-k", 1, "--json")
    assert json.loads(found.stdout)["hits"][0]["id"] == "bg1"
    one_line_error(sleuth("index", corpus, "--distractors", tmp_path / "missing.jsonl", "--kind", "bm25"),
                   "distractor corpus not found")

