"""The Python API given bad or unusual input, on a real corpus (400 SciFact abstracts, BM25): query ids that are not
strings, PyTerrier frames with missing ids, a query id given twice, fractional or conflicting relevances, missing
columns, and arguments of the wrong shape are one clear error (or, for a whole-number id, the id as a string) instead
of a traceback naming nothing or results silently wrong."""

from __future__ import annotations

import pandas as pd
import pytest

import sleuth
from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, QueryError

TOPIC = "vitamin d deficiency"


@pytest.fixture
def bm25(scifact_jsonl):
    return sleuth.open(scifact_jsonl, progress=False).pipeline("bm25", k=5)


@pytest.fixture
def relevant(bm25) -> list[str]:
    """BM25's top two documents for TOPIC, taken as its relevant documents."""
    return [hit.id for hit in bm25.search(TOPIC, k=2)]


def test_a_queries_frame_refuses_a_missing_or_float_id_and_an_id_with_two_texts(bm25):
    # before: the second text of an id was dropped without a word, a missing id became the key nan, 1.0 became '1.0'
    with pytest.raises(QueryError, match=r"row 1 of the queries frame: query id 'a' is given twice, with the texts "
                                         r"'vitamin d deficiency' and 'cancer'"):
        bm25(pd.DataFrame({"qid": ["a", "a"], "query": [TOPIC, "cancer"]}))
    with pytest.raises(QueryError, match=r"row 1 of the queries frame: qid (None|nan) is not an id"):
        bm25(pd.DataFrame({"qid": ["a", None], "query": [TOPIC, "cancer"]}))
    with pytest.raises(QueryError, match=r"row 0 of the queries frame: qid 1.0 is not an id"):
        bm25(pd.DataFrame({"qid": [1.0, 2.0], "query": [TOPIC, "cancer"]}))
    # the same id on several rows with one text (a results frame's layout) is one query; whole numbers are ids
    assert list(bm25(pd.DataFrame({"qid": ["a", "a"], "query": [TOPIC, TOPIC]}))) == ["a"]
    assert list(bm25(pd.DataFrame({"qid": [1, 2], "query": [TOPIC, "cancer"]}))) == ["1", "2"]


def test_query_ids_are_strings_as_in_qrels(bm25, relevant):
    # before: the Run was keyed by the int 1, and the experiment found no judged topic ("do the topic ids match?")
    assert list(bm25([Query(1, TOPIC)])) == ["1"]
    result = sleuth.Experiment([bm25], [Query(1, TOPIC)], {"1": {relevant[0]: 1}}, ["nDCG@10"]).run()
    assert result.aggregate["bm25"]["nDCG@10"] == pytest.approx(1.0)
    with pytest.raises(QueryError, match=r"query 2 of the list has the id None; a query id is a string"):
        bm25([Query("a", TOPIC), Query(None, "cancer")])  # before: a ranking under the key None
    with pytest.raises(QueryError, match=r"query 1 of the mapping has the id None"):
        bm25({None: TOPIC})  # before: the query 'None'
    with pytest.raises(QueryError, match="query id '1' is given twice"):
        bm25([Query(1, TOPIC), Query("1", "cancer")])


def test_a_qrels_frame_is_checked_like_qrels_given_in_python(bm25, relevant):
    from sleuth.pyterrier import qrels_frame

    def experiment(qids, docnos, labels):
        qrels = pd.DataFrame({"qid": qids, "docno": docnos, "label": labels})
        return sleuth.Experiment([bm25], {"1": TOPIC}, qrels, ["nDCG@10"]).run()

    first, second = relevant
    # before: 1.7 was taken as 1 (a dict's 1.7 is refused), NaN and 'x' were a ValueError naming nothing
    with pytest.raises(ConfigError, match=f"qrels of query '1', document '{first}': relevance 1.7 is not a whole"):
        experiment(["1"], [first], [1.7])
    with pytest.raises(ConfigError, match=f"document '{second}': relevance nan is not a whole number"):
        experiment(["1", "1"], [first, second], [1, float("nan")])
    with pytest.raises(ConfigError, match="relevance 'x' is not a whole number"):
        experiment(["1"], [first], ["x"])
    # before: the last row won without a word (nDCG@10 0.0 for a ranking whose first hit is judged relevant)
    with pytest.raises(ConfigError, match=f"row 1 of the qrels frame: query '1', document '{first}' is judged 0 "
                                          "here and 1 on an earlier row"):
        experiment(["1", "1"], [first, first], [1, 0])
    with pytest.raises(ConfigError, match=f"row 0 of the qrels frame: docno {float(first)!r} is not an id"):
        experiment(["1"], [float(first)], [1])  # before: the document '<id>.0', never retrieved
    # whole numbers (ints, a float column's 1.0), and a pair given twice with one label, are taken
    assert experiment([1, 1, 1], [first, first, second], [1.0, 1.0, 0.0]).aggregate["bm25"]["nDCG@10"] == 1.0
    with pytest.raises(ConfigError, match="relevance 1.5 is not a whole number"):
        qrels_frame({"1": {first: 1.5}})  # before: written as 1
    assert qrels_frame({1: {first: 2}}).to_dict("records") == [{"qid": "1", "docno": first, "label": 2}]


def test_pyterrier_frames_without_their_columns_and_non_stages_are_named(bm25):
    pt = pytest.importorskip("pyterrier")
    from sleuth.pyterrier import as_transformer, from_transformer, queries_frame

    with pytest.raises(ConfigError, match="as_transformer takes a sleuth Stage, got str; build it with "
                                          r"ws.pipeline\('bm25'\)"):
        as_transformer("bm25")  # before: AttributeError: 'str' object has no attribute 'name'
    transformer = as_transformer(bm25)
    with pytest.raises(QueryError, match=r"a queries frame needs the columns qid and query \(it has: qid\)"):
        transformer(pd.DataFrame({"qid": ["1"]}))  # before: KeyError: 'query'
    with pytest.raises(QueryError, match="a results frame needs the columns qid, query, docno and score "
                                         r"\(it has: qid, query, docno\)"):
        transformer(pd.DataFrame({"qid": ["1"], "query": [TOPIC], "docno": ["4983"]}))  # before: AttributeError
    with pytest.raises(QueryError, match="query '1' is empty"):
        transformer(pd.DataFrame({"qid": ["1"], "query": ["  "]}))  # before: an empty results frame, not a word
    with pytest.raises(ConfigError, match="from_transformer takes a PyTerrier transformer, got NoneType"):
        from_transformer(None)  # before: accepted, then a TypeError at the first query
    no_score = bm25 >> from_transformer(pt.apply.generic(lambda frame: frame.drop(columns=["score"])), name="drop")
    with pytest.raises(ConfigError, match="stage 'drop': the PyTerrier transformer returned a frame with the columns "
                                          "qid, query, docno, rank, title, text; a stage needs a results frame"):
        no_score(TOPIC)  # before: AttributeError: 'Pandas' object has no attribute 'score'
    # queries_frame takes queries in any form a stage does (before: anything but Queries was an AttributeError)
    assert queries_frame([TOPIC, "cancer"]).to_dict("list") == {"qid": ["q1", "q2"], "query": [TOPIC, "cancer"]}
    assert queries_frame({1: TOPIC}).to_dict("list") == {"qid": ["1"], "query": [TOPIC]}
    with pytest.raises(QueryError, match="query 'q2' is empty"):
        queries_frame([TOPIC, " "])


def test_experiment_arguments_of_the_wrong_shape_are_one_config_error(bm25, relevant):
    qrels, answers = {"1": {relevant[0]: 1}}, {"1": ["vitamin"]}
    with pytest.raises(ConfigError, match=r"got one stage, 'bm25' \(one pipeline: \[stage\]\)"):
        sleuth.Experiment(bm25, {"1": TOPIC}, qrels)  # before: TypeError: 'Sequential' object is not iterable
    with pytest.raises(ConfigError, match=r"got 'bm25' \(build it with ws.pipeline\('bm25'\)\)"):
        sleuth.Experiment("bm25", {"1": TOPIC}, qrels)  # before: "pipeline 'b' is a str"
    for measures in (None, 10):  # before: TypeError: '...' object is not iterable
        with pytest.raises(ConfigError, match="measures are a name or a list of names such as nDCG@10"):
            sleuth.Experiment([bm25], {"1": TOPIC}, qrels, measures)
    for ks in (5, [True], []):  # before: a TypeError, [True] was measured as "Top-True", [] failed in max()
        with pytest.raises(ConfigError, match=r"top-k cut-offs must be a list of positive integers, got (5|\[True\]|\[\])"):
            sleuth.Experiment([bm25], {"1": TOPIC}, answers=answers, ks=ks)
    assert sleuth.Experiment([bm25], {"1": TOPIC}, answers=answers, ks=(5, 1)).run().metrics == ["Top-1", "Top-5"]


def test_a_set_of_query_strings_is_refused_for_want_of_an_order(bm25):
    """Before: {"a", "b"} was numbered q1, q2 in the set's order, which changes from one process to the next (string
    hashing is salted), so a query's id differed between two runs of the same program."""
    with pytest.raises(QueryError, match="queries given as a set of strings would be numbered q1, q2"):
        bm25({TOPIC, "cancer"})
    assert list(bm25([TOPIC, "cancer"])) == ["q1", "q2"]
    assert list(bm25({Query("x", TOPIC)})) == ["x"]  # Queries carry their ids: a set of them is fine


def test_save_runs_into_a_file_is_a_config_error(bm25, relevant, tmp_path):
    """Before: FileExistsError (a traceback naming no argument) from inside the TREC writer."""
    result = sleuth.Experiment([bm25], {"1": TOPIC}, {"1": {relevant[0]: 1}}, ["RR"]).run()
    taken = tmp_path / "runs"
    taken.write_text("keep me")
    with pytest.raises(ConfigError, match="save_runs .*runs: is a file; give a folder"):
        result.save_runs(taken)
    assert taken.read_text() == "keep me"
    assert result.save_runs(tmp_path / "new" / "runs")["bm25"].read_text().startswith("1 Q0 ")


def test_candidates_in_any_documented_form_and_anything_else_named(bm25, relevant):
    """Before: a list (or a mapping of ids) as ``candidates`` was an AttributeError from inside the stage."""
    from sleuth.stages.run import Hit

    given = {"q1": [Hit(relevant[1], 9.0), Hit(relevant[0], 1.0)]}  # BM25 rescores them: relevant[0] first again
    assert bm25(TOPIC, candidates=given)["q1"][0].id == relevant[0]
    frame = pd.DataFrame({"qid": ["q1", "q1"], "docno": [relevant[1], relevant[0]], "score": [9.0, 1.0]})
    assert bm25(TOPIC, candidates=frame).ids("q1") == bm25(TOPIC, candidates=given).ids("q1")
    with pytest.raises(QueryError, match="candidates must be a sleuth Run .* got list"):
        bm25(TOPIC, candidates=[relevant[0]])
    with pytest.raises(QueryError, match=f"candidates of query 'q1' hold str '{relevant[0]}', not a sleuth Hit"):
        bm25(TOPIC, candidates={"q1": [relevant[0]]})
    with pytest.raises(QueryError, match=f"candidates of query 'q1' rank document '{relevant[0]}' twice"):
        bm25(TOPIC, candidates={"q1": [Hit(relevant[0], 1.0), Hit(relevant[0], 2.0)]})


def test_a_results_frame_ranking_a_document_twice_is_refused(bm25, relevant):
    """Before: both rows became hits, and the document was counted twice by the stage and by the measures."""
    twice = pd.DataFrame({"qid": ["q1", "q1"], "query": [TOPIC, TOPIC], "docno": [relevant[0]] * 2,
                          "score": [1.0, 2.0]})
    with pytest.raises(QueryError, match=f"row 1 of the results frame: document '{relevant[0]}' is ranked twice for "
                                         r"query 'q1' \(first on row 0\)"):
        bm25(TOPIC, candidates=twice)
    pytest.importorskip("pyterrier")
    from sleuth.pyterrier import as_transformer

    with pytest.raises(QueryError, match="is ranked twice for query 'q1'"):
        as_transformer(bm25)(twice)
    with pytest.raises(QueryError, match="row 0 of the results frame: score 'high' is not a number"):
        as_transformer(bm25)(twice.assign(score=["high", 1.0]))


def test_fuse_branches_and_a_next_stage_that_are_not_stages_are_named(bm25):
    """Before: Fuse([bm25, "dense"]) was an AttributeError ('str' object has no attribute 'name'), and Fuse("bm25")
    took the string's letters for branches."""
    with pytest.raises(ConfigError, match=r"fuse: branch 2 is str 'dense', not a sleuth stage; build it with "
                                          r"ws.pipeline\('dense'\)"):
        sleuth.Fuse([bm25, "dense"])
    with pytest.raises(ConfigError, match="fuse: branches are a list of stages, got str"):
        sleuth.Fuse("bm25")
    assert sleuth.Fuse([bm25, bm25 % 2])(TOPIC)["q1"]
    with pytest.raises(ConfigError, match=r"a >> b needs a stage on the right, got the string 'dense'; build it with "
                                          r"ws.pipeline\('dense'\)"):
        bm25 >> "dense"  # before: Python's "unsupported operand type(s) for >>"


def test_a_run_written_over_a_folder_is_named_and_nothing_is_written(bm25, tmp_path):
    """Before: a temporary file was made beside the folder, and the error named that file ("Is a directory")."""
    from sleuth.errors import StorageError

    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    with pytest.raises(StorageError, match=r"runs: is a folder, not a file; give a file name"):
        bm25(TOPIC).write_trec(out / "runs")
    assert [p.name for p in out.iterdir()] == ["runs"] and not any((out / "runs").iterdir())
