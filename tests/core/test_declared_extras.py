"""Declared extras: systems register the keys their stages write (with a display rule), and the CLI renderer, the
service and the web page read the registry instead of naming system keys."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import sleuth as package
from sleuth.cli.render import evidence_path, hits_table, hop_scores
from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Index
from sleuth.pipelines.extras import declared, keys_shown_as, page_hidden, register_extra
from sleuth.pipelines.index_stage import stage_for_index
from sleuth.service.app import create_app
from sleuth.service.extras import hit_records
from sleuth.stages.run import Hit

ROOT = Path(package.__file__).parent
SYSTEM_KEYS = ("path", "mention", "obfuscated_queries", "found_by", "merged", "rerank")


def test_systems_declare_their_keys_with_a_display_rule():
    shown = {key.name: key.display for key in declared().values()}
    assert shown["path"] == "evidence_path" and shown["mention"] == "hop_label"
    assert shown["obfuscated_queries"] == "per_query" and shown["found_by"] == "count_of_per_query"
    assert keys_shown_as("hop_score") == ["merged", "retrieval", "expanded", "link", "rerank"]
    assert {"path", "mention", "obfuscated_queries", "found_by"} <= set(page_hidden())
    with pytest.raises(ConfigError, match="declared twice, differently"):
        register_extra("path", str, "chip", "something else")


@pytest.mark.parametrize("reader", ["cli/render.py", "service/extras.py", "service/static/app.js"])
def test_the_core_readers_name_no_system_key(reader):
    source = (ROOT / reader).read_text(encoding="utf-8")
    named = [key for key in SYSTEM_KEYS if re.search(rf"""extras\[["']{key}["']\]|extras\.{key}\b|(?:get|Set)\(\[?["']{key}["']""",
                                                     source)]
    assert named == [], f"{reader} names {named}: read sleuth.pipelines.extras instead"


@pytest.mark.parametrize("module", ["service/searcher.py", "service/shape.py", "service/extras.py",
                                    "service/static/app.js", "stages/hits.py"])
def test_the_service_and_the_stages_write_no_system_key(module):
    source = (ROOT / module).read_text(encoding="utf-8")
    keys = ("obfuscated_queries", "found_by", "mention") if module.endswith(".js") else SYSTEM_KEYS  # CSS has .path
    named = [key for key in (*keys, "_input_score") if re.search(rf"""["'.]{key}\b""", source)]
    assert named == [], f"{module} names {named}: read sleuth.pipelines.extras instead"


def test_input_scores_are_a_declared_family_of_keys():
    from sleuth.pipelines.extras import key_for
    from sleuth.stages.hits import input_score_key

    assert input_score_key("classify") == "classify_input_score"
    for stage in ("rescore", "cos_rerank", "setops"):
        declared_key = key_for(input_score_key(stage))
        assert declared_key is not None and declared_key.type is float and declared_key.display == "chip"
    assert key_for("found_by").display == "count_of_per_query" and key_for("no_such_key") is None


def test_the_renderer_and_the_service_follow_the_registry(scifact_passages):
    first, second = (Hit(p.id, 1.0, p.doc_id, p.title, p.text) for p in scifact_passages[:2])
    hop1 = first.with_score(3.21, merged=3.21, rerank=1.05)
    hop2 = second.with_score(2.5, link=2.5, mention="vitamin D")
    path = Hit(f"{first.id}||{second.id}", 4.0, extras={"path": [hop1, hop2]})
    assert evidence_path(path) == [hop1, hop2]
    assert hop_scores(hop1) == "merged 3.2100, rerank 1.0500"
    assert hop_scores(hop2) == "link 2.5000, mention 'vitamin D'"
    assert hits_table("q", [path]).columns[3].header == "evidence path / per-hop scores"
    private = [first.with_score(1.0, obfuscated_queries=["a b", "c d"], found_by=2)]
    records, per_query = hit_records(private, with_extras=True)
    assert per_query == {"obfuscated_queries": ["a b", "c d"]} and records[0]["extras"] == {"found_by": 2}


def test_the_page_gets_its_hidden_extras_from_the_server(tmp_path, scifact_passages):
    BM25Index.build(scifact_passages[:30], tmp_path / "ix", show_progress=False)
    app = create_app({"ix": stage_for_index(tmp_path / "ix", 10, "cpu")})
    with TestClient(app) as client:
        body = client.get("/extras").json()
    assert set(body["hidden"]) == set(page_hidden())
    assert {"name": "obfuscated_queries", "display": "per_query",
            "description": declared()["obfuscated_queries"].description} in body["extras"]
