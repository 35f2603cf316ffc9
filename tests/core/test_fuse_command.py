"""`sleuth fuse RUN RUN --out FUSED`: run files fused as Pyserini's fusion does, with no queries, corpus or index; the
same ranking as a `fuse` of `run_file` branches through `sleuth retrieve`. Real BM25 runs of the bundled SciFact."""

from __future__ import annotations

import pytest

from sleuth.corpus.bundled import bundled_dataset_dir
from sleuth.stages.run import Hit, Run
from sleuth.stages.run_formats import read_run
from tests.cli_support import one_line_error, run_sleuth_here

QUERIES = 30


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """BM25's top 20 of 30 SciFact claims, and the same hits with their order reversed (scores made up); made once
    (read-only for the tests)."""
    folder = tmp_path_factory.mktemp("fuse-runs")
    bm25 = folder / "bm25.trec"
    assert run_sleuth_here("retrieve", bundled_dataset_dir(), "--max-queries", QUERIES, "-k", 20, "--out", bm25,
                           env={"SLEUTH_HOME": str(folder / "home")}).returncode == 0
    run = read_run(bm25)
    Run({qid: [Hit(h.id, float(rank)) for rank, h in enumerate(hits)] for qid, hits in run.items()}).sorted() \
        .write_trec(folder / "reversed.trec", tag="rev")
    return bm25, folder / "reversed.trec"


def test_fuse_writes_the_fusion_of_the_runs_as_retrieve_does_with_run_file_branches(sleuth, two_runs, tmp_path):
    bm25, reversed_run = two_runs
    result = sleuth("fuse", bm25, reversed_run, "--out", tmp_path / "fused.trec", "-k", 10)
    assert result.returncode == 0, result.stderr
    assert f"wrote {tmp_path / 'fused.trec'}: {QUERIES} queries, {QUERIES * 10} hits, rrf of 2 runs" in \
        " ".join(result.stderr.split())
    fused = read_run(tmp_path / "fused.trec")
    original = read_run(bm25)
    full = [qid for qid in original if len(original.ids(qid)) == 20]
    assert len(full) > QUERIES // 2 and list(fused) == list(original)  # queries in the files' order
    for qid in full:  # rank r in one run and 21 - r in the other: 1/(60+r) + 1/(81-r) is highest at both ends
        ids = original.ids(qid)
        assert set(fused.ids(qid)) == set(ids[:5] + ids[15:])
    config = tmp_path / "fused.yaml"
    config.write_text(f"name: fused\nstages:\n  - fuse:\n      branches:\n        - run_file: {{path: {bm25}}}\n"
                      f"        - run_file: {{path: {reversed_run}}}\n")
    assert sleuth("retrieve", bundled_dataset_dir(), "--max-queries", QUERIES, "--pipeline", config, "-k", 10,
                  "--out", tmp_path / "retrieved.trec").returncode == 0
    assert (tmp_path / "retrieved.trec").read_text() == (tmp_path / "fused.trec").read_text()

    weighted = sleuth("fuse", bm25, reversed_run, "--out", tmp_path / "w.jsonl", "--method", "weighted",
                      "--weight", 1, "--weight", 0, "--tag", "only bm25")  # JSON Lines holds a tag with a space
    assert weighted.returncode == 0, weighted.stderr
    only_bm25 = read_run(tmp_path / "w.jsonl")
    assert all(only_bm25.ids(qid) == original.ids(qid) for qid in original)  # weight 0: BM25's own order


@pytest.mark.parametrize("args, fragment", [
    (("RUN",), "fuse needs two or more run files, got 1"),
    (("RUN", "REV", "--weight", 1), "1 weights for 2 branches"),
    (("RUN", "REV", "--normalise", "zscore"), "normalise 'zscore' applies to method weighted"),
    (("RUN", "REV", "--method", "borda"), "unknown method 'borda'"),
    (("RUN", "missing.trec"), "missing.trec: file not found"),
    (("RUN", "missing.trec", "--weight", 1), "1 weights for 2 branches"),  # settled before any file is read
    (("RUN", "REV", "--tag", "two words"), "--tag 'two words'"),
])
def test_bad_fuse_input_is_one_line(sleuth, two_runs, tmp_path, args, fragment):
    bm25, reversed_run = two_runs
    named = {"RUN": bm25, "REV": reversed_run}
    one_line_error(sleuth("fuse", *[named.get(a, a) for a in args], "--out", tmp_path / "out.trec"), fragment)
    assert not (tmp_path / "out.trec").exists()


def test_fuse_refuses_to_write_over_a_run(sleuth, two_runs):
    bm25, reversed_run = two_runs
    before = bm25.read_text()
    one_line_error(sleuth("fuse", bm25, reversed_run, "--out", bm25), "refusing to write over the input")
    assert bm25.read_text() == before
