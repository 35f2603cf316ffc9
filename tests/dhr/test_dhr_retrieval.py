"""DHR retrieval on real Wikipedia articles with MiniLM: the hierarchical index (layout, save/load, validation), the
two-stage ranking and Eq. 3, serial = parallel when k1 covers every document, DHR-P, the BM25 document option,
pipelines from YAML and the lambda grid search."""

from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest

from sleuth.corpus.mediawiki import read_mediawiki
from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, IndexError_
from sleuth.index.manifest import manifest_checksum
from sleuth.models.registry import load_encoder
from sleuth.stages.run import Hit, Run
from sleuth.systems.dhr.accuracy import document_run, hierarchical_accuracy
from sleuth.systems.dhr.index import HierarchicalIndex, passage_offsets, rows_of_documents, top_k
from sleuth.systems.dhr.lambda_search import (
    PriorCandidates,
    grid,
    rerank_with_lambda,
    search_lambda,
    search_prior,
)
from sleuth.systems.dhr.stages import DocumentRetrieve, PassageInDocuments, PassageRetrieve, combine_scores, dhr
from sleuth.systems.dhr.structure import split_documents

WIKI = "wikipedia/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
SMALL = ("Actrius", "Animalia (book)", "International Atomic Time", "Alain Connes", "Allan Dwan",
         "Agricultural science", "Alien", "Austin (disambiguation)")
QUESTIONS = [Query("q1", "Which film did Ventura Pons direct?"), Query("q2", "how is atomic time measured"),
             Query("q3", "silent film director from Canada"), Query("q4", "science of farming and soil")]


@pytest.fixture(scope="module")
def encoder():
    return load_encoder("minilm")


@pytest.fixture(scope="module")
def groups(data_dir):
    docs = [d for d in itertools.islice(read_mediawiki(data_dir / WIKI), 30) if d.title in SMALL]
    return list(split_documents(docs))


@pytest.fixture(scope="module")
def index_dir(groups, encoder, tmp_path_factory):
    path = tmp_path_factory.mktemp("dhr") / "index"
    HierarchicalIndex.build(groups, encoder, encoder, path, show_progress=False)
    return path


@pytest.fixture(scope="module")
def index(index_dir):
    return HierarchicalIndex.load(index_dir)


def test_offsets_and_rows():
    offsets = passage_offsets([2, 0, 3, 1])
    assert offsets.tolist() == [0, 2, 2, 5, 6]
    assert rows_of_documents(offsets, [2, 0, 1, 3]).tolist() == [2, 3, 4, 0, 1, 5]
    assert rows_of_documents(offsets, []).tolist() == []
    assert top_k(np.array([0.1, 0.9, 0.5, 0.9]), 3).tolist() == [1, 3, 2]
    assert combine_scores(np.array([0.5, 0.2]), np.array([0.1, 0.4]), 0.5).tolist() == pytest.approx([0.55, 0.4])


def test_index_layout_and_reload(index, groups, encoder):
    assert index.num_documents == len(groups) and len(index) == sum(len(g.passages) for g in groups)
    for d, group in enumerate(groups):  # each document's passages are contiguous rows, in document order
        rows = range(index.offsets[d], index.offsets[d + 1])
        assert [index.passages.ids[r] for r in rows] == [p.id for p in group.passages]
        assert {index.passages.doc_ids[r] for r in rows} == {group.document.id}
    assert isinstance(index.passage_vectors, np.memmap)
    assert index.manifest.encoder["document"]["name"] == "minilm" and index.manifest.params["separator"] == ", "
    first = groups[0].passages[0]
    expected = encoder.encode_passages([f"{first.full_title()}, {first.text}"])[0]
    assert np.allclose(index.passage_vectors[0], expected, atol=1e-5)  # hierarchical title + text was encoded
    assert index.documents.texts[0].startswith(groups[0].document.title + ", ")


def test_index_validation(index_dir, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(index_dir, broken)
    np.save(broken / "offsets.npy", np.array([0, 1], dtype=np.int64))
    with pytest.raises(IndexError_, match="offsets.npy"):  # size differs from the manifest's checksum record
        HierarchicalIndex.load(broken)
    manifest = json.loads((broken / "manifest.json").read_text())
    manifest["kind"] = "dense"
    (broken / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexError_, match="checksum does not match"):  # an edited manifest is refused
        HierarchicalIndex.load(broken)
    manifest["checksum"] = manifest_checksum({k: v for k, v in manifest.items() if k != "checksum"})
    (broken / "manifest.json").write_text(json.dumps(manifest))  # a sound manifest of another kind
    with pytest.raises(IndexError_, match="not a 'hierarchical' index"):
        HierarchicalIndex.load(broken)
    with pytest.raises(IndexError_):
        HierarchicalIndex.load(tmp_path / "missing")


def test_hnsw_document_index(groups, encoder):
    import faiss

    small = HierarchicalIndex.build(groups[:3], encoder, encoder, factory="HNSW32", show_progress=False)
    assert isinstance(faiss.downcast_index(small.document_index), faiss.IndexHNSWFlat)
    rows, scores = small.search_documents(encoder.encode_queries(["Which film did Ventura Pons direct?"]), 2)
    assert small.documents.ids[rows[0][0]] == "Actrius" and scores[0][0] >= scores[0][1]
    with pytest.raises(ConfigError):
        HierarchicalIndex.build(groups[:1], encoder, encoder, factory="NoSuchIndex", show_progress=False)


def test_validate_catches_inconsistent_parts(index):
    parts = dict(document_index=index.document_index, document_vectors=index.document_vectors,
                 passage_vectors=index.passage_vectors, offsets=index.offsets, documents=index.documents,
                 passages=index.passages, document_encoder_spec={}, passage_encoder_spec={})
    HierarchicalIndex(**parts).validate()
    for key, bad in (("offsets", index.offsets[:-1]), ("passage_vectors", index.passage_vectors[1:]),
                     ("offsets", index.offsets[::-1].copy())):
        with pytest.raises(IndexError_):
            HierarchicalIndex(**{**parts, key: bad}).validate()


def test_serial_ranking_is_passage_plus_lambda_document(index, encoder):
    documents = DocumentRetrieve(index, encoder, k=3).transform(QUESTIONS)
    assert all(len(hits) == 3 and hits[0].extras["document_rank"] == 1 for hits in documents.values())
    run = PassageInDocuments(index, encoder, lam=0.7, k=5).transform(QUESTIONS, documents)
    for query in QUESTIONS:
        doc_scores = {h.id: h.score for h in documents[query.id]}
        hits = run[query.id]
        assert hits and all(h.doc_id in doc_scores for h in hits)  # only passages of the top-k1 documents
        for hit in hits:
            assert hit.extras["document_score"] == pytest.approx(doc_scores[hit.doc_id], abs=1e-6)
            assert hit.score == pytest.approx(hit.extras["passage_score"] + 0.7 * hit.extras["document_score"],
                                              abs=1e-5)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert run["q1"][0].doc_id == "Actrius"
    with pytest.raises(ConfigError):
        PassageInDocuments(index, encoder).transform(QUESTIONS)


def test_serial_equals_parallel_when_k1_covers_every_document(index, encoder):
    for lam in (0.0, 0.5, 1.0):
        serial = dhr(index, k1=index.num_documents, k2=20, lam=lam, document_encoder=encoder,
                     passage_encoder=encoder).transform(QUESTIONS)
        parallel = dhr(index, mode="parallel", k2=20, lam=lam, document_encoder=encoder,
                       passage_encoder=encoder).transform(QUESTIONS)
        for query in QUESTIONS:
            assert [h.id for h in serial[query.id]] == [h.id for h in parallel[query.id]]
            assert [h.score for h in serial[query.id]] == pytest.approx([h.score for h in parallel[query.id]],
                                                                        abs=1e-5)
    narrow = dhr(index, k1=1, k2=20, document_encoder=encoder, passage_encoder=encoder).transform(QUESTIONS)
    assert all(len({h.doc_id for h in hits}) == 1 for hits in narrow.values())


def test_dhr_p_and_lambda_zero(index, encoder):
    flat = PassageRetrieve(index, encoder, k=len(index)).transform(QUESTIONS)
    exact = index.passage_vectors @ encoder.encode_queries([QUESTIONS[0].text])[0]
    assert [h.id for h in flat["q1"][:5]] == [index.passages.ids[i] for i in np.argsort(-exact, kind="stable")[:5]]
    # lambda = 0 over every document ("w/o rerank") ranks exactly like DHR-P
    unranked = dhr(index, k1=index.num_documents, k2=len(index), lam=0.0, document_encoder=encoder,
                   passage_encoder=encoder).transform(QUESTIONS)
    assert [h.id for h in unranked["q2"]] == [h.id for h in flat["q2"]]


def test_document_scores_and_combinations(index, encoder):
    queries = encoder.encode_queries([q.text for q in QUESTIONS])
    passages = np.asarray(index.passage_vectors) @ queries.T  # (passages, queries)
    owner = index.passage_document
    best = np.array([[passages[owner == d, i].max() for d in range(index.num_documents)]
                     for i in range(len(QUESTIONS))])
    np.testing.assert_allclose(index.document_scores(queries, "max"), best, atol=1e-5)
    centroids = index.centroids
    np.testing.assert_allclose(np.linalg.norm(centroids, axis=1), 1.0, atol=1e-5)
    mean = np.asarray(index.passage_vectors)[owner == 0].mean(axis=0)
    np.testing.assert_allclose(centroids[0], mean / np.linalg.norm(mean), atol=1e-5)
    assert combine_scores(np.array([0.5, 0.2]), np.array([0.1, 0.4]), 0.5, "gate").tolist() == pytest.approx(
        [0.5, 0.3])  # the document lifts a passage it beats, never sinks one that beats it
    flat = PassageRetrieve(index, encoder, k=20).transform(QUESTIONS)
    for document in ("max", "centroid", "summary"):
        for combine in ("add", "gate"):
            run = dhr(index, mode="parallel", k2=20, lam=1.0, document=document, combine=combine,
                      document_encoder=encoder, passage_encoder=encoder).transform(QUESTIONS)
            hit = run["q1"][0]
            assert hit.score == pytest.approx(float(combine_scores(hit.extras["passage_score"],
                                                                   hit.extras["document_score"], 1.0, combine)),
                                              abs=1e-5)
            if (document, combine) == ("max", "add"):  # the best passage overall has the best document: top 1 = flat
                assert [h[0].id for h in run.values()] == [h[0].id for h in flat.values()]
    serial = dhr(index, k1=index.num_documents, k2=20, document="max", document_encoder=encoder,
                 passage_encoder=encoder).transform(QUESTIONS)
    parallel = dhr(index, mode="parallel", k2=20, document="max", document_encoder=encoder,
                   passage_encoder=encoder).transform(QUESTIONS)
    assert [h.id for h in serial["q2"]] == [h.id for h in parallel["q2"]]
    with pytest.raises(ConfigError, match="unknown document score 'titles'"):
        dhr(index, mode="parallel", document="titles", document_encoder=encoder, passage_encoder=encoder)
    with pytest.raises(ConfigError, match="unknown score combination 'mul'"):
        dhr(index, mode="parallel", combine="mul", document_encoder=encoder, passage_encoder=encoder)


def test_bm25_documents_and_mode_checks(index, encoder):
    from sleuth.corpus.model import Passage
    from sleuth.index.bm25 import BM25Index

    bm25 = BM25Index.build([Passage(i, i, t) for i, t in zip(index.documents.ids, index.documents.texts)],
                           show_progress=False)
    run = dhr(index, k1=2, k2=5, bm25=bm25, passage_encoder=encoder).transform(QUESTIONS[:1])
    assert run["q1"][0].doc_id == "Actrius"
    with pytest.raises(ConfigError):
        dhr(index, mode="parallel", bm25=bm25, passage_encoder=encoder)
    with pytest.raises(ConfigError):
        dhr(index, mode="sideways", document_encoder=encoder, passage_encoder=encoder)


def test_accuracy_and_lambda_search(index, encoder):
    documents = DocumentRetrieve(index, encoder, k=index.num_documents).transform(QUESTIONS)
    scored = PassageInDocuments(index, encoder, lam=0.0, k=len(index)).transform(QUESTIONS, documents)
    reranked = rerank_with_lambda(scored, 1.0, k=10)
    full = dhr(index, k1=index.num_documents, k2=10, lam=1.0, document_encoder=encoder,
               passage_encoder=encoder).transform(QUESTIONS)
    assert [h.id for h in reranked["q3"]] == [h.id for h in full["q3"]]
    answers = {"q1": ["Ventura Pons"], "q2": ["atomic clocks"]}
    texts = {d: " ".join(t for t, o in zip(index.passages.texts, index.passages.doc_ids) if o == d)
             for d in index.documents.ids}
    accuracy = hierarchical_accuracy(full, answers, texts, ks=(1, 10))
    assert accuracy["D Top-1"] == 1.0 and 0.5 <= accuracy["P Top-10"] <= 1.0
    assert [h.id for h in document_run(full)["q1"]][0] == "Actrius"
    # grid search: coarse 0..2 step 0.1, then 0.01 steps within 0.05 of the best
    search = search_lambda(lambda lam: -abs(lam - 0.57))
    assert search.best == pytest.approx(0.57) and len(search.coarse) == 21 and len(search.fine) == 11
    assert grid(0.0, 0.2, 0.1) == [0.0, 0.1, 0.2]
    with pytest.raises(ConfigError):
        rerank_with_lambda(Run({"q": [Hit("a", 1.0)]}), 1.0)
    # ties go to the preferred value: 0 for a prior (no prior unless it helps)
    assert search_lambda(lambda beta: 1.0, (0.0, 0.1, 0.005), 0.001, 0.005, preferred=0.0).best == 0.0


def test_prior_search():
    """The length prior lifts a long document's passage over a slightly better short one; the gate keeps it from a
    question whose best passage scores at or above the gate; the search finds the smallest prior and the gate."""
    def hit(pid, score, doc, passage):
        return Hit(pid, score, doc, extras={"passage_score": passage})

    run = Run({"q": [hit("short-1", 1.01, "short", 0.51), hit("long-1", 1.0, "long", 0.5)],
               "r": [hit("short-2", 1.81, "short", 0.91), hit("long-2", 1.8, "long", 0.9)]})
    candidates = PriorCandidates.from_run(run, {"long": float(np.log(10)), "short": 0.0},
                                          lambda qid, h: h.doc_id == "long", ["q", "r"])
    assert candidates.best.tolist() == pytest.approx([0.51, 0.91])
    assert candidates.accuracy(0.0, None, 1) == 0.0  # the short passages lead
    assert candidates.accuracy(0.05, None, 1) == 1.0  # + 0.05 log 10 = 0.115 lifts both long passages
    assert candidates.accuracy(0.05, 0.7, 1) == 0.5  # only q (best .51 < .7) gets the prior
    assert candidates.accuracy(0.0, None, 2) == 1.0
    gates = candidates.gate_grid()
    assert gates[-1] is None and all(0.51 <= g <= 0.91 for g in gates[:-1])
    search = search_prior(candidates, 1)
    # every finite gate lies below r's best passage score, so only "no gate" reaches both; 0.005 log 10 > 0.01
    assert (search.below, search.best, search.best_value) == (None, 0.005, 1.0)
    assert search.gates[gates[0]] == (0.005, 0.5)


def test_pipeline_configs(tmp_path, groups, data_dir):
    from sleuth.pipelines.config import load_pipeline, validate_pipeline
    from sleuth.pipelines.workspace import CorpusSource, Workspace
    from sleuth.service.depth import Depth, depth

    for name in ("dhr", "dhr-serial", "dhr-parallel", "dhr-p"):
        validate_pipeline(name)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"_id": p.id, "title": g.document.title, "text": p.text}) + "\n"
                              for g in groups[:3] for p in g.passages), encoding="utf-8")
    ws = Workspace(corpus=CorpusSource(corpus), show_progress=False)
    stage = load_pipeline("dhr", ws)
    hits = stage.search("Which film did Ventura Pons direct?", 3)
    assert hits[0].doc_id == "Actrius" and {"passage_score", "document_score"} <= set(hits[0].extras)
    assert any(p.name.startswith("hierarchical-") for p in ws.index_dir("x").parent.iterdir())
    # its depth for the service: the passages' k, named by the config's key; serial mode's passage stage too (its
    # own class would say dhr_passages.k, which a dhr entry has no key for)
    assert depth(stage) == depth(load_pipeline("dhr-serial", ws)) == Depth(100, ("dhr.k",))
    config = tmp_path / "bad.yaml"
    config.write_text("stages:\n  - dhr: {mode: serial, lamda: 1}\n")
    with pytest.raises(ConfigError, match="unknown key 'lamda'"):
        validate_pipeline(config)
    config.write_text("stages:\n  - dhr: {mode: parallel, document: max, length_prior: abc}\n")
    with pytest.raises(ConfigError, match="stage 1: stage 'dhr': key 'length_prior': must be a number, got 'abc'"):
        load_pipeline(config, ws)  # a word where a number belongs: one line naming the stage, no traceback


def test_length_prior(index, encoder):
    counts = np.diff(index.offsets)
    assert counts.max() >= 2 * counts.min()  # the fixture's documents differ in length (4 to 12 passages)
    prior = index.length_prior(0.05)
    np.testing.assert_allclose(prior, 0.05 * np.log(counts), atol=1e-6)
    queries = encoder.encode_queries([q.text for q in QUESTIONS])
    p = queries @ np.asarray(index.passage_vectors).T
    best = index.document_scores(queries, "max")[:, index.passage_document]
    expected = p + 1.0 * best + prior[index.passage_document]
    parallel = dhr(index, mode="parallel", k2=len(index), lam=1.0, document="max", length_prior=0.05,
                   document_encoder=encoder, passage_encoder=encoder).transform(QUESTIONS)
    serial = dhr(index, k1=index.num_documents, k2=len(index), lam=1.0, document="max", length_prior=0.05,
                 document_encoder=encoder, passage_encoder=encoder).transform(QUESTIONS)
    plain = dhr(index, mode="parallel", k2=len(index), lam=1.0, document="max", document_encoder=encoder,
                passage_encoder=encoder).transform(QUESTIONS)
    row_of = {pid: i for i, pid in enumerate(index.passages.ids)}
    for i, query in enumerate(QUESTIONS):
        hits = parallel[query.id]
        rows = [row_of[h.id] for h in hits]
        assert [h.score for h in hits] == pytest.approx(expected[i, rows].tolist(), abs=1e-5)
        assert [h.extras["document_prior"] for h in hits] == pytest.approx(prior[index.passage_document[rows]], abs=1e-6)
        assert [h.id for h in serial[query.id]] == [h.id for h in hits]  # both modes add the same prior
        assert "document_prior" not in plain[query.id][0].extras
    # the prior moves passages of long documents up against plain DHR: some ranking differs
    assert any([h.id for h in parallel[q.id]] != [h.id for h in plain[q.id]] for q in QUESTIONS)
    # re-ranking by lambda keeps the prior (it does not depend on lambda)
    assert [h.id for h in rerank_with_lambda(serial, 1.0)["q2"]] == [h.id for h in serial["q2"]]
    with pytest.raises(ConfigError, match="length_prior must be a number >= 0"):
        dhr(index, mode="parallel", length_prior=-0.1, document_encoder=encoder, passage_encoder=encoder)
    for mode in ("serial", "parallel"):
        with pytest.raises(ConfigError, match="lam must be a number >= 0, got nan"):
            dhr(index, mode=mode, lam=float("nan"), document_encoder=encoder, passage_encoder=encoder)


def test_length_prior_gate(index, encoder):
    """``length_prior_below``: the prior is added for the queries whose best passage score is below the gate, and
    left out (scores as without a prior, ``document_prior`` 0) for the others, in both modes and for any document
    score."""
    queries = encoder.encode_queries([q.text for q in QUESTIONS])
    best = (queries @ np.asarray(index.passage_vectors).T).max(axis=1)
    below = float(np.median(best))
    gated_on = best < below
    assert 0 < gated_on.sum() < len(QUESTIONS)  # the gate splits the questions: some on, some off
    common = dict(k2=len(index), lam=1.0, document="max", document_encoder=encoder, passage_encoder=encoder)
    with_prior = dhr(index, mode="parallel", length_prior=0.05, **common).transform(QUESTIONS)
    plain = dhr(index, mode="parallel", **common).transform(QUESTIONS)
    gated = dhr(index, mode="parallel", length_prior=0.05, length_prior_below=below, **common).transform(QUESTIONS)
    serial = dhr(index, k1=index.num_documents, length_prior=0.05, length_prior_below=below,
                 **common).transform(QUESTIONS)
    for on, query in zip(gated_on, QUESTIONS):
        expected = with_prior[query.id] if on else plain[query.id]
        hits = gated[query.id]
        assert [h.id for h in hits] == [h.id for h in expected]
        assert [h.score for h in hits] == pytest.approx([h.score for h in expected], abs=1e-5)
        assert [h.id for h in serial[query.id]] == [h.id for h in hits]  # serial reads the same best passage
        priors = [h.extras["document_prior"] for h in hits + serial[query.id]]
        assert (min(priors) > 0) if on else (max(priors) == 0)  # the added prior; every fixture document is long
    # a summary document score gates on the same best passage score (found by a scan of the passages)
    summary = dhr(index, mode="parallel", k2=5, lam=0.5, length_prior=0.05, length_prior_below=below,
                  document_encoder=encoder, passage_encoder=encoder).transform(QUESTIONS)
    assert [max(h.extras["document_prior"] for h in summary[q.id]) > 0 for q in QUESTIONS] == gated_on.tolist()
    with pytest.raises(ConfigError, match="length_prior_below must be a finite number"):
        dhr(index, mode="parallel", length_prior=0.05, length_prior_below=float("nan"), document_encoder=encoder,
            passage_encoder=encoder)
