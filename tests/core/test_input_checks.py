"""Bad input is refused in one line (exit 2 from the CLI) and before any work: config values checked from the
stage builders' annotations, the whole config before any index is built, device names, stopword languages, token
patterns, FAISS factories, empty ids and texts, a port in use; and a failed run leaves no empty cache folders."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError, IndexError_, InputError
from sleuth.index.bm25 import BM25Index
from sleuth.index.tokenize import Analyzer
from sleuth.pipelines.config import load_pipeline, validate_pipeline
from sleuth.pipelines.sources import corpus_source
from sleuth.pipelines.workspace import Workspace
from tests.cli_support import one_line_error

BAD_VALUES = [
    ("- bm25: {k: 'ten'}", "key 'k': must be an integer, got 'ten'"),
    ("- bm25: {k: -5}", "key 'k': must be at least 1, got -5"),
    ("- bm25: {k: 2.5}", "key 'k': must be an integer, got 2.5"),
    ("- bm25: {k: true}", "key 'k': must be an integer, got True"),
    ("- bm25: {k1: fast}", "key 'k1': must be a number"),
    ("- bm25: {stopwords: xx}", "unknown stopword language 'xx'"),
    ("- bm25: {method: okapi}", "key 'method': must be one of lucene"),
    ("- dense: {k: -3, encoder: minilm-onnx}", "stage 'dense': key 'k': must be at least 1, got -3"),
    ("- dense: {factory: NOPE99}", "key 'factory': not a FAISS factory string"),
    ("- dense: {nprobe: 0}", "key 'nprobe': must be at least 1"),
    ("- fuse: {rrf_k: -60, branches: [bm25, dense]}", "key 'rrf_k': must be at least 1, got -60"),
    ("- fuse: {weights: [1], branches: [bm25, dense]}", "1 weights for 2 branches"),
    ("- fuse: {weights: [1, -0.5], branches: [bm25, dense]}", "weights must be finite numbers >= 0"),
    ("- fuse: {weights: [1, .nan], branches: [bm25, dense]}", "key 'weights': must be a list of numbers"),
    ("- dhr: {lam: .inf}", "key 'lam': must be a number, got inf"),
    ("- fuse: {weights: [0, 0], branches: [bm25, dense]}", "not all 0"),
    ("- fuse: {method: mean, branches: [bm25, dense]}", "key 'method': must be one of rrf, weighted"),
    ("- fuse: {branches: [bm25, {dense: {factory: NOPE99}}]}", "branch 2, stage 1: stage 'dense': key 'factory'"),
    ("- bm25\n- cutoff: {k: 0}", "stage 2: stage 'cutoff': key 'k': must be at least 1"),
    ("- dhr: {combine: nonsense}", "key 'combine': must be one of add, gate"),
    ("- private: {engine: 'http://x', epsilon: 1.0e-300}", "key 'epsilon': must be at least 0.001"),
    ("- private: {engine: 'http://x', seed: -1}", "key 'seed': must be at least 0, got -1"),
]


def write_config(tmp_path, stages: str):
    path = tmp_path / "pipeline.yaml"
    path.write_text("stages:\n" + "\n".join("  " + line for line in stages.splitlines()) + "\n")
    return path


@pytest.mark.parametrize(("stages", "message"), BAD_VALUES)
def test_config_values_are_checked_against_the_builders_annotations(tmp_path, stages, message):
    with pytest.raises(ConfigError) as caught:
        validate_pipeline(write_config(tmp_path, stages))
    assert message in str(caught.value) and "pipeline.yaml" in str(caught.value)


def test_good_values_pass_and_every_builtin_pipeline_is_valid(tmp_path):
    from sleuth.pipelines.config import builtin_pipelines

    for name in builtin_pipelines():
        validate_pipeline(name)
    validate_pipeline(write_config(tmp_path, "- fuse: {weights: [1, 0.5], rrf_k: 10, branches: [bm25, dense]}\n"
                                             "- dense: {factory: 'IVF1024,PQ48', nprobe: 8, k: 5}\n"
                                             "- bm25: {stopwords: [the, a], k1: 1, stemmer: null}"))


def test_a_bad_later_stage_is_reported_before_any_index_is_built(tmp_path, scifact_jsonl):
    """A wrong factory in the second branch fails before the first branch's BM25 index is built (on SciFact this
    was reported after the indexes were built, past 10 minutes)."""
    home = tmp_path / "home"
    workspace = Workspace(corpus=corpus_source(scifact_jsonl), home=home)
    config = write_config(tmp_path, "- fuse: {branches: [bm25, {dense: {factory: NOPE99}}]}")
    with pytest.raises(ConfigError, match="key 'factory'"):
        load_pipeline(config, workspace)
    assert not home.exists()


def test_cli_reports_a_config_value_in_one_line(sleuth, tmp_path, scifact_jsonl):
    config = write_config(tmp_path, "- bm25: {k: 'ten'}")
    one_line_error(sleuth("search", "vitamin d", "--corpus", scifact_jsonl, "--pipeline", config),
                   "key 'k': must be an integer, got 'ten'")


@pytest.mark.parametrize("args, message", [
    (("--kind", "bm25", "--stopwords", "xx"), "unknown stopword language 'xx'"),
    (("--kind", "bm25", "--token-pattern", ""), "matches the empty string"),
    (("--kind", "bm25", "--token-pattern", "x*"), "matches the empty string"),
    (("--kind", "dense", "--encoder", "minilm-onnx", "--factory", "IVF4096,Flat"), "needs at least 4,096 passages"),
    (("--kind", "dense", "--encoder", "minilm-onnx", "--factory", "NOPE99"), "could not parse index string"),
    (("--kind", "dense", "--encoder", "minilm-onnx", "--device", "bogus"), "unknown device 'bogus'"),
    # Ray's own ValueError tracebacks before (num_cpus cannot be negative; cannot convert float NaN to integer)
    (("--kind", "dense", "--shards", "2", "--ray-address", "local", "--actor-cpus", "-1"),
     "--actor-cpus must be a positive number, got -1.0"),
    (("--kind", "dense", "--shards", "2", "--ray-address", "local", "--actor-cpus", "nan"),
     "--actor-cpus must be a positive number, got nan"),
])
def test_index_options_are_refused_in_one_line(sleuth, tmp_path, scifact_jsonl, args, message):
    out = tmp_path / "out" / "ix"
    one_line_error(sleuth("index", scifact_jsonl, "--out", out, *args), message)
    assert not (tmp_path / "out").exists()  # nor an empty parent folder left behind


@pytest.mark.parametrize("args, message", [
    # before: both read "<site-packages>/sleuth/pipelines/builtin/bm25.yaml, stage 1 'bm25': ..."
    (("--format", "nope"), "error: unknown corpus format 'nope'"),
    (("--format", "tsv", "--field", "text=x"), "error: a field mapping applies to the jsonl format only"),
    # before: the second silently won; and an empty key was looked up as the field ''
    (("--field", "text=title", "--field", "text=body"), "--field text given twice ('title', 'body')"),
    (("--field", "text="), "--field expects NAME=KEY (e.g. text=body), got 'text='"),
])
@pytest.mark.parametrize("command", ["search", "index"])
def test_corpus_options_are_refused_as_options_not_as_a_pipeline_file(sleuth, tmp_path, scifact_jsonl, command, args,
                                                                      message):
    where = ("--corpus", scifact_jsonl, "cancer") if command == "search" else (scifact_jsonl, "--out", tmp_path / "ix")
    done = sleuth(command, *where, *args)
    one_line_error(done, message)
    assert "yaml" not in done.stderr and not (tmp_path / "ix").exists()


def test_device_names_are_checked_in_one_place():
    from sleuth.models.device import check_device

    assert check_device("cpu") == "cpu"
    for bad in ("bogus", "cuda:x", "CPU", "", "cpu:0:1"):
        with pytest.raises(ConfigError, match="unknown device"):
            check_device(bad)
    with pytest.raises(ConfigError, match="unknown device"):
        Workspace(device="gpu")


def test_a_corpus_with_an_empty_id_or_only_empty_texts_is_refused(sleuth, tmp_path):
    empty_id = tmp_path / "empty-id.jsonl"
    empty_id.write_text(json.dumps({"_id": "", "text": "vitamin d and bone health"}) + "\n"
                        + json.dumps({"_id": "b", "text": "other words"}) + "\n")
    one_line_error(sleuth("index", empty_id, "--kind", "bm25", "--out", tmp_path / "a"),
                   "empty-id.jsonl:1", "'_id'", "empty id")
    with pytest.raises(InputError, match="empty id"):
        BM25Index.build([Passage(" ", " ", "text")])
    empty_texts = tmp_path / "empty-texts.jsonl"
    empty_texts.write_text("".join(json.dumps({"_id": str(i), "title": "", "text": " " * i}) + "\n"
                                   for i in range(3)))
    one_line_error(sleuth("index", empty_texts, "--kind", "dense", "--encoder", "minilm-onnx",
                          "--out", tmp_path / "b"), "all 3 passages of the corpus are empty")


def test_a_manifest_with_an_unknown_stopword_language_names_the_index(tmp_path, scifact_passages):
    built = BM25Index.build(scifact_passages[:20], analyzer=Analyzer(stopwords=None), show_progress=False)
    assert built.manifest is not None
    built.manifest.params["analyzer"]["stopwords"] = "xx"  # as a hand-edited or foreign manifest says
    (tmp_path / "ix").mkdir()
    built.save(tmp_path / "ix")
    with pytest.raises(IndexError_, match=r"ix.*manifest.json: analyzer: .*unknown stopword language 'xx'"):
        BM25Index.load(tmp_path / "ix")


def test_a_port_in_use_is_named_before_serving(sleuth, scifact_jsonl):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = sleuth("serve", "--corpus", scifact_jsonl, "--host", "127.0.0.1", "--port", port, timeout=60)
    one_line_error(result, f"port {port} on 127.0.0.1 is in use")
    assert "serving" not in result.stdout + result.stderr


def test_failed_builds_leave_no_empty_cache_folders(tmp_path, scifact_rows):
    home = tmp_path / "home"
    unknown = tmp_path / "corpus.dat"
    unknown.write_bytes(b"neither json nor trec\x00\x01")
    with pytest.raises(InputError, match="cannot tell the corpus format"):
        Workspace(corpus=corpus_source(unknown), home=home).bm25()
    stopwords_only = tmp_path / "stopwords.jsonl"
    stopwords_only.write_text(json.dumps({"_id": "1", "text": "the of and"}) + "\n")
    with pytest.raises(InputError, match="no indexable words"):
        Workspace(corpus=corpus_source(stopwords_only), home=home).bm25()
    assert not home.exists() or not any(home.rglob("*")), sorted(home.rglob("*"))
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows[:20]))
    Workspace(corpus=corpus_source(good), home=home).bm25()  # a build that succeeds keeps its folders
    assert len(list(home.glob("indexes/*/bm25-*/manifest.json"))) == 1


def test_a_squad_file_where_questions_are_read_gives_its_answerable_questions(data_dir, tmp_path):
    """Question files (`dhr compare/tune --questions`, `sleuth.read_queries`) take a SQuAD file: its answerable
    questions with their answers and gold paragraph (before session 32: refused, "a SQuAD JSON file, where
    questions JSONL ... is read"; before that, "field 'id': missing" at line 1). JSON Lines named .json still read."""
    from sleuth.corpus.questions import read_questions

    squad = data_dir / "squad2" / "dev-v2.0.json"
    raw = json.loads(squad.read_text(encoding="utf-8"))
    answerable = [qa for article in raw["data"] for paragraph in article["paragraphs"] for qa in paragraph["qas"]
                  if qa["answers"]]
    questions = list(read_questions(squad))
    assert [q.id for q in questions] == [qa["id"] for qa in answerable] and len(questions) > 2000
    assert all(q.metadata["answers"] and "#" in q.metadata["gold_passage"] for q in questions)
    named_json = tmp_path / "questions.json"
    named_json.write_text('{"id": "1", "question": "a?", "answers": ["x"]}\n{"id": "2", "question": "b?", '
                          '"answers": ["y"]}\n', encoding="utf-8")
    assert [q.id for q in read_questions(named_json)] == ["1", "2"]


def test_ray_build_options_are_checked_where_they_are_made():
    from sleuth.scale.ray_build import RayOptions

    for options, message in (({"workers": 0}, "workers must be at least 1"),
                             ({"actor_cpus": float("nan")}, "actor_cpus must be a positive number")):
        with pytest.raises(ConfigError, match=message):
            RayOptions(**options)


def test_a_malformed_ray_address_is_one_line(sleuth, data_dir):
    """`sleuth eval --ray-address nonsense` ended in Ray's ValueError traceback."""
    result = sleuth("eval", data_dir / "scifact", "--max-queries", 3, "--ray-address", "nonsense")
    one_line_error(result, "Ray address 'nonsense': Invalid address format", "use local, auto or HOST:PORT")


def test_a_ray_address_nothing_answers_at_fails_fast():
    """`sleuth index --ray-address 127.0.0.1:1` (or an unknown host) waited on Ray's retries for over five minutes."""
    pytest.importorskip("ray")
    from sleuth.scale.session import ray_session

    with pytest.raises(ConfigError, match=r"^Ray address '127.0.0.1:1': nothing answers there \(.*refused"):
        with ray_session("127.0.0.1:1"):
            pass
    with pytest.raises(ConfigError, match=r"^Ray address 'ray://nowhere.invalid:10001': nothing answers there"):
        with ray_session("ray://nowhere.invalid:10001"):
            pass


@pytest.mark.parametrize("answer", [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", None])
def test_a_ray_address_where_something_else_answers_fails_fast(answer):
    """`--ray-address HOST:PORT` of a web server (or a listener that never speaks) waited for ever, Ray printing
    "Failed to get cluster ID from GCS server" every 30 s."""
    pytest.importorskip("ray")
    from sleuth.scale.session import ray_session

    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(10)
        address = f"127.0.0.1:{server.getsockname()[1]}"

        def serve() -> None:
            connection, _ = server.accept()
            with connection:
                connection.recv(64)
                if answer is not None:
                    connection.sendall(answer)
                else:
                    threading.Event().wait(2)  # says nothing, then hangs up

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        with pytest.raises(ConfigError, match=rf"^Ray address '{address}': something answers there, but not Ray"):
            with ray_session(address):
                pass
        thread.join(5)


def test_eval_refuses_a_measure_the_task_cannot_give(sleuth, data_dir, tmp_path):
    """`sleuth eval SCIFACT --top-k 5` printed the nDCG/R table without a word about --top-k, and `--questions ...
    --metric nDCG@10` printed answer accuracy without the measure asked for (questions naming no gold passage)."""
    result = sleuth("eval", data_dir / "scifact", "--top-k", 5)
    one_line_error(result, "--top-k is answer accuracy: it needs --questions")
    lines = (data_dir / "nq" / "questions.jsonl").read_text(encoding="utf-8").splitlines()[:20]
    questions = tmp_path / "no-gold.jsonl"
    questions.write_text("".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "gold_passage"}) + "\n"
                                 for line in lines), encoding="utf-8")
    result = sleuth("eval", "--corpus", data_dir / "nq" / "corpus.jsonl", "--questions", questions,
                    "--metric", "nDCG@10")
    one_line_error(result, "--metric needs relevance judgements (qrels)", "use --top-k")


def test_questions_naming_their_gold_passage_are_judged_by_it(sleuth, data_dir):
    """NQ's questions.jsonl names each question's gold passage, as a SQuAD file does; `sleuth eval --questions` used
    only the answers (and refused --metric), so a passage retriever's recall could not be read beside Top-k."""
    result = sleuth("eval", "--corpus", data_dir / "nq" / "corpus.jsonl", "--questions",
                    data_dir / "nq" / "questions.jsonl", "--max-queries", 30, "--pipeline", "bm25",
                    "--metric", "R@1", "--metric", "R@100", "--top-k", 1, "--json")
    assert result.returncode == 0, result.stderr
    row = json.loads(result.stdout)["pipelines"][0]["measures"]
    assert 0 < row["R@1"] <= row["R@100"] <= 1 and row["R@1"] <= row["Top-1"]  # the gold passage holds an answer


def test_a_truncated_or_damaged_compressed_corpus_is_one_error_line(sleuth, tmp_path, scifact_jsonl):
    """Before: gzip's EOFError became click's Abort: exit 1 with an empty line and nothing said."""
    import bz2
    import gzip

    data = scifact_jsonl.read_bytes()
    (tmp_path / "cut.jsonl.gz").write_bytes(gzip.compress(data)[:2000])
    (tmp_path / "cut.jsonl.bz2").write_bytes(bz2.compress(data)[:2000])
    (tmp_path / "noise.jsonl.gz").write_bytes(bytes(range(200)))
    for name in ("cut.jsonl.gz", "cut.jsonl.bz2", "noise.jsonl.gz"):
        result = sleuth("index", tmp_path / name, "--kind", "bm25", "--out", tmp_path / "ix")
        one_line_error(result, name, "the compressed file is truncated or damaged")
    assert not (tmp_path / "ix").exists()


def test_a_lone_surrogate_escape_in_a_corpus_is_refused_where_it_is_read(sleuth, tmp_path):
    """Before: valid JSON, not Unicode text: a traceback when the document store was saved, after the whole build
    (and `search --corpus` named the pipeline's YAML file). An escaped emoji (a surrogate pair) is text."""
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"_id": "a", "text": "cats \\ud83d\\ude00"}\n{"_id": "b", "text": "caf\\udce9 cats"}\n')
    one_line_error(sleuth("index", corpus, "--kind", "bm25", "--out", tmp_path / "ix"),
                   "c.jsonl:2: field 'text': holds a lone surrogate escape")
    one_line_error(sleuth("search", "cats", "--corpus", corpus), "c.jsonl:2: field 'text'")
    corpus.write_text('{"_id": "a", "text": "cats \\ud83d\\ude00"}\n')
    assert sleuth("index", corpus, "--kind", "bm25", "--out", tmp_path / "ix").returncode == 0


def test_a_query_argument_that_is_not_utf8_is_refused(sleuth, tmp_path, scifact_jsonl):
    """Before: bytes that are not UTF-8 (kept by Python as lone surrogates) searched for nothing, exit 0, and the
    JSON output held a lone surrogate."""
    import os
    import subprocess
    import sys

    sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", tmp_path / "ix")
    result = subprocess.run([sys.executable, "-m", "sleuth", "search", os.fsencode("caf\udce9"), "--index",
                             tmp_path / "ix", "--json"], capture_output=True, text=True)
    one_line_error(result, "the query is not valid text: character 4 is a lone surrogate")


def test_update_names_the_id_keys_it_reads_and_a_folder_given_as_a_file(sleuth, tmp_path, scifact_jsonl):
    """Before: a record keyed docid was "field 'id': must be a non-empty string" (a field it does not have), and a
    folder given to --add was "file not found"."""
    sleuth("index", scifact_jsonl, "--kind", "bm25", "--out", tmp_path / "ix")
    new = tmp_path / "new.jsonl"
    new.write_text('{"docid": "n3", "text": "new cats"}\n')
    one_line_error(sleuth("update", tmp_path / "ix", "--add", new),
                   "new.jsonl:1: field 'id': missing: each record needs 'id' or '_id' (its keys: docid, text")
    one_line_error(sleuth("update", tmp_path / "ix", "--add", tmp_path), "is a folder; give a file")


def test_a_whole_document_is_a_query_a_longer_text_is_not(sleuth, tmp_path, scifact_rows):
    """Before: a batch query over 4,096 characters (query by document: 15 of SciFact's abstracts are longer) refused
    the whole `retrieve`; the limit is now 100,000 characters, and above it still one line."""
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:50]), encoding="utf-8")
    long_query = " ".join(" ".join(row["text"].split()) for row in scifact_rows[3:8])
    assert 4096 < len(long_query) < 100_000
    topics = tmp_path / "topics.tsv"
    topics.write_text(f"q1\t{long_query}\nq2\tcells\n", encoding="utf-8")
    done = sleuth("retrieve", topics, "--corpus", corpus, "--out", tmp_path / "run.trec", "-k", "3")
    assert done.returncode == 0, done.stderr
    assert {line.split()[0] for line in (tmp_path / "run.trec").read_text().splitlines()} == {"q1", "q2"}
    topics.write_text(f"q1\t{'word ' * 20_001}\n", encoding="utf-8")
    one_line_error(sleuth("retrieve", topics, "--corpus", corpus, "--out", tmp_path / "long.trec"),
                   "query 'q1' has 100,004 characters; the limit is 100,000")  # its last space stripped
