"""`sleuth serve` wired end to end on 127.0.0.1: limits and the API key (from SLEUTH_API_KEY) reach the server,
admin reload re-reads the index folder, and metrics count what was served."""

from __future__ import annotations

import re

import httpx
import pytest

from sleuth.index.bm25 import BM25Index
from tests.server_process import sleuth_server

KEY = "serve-test-key"


@pytest.fixture(scope="module")
def served(tmp_path_factory, scifact_passages):
    """`sleuth serve` over a 200-passage index with small limits and an API key from the environment."""
    index = tmp_path_factory.mktemp("serve") / "scifact"
    BM25Index.build(scifact_passages[:200], index, show_progress=False)
    args = ["--index", str(index), "--max-k", "5", "--max-batch", "2", "--max-body-bytes", "2000",
            "--max-query-chars", "300"]
    with sleuth_server(args, env={"SLEUTH_API_KEY": KEY}, ready="/ready") as url:
        yield url, index


def test_limits_from_the_command_line(served, scifact_rows):
    url, _ = served
    title = scifact_rows[3]["title"]
    assert httpx.post(url + "/search", json={"query": title, "k": 5}).json()["hits"][0]["id"] == scifact_rows[3]["_id"]
    assert "between 1 and 5" in httpx.post(url + "/search", json={"query": title, "k": 6}).json()["error"]
    assert "limit is 2" in httpx.post(url + "/search/batch", json={"queries": ["a", "b", "c"]}).json()["error"]
    assert "300" in httpx.post(url + "/search", json={"query": "a" * 301}).json()["error"]
    big = httpx.post(url + "/search", json={"query": "a", "pad": "x" * 3000})
    assert big.status_code == 413 and "2000 bytes" in big.json()["error"]


def test_admin_reload_with_the_key_from_the_environment(served, scifact_passages, scifact_rows):
    url, index = served
    assert httpx.post(url + "/admin/reload").status_code == 401
    assert httpx.post(url + "/admin/reload", headers={"X-API-Key": "nope"}).status_code == 401
    late = scifact_rows[300]
    assert httpx.post(url + "/search", json={"query": late["title"], "k": 5}).json()["hits"][0]["id"] != late["_id"]
    BM25Index.build(scifact_passages, index, show_progress=False)
    reloaded = httpx.post(url + "/admin/reload", headers={"X-API-Key": KEY}, timeout=60)
    assert reloaded.status_code == 200 and reloaded.json()["reloaded"] == [index.name]
    assert httpx.post(url + "/search", json={"query": late["title"], "k": 5}).json()["hits"][0]["id"] == late["_id"]


def test_metrics_after_traffic(served):
    url, _ = served

    def count(text: str, endpoint: str, status: int) -> int:
        found = re.search(rf'^sleuth_requests_total{{endpoint="{endpoint}",status="{status}"}} (\d+)$', text, re.M)
        return int(found.group(1)) if found else 0

    before = httpx.get(url + "/metrics").text
    httpx.get(url + "/search", params={"query": "cancer", "k": 2})
    httpx.post(url + "/admin/reload", headers={"X-API-Key": "wrong"})
    text = httpx.get(url + "/metrics").text
    assert count(text, "/search", 200) == count(before, "/search", 200) + 1
    assert count(text, "/admin/reload", 401) == count(before, "/admin/reload", 401) + 1
    assert count(text, "/metrics", 200) >= 1


CORRUPTIONS = {
    "truncated": lambda text: text[:len(text) // 2],
    "binary": lambda text: "\x00\udcff garbage",
    "wrong type": lambda text: text.replace('"count": 200', '"count": "many"'),
    "not an object": lambda text: "[1, 2, 3]",
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_a_corrupt_manifest_stops_the_start_with_one_line(tmp_path, scifact_passages, corruption):
    import subprocess
    import sys

    from tests.server_process import free_port

    index = tmp_path / "broken"
    BM25Index.build(scifact_passages[:200], index, show_progress=False)
    manifest = index / "manifest.json"
    text = manifest.read_text(encoding="utf-8")
    assert '"count": 200' in text
    manifest.write_bytes(CORRUPTIONS[corruption](text).encode("utf-8", "surrogateescape"))
    done = subprocess.run([sys.executable, "-m", "sleuth", "serve", "--index", str(index), "--port", str(free_port())],
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(manifest) in lines[0], done.stderr
    assert "Traceback" not in done.stderr and "serving" not in done.stdout


def post(url: str, query: str, pipeline: str, k: int = 5) -> dict:
    response = httpx.post(url + "/search", json={"query": query, "pipeline": pipeline, "k": k, "extras": True},
                          timeout=120)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.slow
def test_dhr_and_chain_of_skills_pipelines_are_served(tmp_path, data_dir):
    """`sleuth serve --corpus <10 HotpotQA paragraphs> --pipeline dhr --pipeline cos-retrieval`: both answer, DHR
    hits carry their passage and document scores, and a paragraph's own opening finds it."""
    import json

    question = json.loads((data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json").read_text(encoding="utf-8"))[1]
    rows = [{"_id": f"p{i}", "title": title, "text": "".join(sentences)}
            for i, (title, sentences) in enumerate(question["context"])]
    corpus = tmp_path / "paragraphs.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    args = ["--corpus", str(corpus), "--pipeline", "dhr", "--pipeline", "cos-retrieval"]
    with sleuth_server(args, env={"SLEUTH_HOME": str(tmp_path / "home")}) as url:
        listed = httpx.get(url + "/pipelines").json()
        assert [p["name"] for p in listed["pipelines"]] == ["dhr", "cos-retrieval"]
        assert all(p["description"] for p in listed["pipelines"])
        target = rows[2]  # Jonny Craig
        dhr = post(url, target["text"][:200], "dhr")
        assert dhr["hits"][0]["id"] == target["_id"]
        assert {"passage_score", "document_score"} <= set(dhr["hits"][0]["extras"])  # parallel: no document rank
        cos = post(url, target["text"][:200], "cos-retrieval")
        assert target["_id"] in [hit["id"] for hit in cos["hits"][:3]]
        assert all(hit["id"] in {row["_id"] for row in rows} for hit in cos["hits"])
        # a system's pipeline has a depth too: its k (before: unknown, so k=150 got 100 DHR hits unsaid)
        depths = {p["name"]: p["depth"] for p in httpx.get(url + "/pipelines").json()["pipelines"]}
        assert depths == {"dhr": 100, "cos-retrieval": 1000}
        refused = httpx.post(url + "/search", json={"query": "Jonny Craig", "pipeline": "dhr", "k": 150})
        assert refused.status_code == 400 and "100 hits a query (its dhr.k)" in refused.json()["error"]


def test_a_quest_pipeline_is_served(tmp_path, data_dir):
    """`sleuth serve --corpus <proxy QUEST documents of 3 examples> --format quest --pipeline quest-bm25`."""
    import json

    from sleuth.corpus.quest import quest_attribution_documents, write_quest_documents

    lines = (data_dir / "quest" / "val.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    examples = tmp_path / "examples.jsonl"
    examples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    documents = tmp_path / "documents.jsonl"
    assert write_quest_documents(documents, quest_attribution_documents(examples)) >= 10
    first = json.loads(lines[0])
    args = ["--corpus", str(documents), "--format", "quest", "--pipeline", "quest-bm25"]
    with sleuth_server(args, env={"SLEUTH_HOME": str(tmp_path / "home")}) as url:
        found = post(url, first["query"], "quest-bm25", k=10)
    assert found["pipeline"] == "quest-bm25" and len(found["hits"]) == 10
    assert {hit["id"] for hit in found["hits"]} & set(first["docs"])  # titles are the document ids


def test_a_pipeline_of_index_paths_is_served_without_the_bundled_corpus(tmp_path, scifact_passages):
    """`sleuth serve --pipeline mine.yaml` whose stage names an index folder: it serves that index (before: it also
    said it served the bundled SciFact), with a key set by --set; a k above that depth (within --max-k) is a 400
    naming the key (before: 3 hits for k 5, unsaid)."""
    index = tmp_path / "small"
    BM25Index.build(scifact_passages[:50], index, show_progress=False)
    config = tmp_path / "mine.yaml"
    config.write_text(f"name: mine\nstages:\n  - bm25: {{index: {index}}}\n")
    log: list[str] = []
    query = scifact_passages[7].text[:200]
    with sleuth_server(["--pipeline", str(config), "--set", "bm25.k=3", "--max-k", "50"],
                       env={"SLEUTH_HOME": str(tmp_path / "home")}, log=log) as url:
        found = post(url, query, "mine", k=3)
        deeper = httpx.post(url + "/search", json={"query": query, "pipeline": "mine", "k": 5})
        described = httpx.get(url + "/pipelines").json()["pipelines"][0]["description"]
    assert described == "stage keys set (--set): bm25.k=3"  # before: nothing said what the service runs
    assert found["hits"][0]["id"] == scifact_passages[7].id
    assert len(found["hits"]) == 3
    assert deeper.status_code == 400, deeper.text  # --set bm25.k=3 reached the pipeline, and the 400 says so
    assert deeper.json()["error"] == ("'k' is 5, more than pipeline 'mine' retrieves: 3 hits a query (its bm25.k); "
                                      "ask for at most 3, or serve it deeper: sleuth serve --set bm25.k=5")
    assert {hit["id"] for hit in found["hits"]} <= {p.id for p in scifact_passages[:50]}
    assert any("serving on http://" in line for line in log) and not any("bundled" in line for line in log), log


def one_line_error(done) -> str:
    """The single ``error: ...`` line of a `sleuth serve` that refused to start (exit 2, no traceback)."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr and "serving" not in done.stdout
    return lines[0]


def test_a_set_no_served_pipeline_takes_is_refused(sleuth):
    assert "no stage 'dhr' in the pipeline(s) run (bm25)" in one_line_error(
        sleuth("serve", "--pipeline", "bm25", "--set", "dhr.lam=1", "--port", "0", timeout=120))
    assert "--set goes with --pipeline" in one_line_error(
        sleuth("serve", "--index", "somewhere", "--set", "bm25.k=3", "--port", "0", timeout=120))


def test_a_port_out_of_range_is_refused(sleuth):
    for port in ("99999", "65536", "-1"):
        assert "between 0 and 65535" in one_line_error(sleuth("serve", "--port", port, timeout=120))


def test_two_index_folders_with_one_name_are_refused(sleuth, tmp_path, scifact_passages):
    first, second = tmp_path / "a" / "scifact", tmp_path / "b" / "scifact"
    for folder in (first, second):
        BM25Index.build(scifact_passages[:20], folder, show_progress=False)
    line = one_line_error(sleuth("serve", "--index", first, "--index", second, timeout=120))
    assert str(first) in line and str(second) in line and "'scifact'" in line


def test_an_unwritable_query_log_is_refused_at_start(sleuth, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    assert "is a folder" in one_line_error(sleuth("serve", "--query-log", folder, timeout=120))
    blocked = tmp_path / "file"
    blocked.write_text("x", encoding="utf-8")
    assert "cannot write" in one_line_error(sleuth("serve", "--query-log", blocked / "log.jsonl", timeout=120))


def test_the_api_key_on_the_command_line_is_hidden_and_warned(sleuth, tmp_path):
    assert "--api-key-file" in sleuth("serve", "--help").stdout
    assert "--api-key " not in sleuth("serve", "--help").stdout
    done = sleuth("serve", "--api-key", "secret", "--port", "70000", timeout=120)
    assert done.returncode == 2 and "visible in the process list" in done.stderr
    assert "cannot read" in one_line_error(sleuth("serve", "--api-key-file", tmp_path / "missing", timeout=120))
    empty = tmp_path / "empty"
    empty.write_text("\n", encoding="utf-8")
    assert "one line" in one_line_error(sleuth("serve", "--api-key-file", empty, timeout=120))


def test_foreign_hosts_are_refused_on_loopback(served):
    url, _ = served
    port = url.rsplit(":", 1)[1]
    assert httpx.get(url + "/health", headers={"Host": f"localhost:{port}"}).status_code == 200
    refused = httpx.get(url + "/metrics", headers={"Host": f"rebind.example:{port}"})
    assert refused.status_code == 400 and "not allowed" in refused.json()["error"]


def test_an_api_key_file_saved_with_a_byte_order_mark_holds_the_key_alone(tmp_path):
    """Before: the mark became part of the key, so every admin request with the right key answered 401."""
    from sleuth.service.admin import read_api_key

    (tmp_path / "key").write_bytes(b"\xef\xbb\xbffile-key-1\r\n")
    assert read_api_key(tmp_path / "key") == "file-key-1"


def test_api_key_file_and_allowed_hosts(tmp_path, scifact_passages):
    index = tmp_path / "scifact"
    BM25Index.build(scifact_passages[:50], index, show_progress=False)
    key = tmp_path / "key"
    key.write_text("file-key-1\n", encoding="utf-8")
    args = ["--index", str(index), "--api-key-file", str(key), "--allowed-host", "search.example",
            "--allowed-host", "127.0.0.1"]
    with sleuth_server(args, env={"SLEUTH_API_KEY": "not-this-one"}) as url:
        assert httpx.get(url + "/health", headers={"Host": "search.example"}).status_code == 200
        assert httpx.get(url + "/health", headers={"Host": "localhost"}).status_code == 400
        port = url.rsplit(":", 1)[1]  # --allowed-host adds to the loopback names (before: replaced them)
        assert httpx.get(url + "/health", headers={"Host": f"localhost:{port}"}).status_code == 200
        assert httpx.post(url + "/admin/reload", headers={"X-API-Key": "not-this-one"}).status_code == 401
        assert httpx.post(url + "/admin/reload", headers={"X-API-Key": "file-key-1"}, timeout=60).status_code == 200
