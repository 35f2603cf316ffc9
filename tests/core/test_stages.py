"""Stage composition, cut-off and fusion, on hand-computed rankings."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, InputError, QueryError
from sleuth.stages.base import Cutoff, Sequential, Stage
from sleuth.stages.fusion import Fuse, reciprocal_rank_fusion, weighted_fusion
from sleuth.stages.run import Hit, Run


class Fixed(Stage):
    """A first-stage fixture returning a fixed ranking for every query."""

    def __init__(self, name: str, scores: dict[str, float]):
        self.name, self.scores = name, scores

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        return Run.from_scores({q.id: self.scores for q in queries})


class Negate(Stage):
    """A reranker fixture: reverses the order of the candidates it receives."""

    name = "negate"

    def transform(self, queries, candidates=None):
        return Run({qid: [h.with_score(-h.score) for h in hits] for qid, hits in candidates.items()}).sorted()


def test_sequence_and_cutoff_compose():
    pipeline = Fixed("a", {"d1": 3.0, "d2": 2.0, "d3": 1.0}) >> Negate() % 2
    assert isinstance(pipeline, Sequential) and len(pipeline.stages) == 3
    run = pipeline("anything")
    assert run.ids("q1") == ["d3", "d2"]
    assert [h.score for h in run["q1"]] == [-1.0, -2.0]


def test_cutoff_rejects_bad_k():
    with pytest.raises(ConfigError, match="positive integer"):
        Cutoff(0)


def test_search_rejects_bad_k_and_composition_takes_only_stages():
    stage = Fixed("a", {"d1": 2.0, "d2": 1.0})
    assert [h.id for h in stage.search("x", k=1)] == ["d1"]
    for k in (0, -1, "2", True):
        with pytest.raises(ConfigError, match="search: k must be a positive integer"):
            stage.search("x", k=k)
    with pytest.raises(TypeError, match="unsupported operand"):
        stage >> 3


def test_rrf_matches_hand_computation():
    a = [Hit("x", 9), Hit("y", 5)]
    b = [Hit("y", 0.9), Hit("z", 0.1)]
    fused = reciprocal_rank_fusion([a, b], [1.0, 1.0], k=60)
    assert fused["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["x"] == pytest.approx(1 / 61)
    assert fused["z"] == pytest.approx(1 / 62)


def test_weighted_minmax_fusion_gives_missing_documents_the_floor():
    a = [Hit("x", 10), Hit("y", 5), Hit("w", 0)]     # minmax: x 1, y 0.5, w 0
    b = [Hit("y", 3), Hit("z", 1)]                    # minmax: y 1, z 0
    fused = weighted_fusion([a, b], [1.0, 2.0], "minmax")
    assert fused == pytest.approx({"x": 1.0, "y": 0.5 + 2.0, "w": 0.0, "z": 0.0})


def test_fuse_stage_orders_and_records_components():
    fuse = Fuse([Fixed("a", {"x": 2, "y": 1}), Fixed("b", {"y": 2, "z": 1})], method="rrf")
    run = fuse("q")
    assert run.ids("q1") == ["y", "x", "z"]
    assert run["q1"][0].extras["components"] == {"a": 1.0, "b": 2.0}


@pytest.mark.parametrize("kwargs,message", [({"method": "max"}, "unknown method"),
                                            ({"weights": [1.0]}, "1 weights for 2 branches"),
                                            ({"normalise": "rank", "method": "weighted"}, "unknown normalise"),
                                            ({"normalise": "zscore"}, "normalise 'zscore' applies to method weighted"),
                                            ({"weights": [1.0, float("nan")]}, "weights must be finite numbers"),
                                            ({"weights": [1.0, -1.0]}, "weights must be finite numbers >= 0"),
                                            ({"weights": [0, 0]}, "not all 0"),
                                            ({"rrf_k": 0}, "rrf_k must be a positive integer"),
                                            ({"depth": 2.5}, "depth must be a positive integer")])
def test_fuse_rejects_bad_config(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        Fuse([Fixed("a", {}), Fixed("b", {})], **kwargs)


@pytest.mark.parametrize("text", ["", "   ", "x" * 100_001])
def test_empty_or_huge_query_is_rejected(text):
    with pytest.raises(QueryError):
        Fixed("a", {"d": 1.0}).search(text)


def test_a_list_given_to_search_is_named_not_called_empty():
    with pytest.raises(QueryError, match="query 'q1' must be a string, got list"):
        Fixed("a", {"d": 1.0}).search(["two", "queries"])


def test_a_list_of_non_strings_or_bytes_is_named_as_such():
    """Before: ``pipeline([1, 2])`` and ``pipeline(b"vitamin")`` (bytes iterate as ints) said "query 'q1' must be a
    string, got int (several queries: call the pipeline with a list)": it had been called with a list."""
    pipeline = Fixed("a", {"d": 1.0}) % 1
    with pytest.raises(QueryError, match=r"^query 2 of the list is int 7, not a string or a sleuth.Query$"):
        pipeline(["vitamin d", 7])
    with pytest.raises(QueryError, match=r"queries must be a string, .*; got bytes$"):
        pipeline(b"vitamin d")


def test_a_pipeline_given_strings_in_transform_says_how_to_pass_them():
    pipeline = Fixed("a", {"d": 1.0}) % 1  # a Sequential, what load_pipeline and ws.pipeline return
    with pytest.raises(QueryError, match="transform takes sleuth.Query objects, got str 'two'"):
        pipeline.transform(["two", "queries"])  # was: AttributeError 'str' object has no attribute 'text'
    assert list(pipeline(["two", "queries"])) == ["q1", "q2"]


def test_a_pipeline_takes_an_id_to_text_mapping_and_a_pyterrier_frame():
    """Before: ``pipeline({"c7": "text"})`` searched for the text "c7" (a dict iterates over its keys) and answered
    an empty ranking without a word; a PyTerrier topics frame searched for its column names; ``pipeline(5)`` was a
    TypeError from deep inside."""
    pandas = pytest.importorskip("pandas")
    pipeline = Fixed("a", {"d": 1.0}) % 1
    assert list(pipeline({"c7": "vitamin d", "c9": "tuberculosis"})) == ["c7", "c9"]
    assert list(pipeline(pandas.DataFrame({"qid": ["t1", "t2"], "query": ["a", "b"]}))) == ["t1", "t2"]
    with pytest.raises(QueryError, match=r"a queries frame needs the columns qid and query \(it has: id, text\)"):
        pipeline(pandas.DataFrame({"id": ["t1"], "text": ["a"]}))
    with pytest.raises(QueryError, match="query 'c7' is empty"):
        pipeline({"c7": " "})
    with pytest.raises(QueryError, match=r"queries must be a string, a Query, a list of them, an \{id: text\} "
                                         r"mapping or a frame with qid and query columns; got int"):
        pipeline(5)


def test_a_query_that_is_not_unicode_text_and_a_cutoff_without_a_ranking_are_refused():
    """Before: a query holding a lone surrogate (a command-line argument that is not UTF-8) searched for nothing;
    a Cutoff run first answered every query with no hits."""
    with pytest.raises(QueryError, match="query 'q1' is not valid text: character 4 is a lone surrogate"):
        Fixed("a", {"d": 1.0}).search("caf\udce9")
    with pytest.raises(ConfigError, match=r"cutoff\(2\) cuts the ranking of an earlier stage"):
        Cutoff(2)("vitamin d")
    assert list((Fixed("a", {"d": 1.0, "e": 0.5}) % 1)("vitamin d")["q1"]) == [Hit("d", 1.0)]


def test_a_query_id_given_twice_is_refused():
    """Before: ``pipeline([Query("a", ...), Query("a", ...)])`` returned one ranking for 'a' and the other query's
    results were lost without a word (a Run holds one ranking per id)."""
    pipeline = Fixed("a", {"d": 1.0}) % 1
    with pytest.raises(QueryError, match=r"^query id 'a' is given twice \(queries 1 and 3\)"):
        pipeline([Query("a", "vitamin d"), Query("b", "cancer"), Query("a", "tuberculosis")])
    assert list(pipeline([Query("a", "vitamin d"), Query("b", "vitamin d")])) == ["a", "b"]  # same text, two ids


@pytest.mark.parametrize("text, message", [
    ("q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n",
     r"run\.txt:2: document 'd1' ranked twice for query 'q1' \(first on line 1\)"),
    ("q1 Q0 d1 1 one t\n", r"run\.txt:1: score 'one' is not a number"),
])
def test_a_trec_run_with_a_repeated_document_or_a_bad_score_is_refused(tmp_path, text, message):
    """Before: a document ranked twice for one query kept its last score silently (trec_eval refuses such a run)."""
    (tmp_path / "run.txt").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=message):
        Run.read_trec(tmp_path / "run.txt")


def test_a_missing_trec_run_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="nothing.run: file not found"):  # was a FileNotFoundError traceback
        Run.read_trec(tmp_path / "nothing.run")


def test_trec_run_roundtrip(tmp_path):
    run = Run.from_scores({"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 0.5}})
    run.write_trec(tmp_path / "run.txt", tag="t")
    again = Run.read_trec(tmp_path / "run.txt")
    assert again.scores() == run.scores()


def test_max_passage_measures_a_window_split_corpus_against_document_qrels():
    """A corpus split in 60-word windows ranks passages ('21257564#2'), which document qrels never judge: every
    figure was 0 and no stage grouped them. max_passage gives each document once, at its best passage."""
    import sleuth
    from sleuth.corpus.bundled import bundled_dataset_dir
    from sleuth.pipelines.config import validate_pipeline

    folder = bundled_dataset_dir()
    ws = sleuth.open(folder, splitter="window", window_words=60, progress=False)
    queries = sleuth.read_queries(folder)[:60]
    qrels = {q.id: sleuth.read_qrels(folder)[q.id] for q in queries}
    passages = ws.pipeline("bm25", k=100)
    documents = passages >> ws.pipeline("max_passage")
    result = sleuth.Experiment([("passages", passages), ("documents", documents)], queries, qrels,
                               ["nDCG@10"], same_depth=False).run()
    assert result.aggregate["passages"]["nDCG@10"] == 0.0 and result.aggregate["documents"]["nDCG@10"] > 0.5
    ranked = documents.transform(queries[:5])
    for query in queries[:5]:
        ids = ranked.ids(query.id)
        first = passages.transform([query]).get(query.id)[0]
        assert len(ids) == len(set(ids)) and "#" not in "".join(ids)
        top = ranked[query.id][0]
        assert (top.id, top.score, top.extras["passage"]) == (first.doc_id, first.score, first.id)
    with pytest.raises(ConfigError, match="stage 1 'max_passage': works on the ranking of an earlier stage"):
        validate_pipeline("max_passage")
