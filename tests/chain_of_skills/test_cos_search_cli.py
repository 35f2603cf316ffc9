"""`sleuth search --pipeline cos-hotpotqa` as a user runs it: evidence paths "title1 -> title2" with per-hop scores
in the table, and the same paths as nested hop records in the JSON output (real HotpotQA paragraphs, untrained
MiniLM-initialised multi-expert model)."""

from __future__ import annotations

import itertools
import json

import pytest

from sleuth.corpus.hotpotqa import read_hotpotqa_questions
from sleuth.corpus.jsonfile import iter_json_records


@pytest.fixture(scope="module")
def tiny_hotpot(data_dir, tmp_path_factory):
    """The first dev question and a title -> sentences corpus of its two gold and two distractor paragraphs."""
    path = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    question = next(read_hotpotqa_questions(path))
    _, record = next(itertools.islice(iter_json_records(path), 1))
    gold = question.metadata["supporting_titles"]
    context = dict((title, sentences) for title, sentences in record["context"])
    titles = gold + [t for t in context if t not in gold][:2]
    folder = tmp_path_factory.mktemp("cos-cli")
    corpus = folder / "corpus.json"
    corpus.write_text(json.dumps({t: context[t] for t in titles}), encoding="utf-8")
    return question, titles, corpus


@pytest.mark.slow
def test_search_shows_evidence_paths_with_per_hop_scores(sleuth, tiny_hotpot):
    question, titles, corpus = tiny_hotpot
    table = sleuth("search", question.text, "--corpus", corpus, "--format", "hotpotqa", "--pipeline", "cos-hotpotqa",
                   "-k", "3")
    assert table.returncode == 0, table.stderr
    text = " ".join(table.stdout.split())
    assert "evidence path" in text
    assert text.count(" -> ") >= 3  # one path line per hit (k = 3)
    assert "hop 1:" in text and "hop 2:" in text and "rerank" in text

    found = sleuth("search", question.text, "--corpus", corpus, "--format", "hotpotqa", "--pipeline",
                   "cos-hotpotqa", "-k", "3", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert len(hits) == 3
    for hit in hits:
        first, second = hit["extras"]["path"]
        assert hit["id"] == f"{first['id']}||{second['id']}"
        assert first["title"] in titles and second["title"] in titles and first["title"] != second["title"]
        assert {"merged", "rerank"} <= set(first["extras"]) and {"merged", "rerank"} <= set(second["extras"])
        # the table printed this path as "title1 -> title2"
        assert f"{first['title']} -> {second['title']}" in text


def test_path_hits_render_as_title_chains_and_ordinary_hits_stay_as_before():
    from rich.console import Console

    from sleuth.cli.render import hits_json, hits_table
    from sleuth.stages.run import Hit

    first = Hit("Ed Wood", 3.1, "Ed Wood", "Ed Wood", "Edward Davis Wood Jr. ...",
                {"retrieval": 3.1, "merged": 3.1, "rerank": 1.25})
    second = Hit("Doctor [Strange]", 2.0, None, "Doctor [Strange]", "text",
                 {"expanded": 2.0, "link": 1.5, "merged": 2.12, "mention": "Strange", "rerank": -0.5})
    path = Hit("Ed Wood||Doctor [Strange]", 7.6, None, "Ed Wood / Doctor [Strange]", None,
               {"path": [first, second]})
    console = Console(record=True, width=250)
    console.print(hits_table("q", [path]))
    text = console.export_text()
    assert "Ed Wood -> Doctor [Strange]" in text  # rich markup in titles is escaped, not swallowed
    assert "hop 1: Ed Wood (merged 3.1000, retrieval 3.1000, rerank 1.2500)" in text
    assert "hop 2: Doctor [Strange] (merged 2.1200, expanded 2.0000, link 1.5000, rerank -0.5000, mention 'Strange')" \
        in text
    console = Console(record=True, width=250)
    console.print(hits_table("q", [first]))
    plain = console.export_text()
    assert "title / text" in plain and "Edward Davis Wood" in plain and "->" not in plain
    record = json.loads(hits_json("q", [path]))["hits"][0]
    assert [hop["id"] for hop in record["extras"]["path"]] == ["Ed Wood", "Doctor [Strange]"]
    assert record["extras"]["path"][1]["extras"]["link"] == 1.5
