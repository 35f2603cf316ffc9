"""Bad start-up options of `sleuth serve` and bad input to `sleuth update`: each is one line `error: ...` with exit
code 2 before anything is served or written, never a server that serves the wrong thing, or an update that is never
seen, without a word."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Index
from sleuth.index.manifest import current_generation
from sleuth.service.admin import ENV_VAR, read_api_key
from sleuth.service.served import check_index_names
from tests.cli_support import one_line_error

#: seconds a refused start may take; a server that starts instead runs until this and fails the test
START_SECONDS = 90


def refused(sleuth, *args) -> subprocess.CompletedProcess:
    """`sleuth serve ARGS --port 0`, which must stop before serving."""
    try:
        return sleuth("serve", *args, "--port", "0", timeout=START_SECONDS)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"sleuth serve {' '.join(map(str, args))} served instead of refusing: {exc.stderr!r}")


@pytest.fixture
def corpus(tmp_path, scifact_rows):
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in scifact_rows[:20]), encoding="utf-8")
    return path


def test_two_pipelines_of_one_name_are_refused(sleuth, tmp_path, corpus):
    """Before: the YAML pipeline named 'bm25' replaced the built-in bm25 unsaid, and the start-up line read
    "ready: ; building in the background: bm25"."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: bm25\ndescription: my own\nstages:\n  - bm25: {k: 10}\n", encoding="utf-8")
    one_line_error(refused(sleuth, "--pipeline", "bm25", "--pipeline", mine, "--corpus", corpus),
                   f"--pipeline bm25 and --pipeline {mine} are both named 'bm25'")


def test_corpus_options_with_an_index_are_refused(sleuth, tmp_path, scifact_passages, corpus):
    """Before: `--index X --corpus Y` served X and ignored Y (even a missing file) without a word."""
    index = tmp_path / "scifact"
    BM25Index.build(scifact_passages[:20], index, show_progress=False)
    one_line_error(refused(sleuth, "--index", index, "--corpus", tmp_path / "missing.jsonl"),
                   "--corpus goes with --pipeline")
    one_line_error(refused(sleuth, "--index", index, "--field", "id=_id"), "--field goes with --pipeline")


def test_an_index_given_as_dot_is_served_by_its_folder_name(tmp_path, scifact_passages, monkeypatch):
    """Before: `--index .` was served under the name '' (and `--index ix/..` as '..')."""
    index = tmp_path / "scifact"
    BM25Index.build(scifact_passages[:20], index, show_progress=False)
    monkeypatch.chdir(index)
    assert check_index_names([index / ".." / "scifact"]) == {"scifact": index / ".." / "scifact"}
    assert check_index_names([Path(".")]) == {"scifact": Path(".")}
    with pytest.raises(ConfigError, match="both named 'scifact'"):
        check_index_names([Path("."), index])


@pytest.mark.parametrize("value", ["env-key-7\n", "  env-key-7\r\n"])
def test_the_api_key_from_the_environment_loses_surrounding_whitespace(monkeypatch, value):
    """Before: a key read from a secret file into $SLEUTH_API_KEY kept its newline, so admin was enabled and no
    request could give the key (a header value cannot end in one)."""
    monkeypatch.setenv(ENV_VAR, value)
    assert read_api_key(None) == "env-key-7"
    monkeypatch.setenv(ENV_VAR, " \n")
    assert read_api_key(None) is None
    monkeypatch.setenv(ENV_VAR, "one\ntwo")
    with pytest.raises(ConfigError, match="one line"):
        read_api_key(None)


def test_updating_a_generation_folder_is_refused(sleuth, tmp_path, scifact_passages):
    """Before: `sleuth update INDEX/generations/gen-000001 --delete ID` said "deleted 1" and wrote a nested index
    inside that generation: never served, and deleted with the generation by a later update."""
    index = tmp_path / "ix"
    BM25Index.build(scifact_passages[:20], index, show_progress=False)
    (tmp_path / "new.jsonl").write_text('{"_id": "n1", "text": "a new passage"}\n', encoding="utf-8")
    assert sleuth("update", index, "--add", tmp_path / "new.jsonl").returncode == 0
    generation = current_generation(index)
    assert generation.parent.name == "generations"
    one_line_error(sleuth("update", generation, "--delete", scifact_passages[0].id),
                   f"{generation} is a generation of the index {index}: update that folder")
    assert not (generation / "generations").exists() and not (generation / "CURRENT").exists()
    assert len(BM25Index.load(index)) == 21


def test_a_fractional_id_to_add_is_named_as_such(sleuth, tmp_path, scifact_passages):
    """Before: "field 'id': must be a non-empty string", though a whole-number id is taken."""
    index = tmp_path / "ix"
    BM25Index.build(scifact_passages[:20], index, show_progress=False)
    (tmp_path / "new.jsonl").write_text('{"_id": 7, "text": "fine"}\n{"_id": 1.5, "text": "x"}\n', encoding="utf-8")
    one_line_error(sleuth("update", index, "--add", tmp_path / "new.jsonl"),
                   "new.jsonl:2: field 'id': 1.5 is a JSON number with a fraction or exponent")
    assert len(BM25Index.load(index)) == 20


def test_ids_with_commas_or_surrounding_spaces_are_deleted_from_a_file(sleuth, tmp_path, scifact_passages):
    """Before: --delete split at commas and dropped spaces, so such an id, though indexed, could not be deleted."""
    index = tmp_path / "ix"
    BM25Index.build(scifact_passages[:20], index, show_progress=False)
    odd = [" padded ", "a,b"]
    (tmp_path / "new.jsonl").write_text("".join(json.dumps({"_id": i, "text": "an odd id"}) + "\n" for i in odd),
                                        encoding="utf-8")
    assert sleuth("update", index, "--add", tmp_path / "new.jsonl").returncode == 0
    one_line_error(sleuth("update", index, "--delete", " padded "), "unknown passage id 'padded'")
    (tmp_path / "gone.txt").write_text(" padded \n\na,b\n", encoding="utf-8")
    result = sleuth("update", index, "--delete-file", tmp_path / "gone.txt")
    assert result.returncode == 0 and "deleted 2, now 20 passages" in result.stderr, result.stderr
    assert set(BM25Index.load(index).docstore.ids) == {p.id for p in scifact_passages[:20]}
    (tmp_path / "none.txt").write_text("\n", encoding="utf-8")
    one_line_error(sleuth("update", index, "--delete-file", tmp_path / "none.txt"),
                   "none.txt: no ids to delete (one per line)")
    one_line_error(sleuth("update", index, "--delete", "x", "--delete-file", tmp_path / "gone.txt"),
                   "give exactly one of --add FILE, --delete ID,ID or --delete-file FILE")


@pytest.mark.parametrize("args, message", [
    (["--max-k", "0"], "--max-k must be a positive finite number, got 0"),
    (["--timeout", "0"], "--timeout must be a positive finite number, got 0.0"),
    (["--timeout", "inf"], "--timeout must be a positive finite number, got inf"),  # was a 500 on /obfuscate
    (["--max-obfuscations", "51"], "--max-obfuscations must be at most 50 (the cap shared with sleuth privacy), got 51"),
])
def test_a_request_limit_out_of_range_is_named_by_its_option(sleuth, args, message):
    """Before: "limit 'max_k' must be positive" (and 'timeout_seconds'), names the command line does not take."""
    one_line_error(refused(sleuth, *args), message)


def test_ray_serve_names_indexes_and_pipelines_as_sleuth_serve_does(tmp_path, scifact_passages, corpus):
    """Before: the Ray Serve replicas named an index by its folder's name and let a second folder (or pipeline) of
    one name replace the first, unsaid; now both refusals are those of `sleuth serve`."""
    from sleuth.scale.ray_serve import ServeSettings, load_stages

    for parent in ("a", "b"):
        BM25Index.build(scifact_passages[:20], tmp_path / parent / "ix", show_progress=False)
    with pytest.raises(ConfigError, match=f"--index {tmp_path / 'a' / 'ix'} and --index {tmp_path / 'b' / 'ix'} are "
                                          "both named 'ix'"):
        load_stages(ServeSettings(index=[str(tmp_path / "a" / "ix"), str(tmp_path / "b" / "ix")]))
    assert list(load_stages(ServeSettings(index=[str(tmp_path / "a" / "ix")]))) == ["ix"]
    with pytest.raises(ConfigError, match="--pipeline bm25 and --pipeline bm25 are both named 'bm25'"):
        load_stages(ServeSettings(pipelines=["bm25", "bm25"], corpus=str(corpus), home=str(tmp_path / "home")))


def test_ray_serve_refuses_a_folder_that_is_no_index_before_starting_ray(tmp_path, capsys):
    """Before: Ray started, and every replica failed to load the folder in a traceback."""
    from sleuth.scale.ray_serve import main

    for args, message in ((["--index", str(tmp_path / "nope")], f"error: no index at {tmp_path / 'nope'}"),
                          (["--index", str(tmp_path), "--max-k", "0"], "error: --max-k must be positive, got 0")):
        with pytest.raises(SystemExit) as exit_info:
            main(args)
        assert exit_info.value.code == 2
        assert capsys.readouterr().err.strip().startswith(message)


def test_ray_serve_says_a_bad_option_or_address_in_one_line(tmp_path, capsys, scifact_passages):
    """Before: a Ray address nothing answers at, --replicas 0, a negative --replica-cpus or a port in use ended in a
    traceback (Ray's ValueError, or the proxy failing to bind in Ray's own logs)."""
    import socket

    from sleuth.index.bm25 import BM25Index
    from sleuth.scale.ray_serve import main

    BM25Index.build(scifact_passages[:50], tmp_path / "bm25", show_progress=False)
    with socket.create_server(("127.0.0.1", 0)) as free:
        free_port = str(free.getsockname()[1])
    index = ["--index", str(tmp_path / "bm25"), "--port", free_port]  # a later --port replaces it
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        for args, message in ((["--ray-address", "127.0.0.1:1"], "error: Ray address '127.0.0.1:1': nothing answers"),
                              (["--replicas", "0"], "argument --replicas: must be above 0, got 0"),
                              (["--replica-cpus", "-1"], "argument --replica-cpus: must be above 0, got -1"),
                              (["--port", "70000"], "argument --port: must be a port, 1..65535, got 70000"),
                              (["--port", port], f"error: --host 127.0.0.1 --port {port}: cannot listen there")):
            with pytest.raises(SystemExit) as exit_info:
                main(index + args)
            err = capsys.readouterr().err
            assert exit_info.value.code == 2 and message in err.strip().splitlines()[-1] and "Traceback" not in err
