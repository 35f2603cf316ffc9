"""Saved Chain-of-Skills skill indexes: written atomically with a manifest, loaded back with identical search
results, reused by a second workspace without loading the model, and one-line errors for broken directories."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from sleuth.corpus.hotpotqa import hotpotqa_context_documents
from sleuth.corpus.model import Passage
from sleuth.errors import IndexError_
from sleuth.index.manifest import read_manifest
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.systems.chain_of_skills.builders import skill_index
from sleuth.systems.chain_of_skills.model import MultiExpertEncoder
from sleuth.systems.chain_of_skills.skill_index import KIND, SkillIndex


@pytest.fixture(scope="module")
def documents(data_dir):
    return list(itertools.islice(hotpotqa_context_documents(data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"),
                                 12))


@pytest.mark.slow
def test_saved_skill_index_loads_with_identical_results(documents, tmp_path):
    model = MultiExpertEncoder.from_backbone("minilm")
    passages = [Passage.from_document(doc) for doc in documents]
    built = SkillIndex.build(passages, model, "linking", path=tmp_path / "linking", encoder={"model": "minilm"})
    manifest = read_manifest(tmp_path / "linking", kind=KIND)
    assert manifest.count == 12 and manifest.params == {"skill": "linking", "factory": "Flat"}
    assert manifest.dimensions == model.dim and manifest.encoder == {"model": "minilm"}
    loaded = SkillIndex.load(tmp_path / "linking")
    assert loaded.skill == "linking" and loaded.docstore.ids == built.docstore.ids
    queries = model.encode([documents[0].title, documents[5].title], "linking", side="query")
    (p1, s1), (p2, s2) = built.search(queries, 5), loaded.search(queries, 5)
    assert np.array_equal(p1, p2) and np.allclose(s1, s2)
    assert not list(tmp_path.glob(".linking.tmp-*"))  # the temporary build directory was renamed into place

    (tmp_path / "linking" / "vectors.faiss").write_bytes(b"broken")
    with pytest.raises(IndexError_, match="vectors.faiss"):
        SkillIndex.load(tmp_path / "linking")
    with pytest.raises(IndexError_, match="not a 'cos-skill' index|no index"):
        SkillIndex.load(tmp_path / "nothing")


@pytest.mark.slow
def test_a_second_workspace_loads_the_cached_index_without_the_model(documents, tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({d.id: d.metadata["sentences"] for d in documents}), encoding="utf-8")
    first = Workspace(CorpusSource(corpus, format="hotpotqa"), home=tmp_path / "home", show_progress=False)
    built = skill_index(first, "minilm", "retrieval")
    assert "cos-model:minilm" in first._loaded  # encoding needed the model
    second = Workspace(CorpusSource(corpus, format="hotpotqa"), home=tmp_path / "home", show_progress=False)
    cached = skill_index(second, "minilm", "retrieval")
    assert "cos-model:minilm" not in second._loaded  # loaded from disk: nothing re-encoded
    assert cached.manifest.created == built.manifest.created and cached.docstore.ids == built.docstore.ids
    assert np.allclose(cached.index.reconstruct_n(0, len(cached)), built.index.reconstruct_n(0, len(built)))
    # another skill (another context expert) is another index
    assert skill_index(second, "minilm", "linking").skill == "linking"


@pytest.mark.slow
def test_the_shipped_model_builds_one_index_for_retrieval_and_linking(documents, tmp_path):
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps({d.id: d.metadata["sentences"] for d in documents}), encoding="utf-8")
    ws = Workspace(CorpusSource(corpus, format="hotpotqa"), home=tmp_path / "home", show_progress=False)
    retrieval, linking = skill_index(ws, None, "retrieval"), skill_index(ws, None, "linking")
    assert linking.manifest.params["skill"] == "retrieval" and linking.docstore.ids == retrieval.docstore.ids
    built = [p for p in (tmp_path / "home").rglob("manifest.json") if read_manifest(p.parent).kind == KIND]
    assert len(built) == 1  # (an untrained model's linking index is its own: the test above)
