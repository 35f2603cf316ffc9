"""A dense index cached for a model folder is keyed by the folder's weights (sleuth.models.registry.encoder_identity):
a model retrained in the same folder gets an index of its own, never the old model's passage vectors."""

from __future__ import annotations

import json

from sleuth.pipelines.workspace import CorpusSource, Workspace
from tests.model_support import shuffled_minilm


def test_a_model_retrained_in_its_folder_is_not_searched_against_the_old_vectors(tmp_path, scifact_rows, monkeypatch):
    """Before: the cache key held the folder's name only, so after retraining into it a search scored the new
    model's query vectors against the old model's cached passage vectors (the CLI audit: .6883 where the same
    weights in another folder scored .7035)."""
    monkeypatch.setenv("SLEUTH_HOME", str(tmp_path / "home"))
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(row) + "\n" for row in scifact_rows[:40]), encoding="utf-8")
    queries = [row["title"] for row in scifact_rows[:6]]

    def scores(encoder) -> list:
        ws = Workspace(CorpusSource(corpus), show_progress=False)  # a fresh process would see only the cache
        stage = ws.pipeline("dense", encoder=str(encoder), k=5)
        return [[(hit.id, round(hit.score, 5)) for hit in stage.search(query, k=5)] for query in queries]

    shuffled_minilm(tmp_path / "model", seed=0)
    first = scores(tmp_path / "model")
    shuffled_minilm(tmp_path / "model", seed=1)  # retrained in place
    shuffled_minilm(tmp_path / "other", seed=1)  # the same weights in another folder
    retrained = scores(tmp_path / "model")
    assert retrained == scores(tmp_path / "other")
    assert retrained != first
