"""Incremental add/delete of hierarchical (DHR) index folders on real SQuAD articles: new and extended documents,
deletes by passage and by document id, untouched scores equal to a fresh build, kill -9 mid-update, the CLI."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from sleuth.corpus.model import Passage
from sleuth.corpus.squad import read_squad_documents
from sleuth.errors import ConfigError, InputError
from sleuth.index.updates import add_documents, delete_documents, generations
from sleuth.models.registry import load_encoder
from sleuth.systems.dhr.index import HierarchicalIndex
from sleuth.systems.dhr.structure import group_passages_into_documents
from tests.model_support import shuffled_minilm

ARTICLES = ("Normans", "Huguenot", "Steam_engine")


@pytest.fixture(scope="module")
def encoder():
    return load_encoder("minilm-onnx")


@pytest.fixture(scope="module")
def paragraphs(data_dir) -> dict[str, list[Passage]]:
    """The first 4 paragraphs of three SQuAD articles, as passages."""
    docs = read_squad_documents(data_dir / "squad2" / "dev-v2.0.json")
    by_article: dict[str, list[Passage]] = {}
    for doc in docs:
        if doc.metadata["article"] in ARTICLES and len(by_article.get(doc.metadata["article"], [])) < 4:
            by_article.setdefault(doc.metadata["article"], []).append(Passage.from_document(doc))
    return by_article


def build(passages, encoder, path):
    return HierarchicalIndex.build(group_passages_into_documents(passages), encoder, encoder, path,
                                   show_progress=False)


def scores(index: HierarchicalIndex, query: np.ndarray) -> tuple[dict[str, float], dict[str, float]]:
    """Document and passage scores of one query vector, by id."""
    docs = index.document_scores(query[None])[0]
    passages = np.asarray(index.passage_vectors) @ query
    return dict(zip(index.documents.ids, docs.tolist())), dict(zip(index.passages.ids, passages.tolist()))


def test_add_and_delete_keep_untouched_scores(tmp_path, paragraphs, encoder):
    normans, huguenot, steam = (paragraphs[a] for a in ARTICLES)
    target = tmp_path / "ix"
    build(normans[:3] + huguenot, encoder, target)
    query = encoder.encode_queries(["Who designed the first steam engine?"])[0]
    docs_before, passages_before = scores(HierarchicalIndex.load(target), query)

    extra = Passage(normans[3].id, "Normans", normans[3].text, normans[3].title_path)  # doc_id: the document's id
    records = [Passage(p.id, "Steam engine", p.text, p.title_path) for p in steam] + [extra]
    add_documents(target, records, encoder=encoder)  # a new document, and a paragraph for an existing one
    added = HierarchicalIndex.load(target)
    assert (len(added), added.num_documents, added.manifest.count) == (12, 3, 12)
    assert added.passages.ids[:4] == [p.id for p in normans]  # the Normans paragraph joined its document's rows
    assert added.passages.doc_ids[-1] == "Steam engine" and added.documents.titles[-1] == "Steam engine"
    docs_after, passages_after = scores(added, query)
    assert max(docs_after, key=docs_after.get) == "Steam engine"
    assert docs_after["Normans"] == docs_before["Normans"] and docs_after["Huguenot"] == docs_before["Huguenot"]
    np.testing.assert_allclose([passages_after[i] for i in passages_before], list(passages_before.values()),
                               atol=1e-6)
    before = HierarchicalIndex.load(target.parent / "ix" / "generations" / "gen-000001")
    assert all(np.array_equal(before.passage_vectors[r], added.passage_vectors[added.passages.position(i)])
               for r, i in enumerate(before.passages.ids))  # every old vector copied bit for bit
    fresh = build(normans + huguenot + [Passage(p.id, "Steam engine", p.text, p.title_path) for p in steam],
                  encoder, tmp_path / "fresh")
    fresh_docs, fresh_passages = scores(fresh, query)
    np.testing.assert_allclose([passages_after[i] for i in fresh_passages], list(fresh_passages.values()),
                               atol=1e-5)
    np.testing.assert_allclose(docs_after["Steam engine"], fresh_docs["Steam engine"], atol=1e-5)
    with pytest.raises(ConfigError, match="duplicate passage id"):
        add_documents(target, [normans[0]], encoder=encoder)

    delete_documents(target, ["Huguenot", normans[1].id])  # a whole document, and one passage
    deleted = HierarchicalIndex.load(target)
    assert deleted.documents.ids == ["Normans", "Steam engine"] and len(deleted) == 7
    docs_left, passages_left = scores(deleted, query)
    np.testing.assert_allclose([docs_left[d] for d in docs_left], [docs_after[d] for d in docs_left], atol=1e-6)
    np.testing.assert_allclose([passages_left[p] for p in passages_left], [passages_after[p] for p in passages_left],
                               atol=1e-6)
    with pytest.raises(InputError, match="unknown passage or document id 'nope'"):
        delete_documents(target, ["nope"])
    with pytest.raises(InputError, match="empty index"):
        delete_documents(target, ["Normans", "Steam engine"])
    assert generations(target) == ["gen-000001", "gen-000002"]  # the served one and the one before


def test_an_encoder_of_another_vector_space_is_refused(tmp_path, paragraphs, encoder):
    """Before: only the dimension of a given encoder was checked, so another 384-d model's passages were added to a
    MiniLM index; MiniLM itself (here on torch, the index built on ONNX) is taken."""
    normans, huguenot, steam = (paragraphs[a] for a in ARTICLES)
    target = tmp_path / "ix"
    build(normans + huguenot, encoder, target)
    with pytest.raises(ConfigError, match=r"does not give the vectors of .*: of 8 of its passages re-encoded"):
        add_documents(target, steam, encoder=shuffled_minilm(tmp_path / "other-model"))
    assert len(HierarchicalIndex.load(target)) == 8 and generations(target) == []
    add_documents(target, steam, encoder=load_encoder("minilm"))
    assert len(HierarchicalIndex.load(target)) == 12


def test_killed_update_keeps_the_previous_generation(tmp_path, paragraphs, encoder, killed_update):
    target = tmp_path / "ix"
    build(paragraphs["Normans"], encoder, target)
    records = [{"id": p.id, "doc_id": "Huguenot", "title": p.title, "text": p.text} for p in paragraphs["Huguenot"]]
    killed_update(target, records)
    served = HierarchicalIndex.load(target)
    assert served.documents.ids == ["Normans"] and len(served) == 4
    add_documents(target, [Passage(r["id"], r["doc_id"], r["text"], (r["title"],)) for r in records], encoder=encoder)
    assert HierarchicalIndex.load(target).documents.ids == ["Normans", "Huguenot"]
    assert not any(p.name.startswith(".tmp-") for p in (target / "generations").iterdir())


def test_update_command_on_a_hierarchical_index(sleuth, tmp_path, paragraphs, encoder):
    target = tmp_path / "ix"
    build(paragraphs["Normans"][:2], encoder, target)
    new = tmp_path / "new.jsonl"
    new.write_text("".join(json.dumps({"id": p.id, "doc_id": "Huguenot", "title": p.title, "text": p.text}) + "\n"
                           for p in itertools.islice(paragraphs["Huguenot"], 2)), encoding="utf-8")
    result = sleuth("update", target, "--add", new)
    assert result.returncode == 0, result.stderr
    assert "hierarchical index" in result.stderr and "added 2, now 4 passages" in result.stderr
    result = sleuth("update", target, "--delete", "Normans")
    assert result.returncode == 0, result.stderr
    assert HierarchicalIndex.load(target).documents.ids == ["Huguenot"]
    result = sleuth("update", target, "--delete", "missing")
    assert result.returncode == 2 and "unknown passage or document id 'missing'" in result.stderr
