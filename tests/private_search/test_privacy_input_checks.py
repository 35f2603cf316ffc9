"""`sleuth privacy`: a hostile or broken engine's hits, a negative seed and an epsilon too small to mean anything
are one-line errors (exit 2), never a traceback or a silently wrong answer. The engine is a real HTTP server."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sleuth.errors import SleuthError
from sleuth.systems.private_search.remote import RemoteEngine
from tests.cli_support import one_line_error
from tests.privacy_support import glove_table

GOOD = {"id": "d1", "score": 1.5, "title": "Goldfish", "text": "Goldfish grow with their tank."}
HOSTILE = [
    ({**GOOD, "score": "abc"}, "hit 1: field 'score' must be a finite number, got 'abc'"),
    ({**GOOD, "score": {}}, "hit 1: field 'score' must be a finite number"),
    ({**GOOD, "score": True}, "hit 1: field 'score' must be a finite number"),
    ({**GOOD, "title": 5}, "hit 1: field 'title' must be a string, got '5'"),
    ({**GOOD, "text": ["a"]}, "hit 1: field 'text' must be a string"),
    ({**GOOD, "id": {"x": 1}}, "hit 1: field 'id' must be a non-empty string or integer"),
    ({**GOOD, "id": ""}, "hit 1: field 'id' must be a non-empty string or integer"),
    ({}, "hit 1 has no field 'id'"),
    ({"id": "d2"}, "hit 1 has no field 'score'"),
    ("a string", "hit 1 is not an object"),
]


@contextlib.contextmanager
def engine_answering(hits: list) -> Iterator[str]:
    """A real HTTP engine on a free loopback port answering every POST with ``{"hits": hits}``."""
    body = json.dumps({"hits": hits}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(("hit", "message"), HOSTILE)
def test_hostile_hits_are_named_errors(hit, message):
    with engine_answering([GOOD, hit][::-1]) as url:
        engine = RemoteEngine.sleuth(url)
        with pytest.raises(SleuthError) as caught:
            engine.search("do goldfish grow", 5)
        engine.close()
    assert message in str(caught.value) and url in str(caught.value)


def test_good_hits_are_read():
    with engine_answering([GOOD, {"id": 7, "score": 2}]) as url:
        engine = RemoteEngine.sleuth(url)
        hits = engine.search("do goldfish grow", 5)
        engine.close()
    assert [(h.id, h.score, h.title) for h in hits] == [("d1", 1.5, "Goldfish"), ("7", 2.0, None)]


def test_private_search_against_a_hostile_engine_fails_in_one_line(sleuth):
    with engine_answering([{**GOOD, "score": "abc"}]) as url:
        result = sleuth("privacy", "search", "do goldfish grow", "--engine", url, "-n", 2, "--seed", 1)
    one_line_error(result, "field 'score' must be a finite number, got 'abc'")


def test_obfuscate_refuses_a_negative_seed_and_a_meaningless_epsilon(sleuth):
    one_line_error(sleuth("privacy", "obfuscate", "do goldfish grow", "--seed", -1),
                   "Invalid value for '--seed': Input should be greater than or equal to 0")
    # before: "epsilon must be ...", "seed must be ...": names the command line does not take
    one_line_error(sleuth("privacy", "obfuscate", "do goldfish grow", "--epsilon", "1e-300"),
                   "--epsilon must be at least 0.001", "constant word")



def test_a_vocabulary_that_does_not_vary_is_one_line_for_mahalanobis(sleuth, tmp_path):
    """One word vector (or all alike) has no covariance: a division by zero, then eigh's LinAlgError traceback."""
    table = tmp_path / "one.txt"
    table.write_text("cat 0.1 0.2 0.3\n", encoding="utf-8")
    one_line_error(sleuth("privacy", "obfuscate", "cat", "--embeddings", table, "--mechanism", "mahalanobis", "-n", 2,
                          "--seed", 0), "the 1 word vectors of the vocabulary do not vary")


def test_the_smallest_epsilon_still_gives_random_words_not_one_constant_word():
    from sleuth.systems.private_search.mechanisms import MIN_EPSILON
    from sleuth.systems.private_search.registry import make_obfuscator

    obfuscator = make_obfuscator("vickrey-mahalanobis", embeddings=glove_table())
    words = {w for q in obfuscator.obfuscate_one("do goldfish grow", 4, MIN_EPSILON, seed=1) for w in q.split()}
    assert len(words) > 4
