"""sleuth.eval: IR measures, answer accuracy, significance tests and experiments, on hand-computed cases."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence

import pytest
from rich.console import Console

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, InputError
from sleuth.eval import (
    Experiment,
    ExperimentResult,
    answer_hits,
    evaluate,
    has_answer,
    holm,
    paired_randomisation,
    paired_ttest,
    parse_measures,
    per_query,
    tokenize,
    top_k_accuracy,
)
from sleuth.paths import shared_data_dir
from sleuth.stages.base import Stage
from sleuth.stages.run import Hit, Run

# q1 ranks d3 (judged 0), d1 (2), u1 (unjudged), d2 (1); d4 (1) is never retrieved.
# q2 ranks d5 (1) third. q3 is judged but missing from the run; q9 is in the run but not judged.
QRELS = {"q1": {"d1": 2, "d2": 1, "d3": 0, "d4": 1}, "q2": {"d5": 1}, "q3": {"d6": 1}}
RUN = Run({
    "q1": [Hit("d3", 4.0), Hit("d1", 3.0), Hit("u1", 2.0), Hit("d2", 1.0)],
    "q2": [Hit("u2", 3.0), Hit("u3", 2.0), Hit("d5", 1.0)],
    "q9": [Hit("d1", 1.0)],
})
# pytrec_eval's nDCG: gain = relevance, discount = log2(rank + 1).
NDCG_Q1 = (2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3) + 1 / math.log2(4))
NDCG_Q2 = (1 / math.log2(4)) / 1


def test_parse_measures_names_and_errors():
    measures = parse_measures(["nDCG@10", "R@100", "RR", "AP", "P@10", "RR@10", "nDCG@10"])
    assert [str(m) for m in measures] == ["nDCG@10", "R@100", "RR", "AP", "P@10", "RR@10"]
    assert [str(m) for m in parse_measures("AP")] == ["AP"]
    # PyTerrier's and trec_eval's spellings, and ir_measures' names in any case (before: "unknown measure")
    lenient = ["ndcg@10", "ndcg_cut_10", "ndcg_cut.10", "map", "recip_rank", "mrr@10", "recall_100", "P_10", "r@100"]
    assert [str(m) for m in parse_measures(lenient)] == ["nDCG@10", "AP", "RR", "RR@10", "R@100", "P@10"]
    assert [str(m) for m in parse_measures(["success@10", "bpref", "judged@10"])] == ["Success@10", "Bpref",
                                                                                       "Judged@10"]
    for bad in ("nDCG@", "Foo@3", ""):
        with pytest.raises(ConfigError, match=f"'{bad}'"):
            parse_measures(["RR", bad])
    for bad in ("nDCG@0", "P@0", "R@1.5", "nDCG(cutoff=0)"):  # before: nDCG@0 aborted the process in pytrec_eval's C
        with pytest.raises(ConfigError, match=r"cutoff must be a whole number of at least 1"):
            parse_measures(["RR", bad])


def test_per_query_values_match_hand_computation():
    values = per_query(RUN, QRELS, ["nDCG@10", "RR", "P@5", "R@2", "R@100", "AP"])
    assert set(values) == {"nDCG@10", "RR", "P@5", "R@2", "R@100", "AP"}
    expected = {
        "nDCG@10": {"q1": NDCG_Q1, "q2": NDCG_Q2, "q3": 0.0},
        "RR": {"q1": 1 / 2, "q2": 1 / 3, "q3": 0.0},
        "P@5": {"q1": 2 / 5, "q2": 1 / 5, "q3": 0.0},
        "R@2": {"q1": 1 / 3, "q2": 0.0, "q3": 0.0},
        "R@100": {"q1": 2 / 3, "q2": 1.0, "q3": 0.0},
        "AP": {"q1": (1 / 2 + 2 / 4) / 3, "q2": 1 / 3, "q3": 0.0},
    }
    for name, by_query in expected.items():
        assert list(values[name]) == ["q1", "q2", "q3"], name  # the unjudged q9 is ignored
        for qid, value in by_query.items():
            assert values[name][qid] == pytest.approx(value, abs=1e-9), (name, qid)


def test_query_missing_from_run_counts_as_zero():
    judged_and_run = {qid: QRELS[qid] for qid in ("q1", "q2")}
    without_q3 = evaluate(RUN, judged_and_run, ["nDCG@10", "RR"])
    with_q3 = evaluate(RUN, QRELS, ["nDCG@10", "RR"])
    assert without_q3["RR"] == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert with_q3["RR"] == pytest.approx((1 / 2 + 1 / 3) / 3)
    assert with_q3["nDCG@10"] == pytest.approx((NDCG_Q1 + NDCG_Q2) / 3)
    # an empty ranking, or an empty run, is a zero too
    assert evaluate(Run({"q1": []}), QRELS, ["RR"]) == {"RR": 0.0}
    assert evaluate(Run(), QRELS, ["RR", "AP"]) == {"RR": 0.0, "AP": 0.0}


def test_ranking_is_evaluated_in_run_order_not_by_tied_scores():
    # pytrec_eval alone would break the tie by doc id (descending) and put "u2" first.
    tied = Run({"q2": [Hit("d5", 1.0), Hit("u2", 1.0)]})
    assert evaluate(tied, {"q2": QRELS["q2"]}, ["RR"]) == {"RR": 1.0}


def test_trec_run_round_trip(tmp_path):
    path = tmp_path / "runs" / "demo.run"
    RUN.write_trec(path, tag="demo")
    first = path.read_text().splitlines()[0].split()
    assert first == ["q1", "Q0", "d3", "1", "4.0", "demo"]  # the float's shortest text
    back = Run.read_trec(path)
    assert {qid: back.ids(qid) for qid in back} == {qid: RUN.ids(qid) for qid in RUN}
    assert back.scores() == RUN.scores()
    assert evaluate(back, QRELS, ["nDCG@10", "AP"]) == evaluate(RUN, QRELS, ["nDCG@10", "AP"])



@pytest.mark.parametrize("run, tag, named", [
    (Run({"q1": [Hit("Albert Einstein", 1.0)]}), "demo", "document id 'Albert Einstein' has whitespace"),
    (Run({"q 1": [Hit("d1", 1.0)]}), "demo", "query id 'q 1' has whitespace"),
    (Run({"q1": [Hit("d1", 1.0)]}), "my run", "tag 'my run' has whitespace"),
])
def test_a_trec_run_file_refuses_what_it_cannot_hold(tmp_path, run, tag, named):
    """Before: `Albert Einstein` was written as two columns, a line that Run.read_trec (and trec_eval) refuse, over
    the file that was there."""
    path = tmp_path / "demo.run"
    RUN.write_trec(path, tag="demo")
    kept = path.read_text()
    with pytest.raises(InputError, match=f"demo.run: cannot write a TREC run file: {named}"):
        run.write_trec(path, tag=tag)
    assert path.read_text() == kept

# --- answers ------------------------------------------------------------------------------------------------------

def test_tokenize_like_dpr_simple_tokenizer():
    assert tokenize("In 1945, the U.S. army") == ["in", "1945", ",", "the", "u", ".", "s", ".", "army"]
    assert tokenize("Café") == ["cafe\u0301"]  # NFD: the accent is a combining mark inside the token


def test_has_answer_string_mode():
    text = "He was born in 1945, in Paris."
    assert has_answer(text, ["1945"])
    assert not has_answer(text, ["194"])
    assert has_answer(text, ["nothing", "PARIS"])
    assert has_answer("the U.S. army", ["U.S."])
    assert has_answer("President Barack Obama said", ["barack obama"])
    assert not has_answer("President Barack Obama said", ["Obama Barack"])
    # composed and decomposed accents, any case, match; a missing accent does not (as in DPR)
    assert has_answer("Le Caf\u00e9 de Flore", ["CAFE\u0301 DE FLORE"])
    assert not has_answer("Le Café de Flore", ["Cafe de Flore"])
    assert not has_answer(text, [""])
    assert not has_answer(text, [])


def test_has_answer_regex_mode():
    text = "He was born in 1945, in Paris."
    assert has_answer(text, [r"19\d\d"], mode="regex")
    assert has_answer(text, [r"^he was"], mode="regex")
    assert not has_answer(text, [r"18\d\d"], mode="regex")
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        has_answer(text, ["(unclosed"], mode="regex")
    with pytest.raises(ConfigError, match="match mode"):
        has_answer(text, ["1945"], mode="fuzzy")


PASSAGES = {"p1": "The war began in 1939.", "p2": "It ended in 1945.", "p3": "Nothing relevant here."}
ANSWERS = {"qa": ["1945"], "qb": ["Ottawa"], "qc": ["1945"]}
ANSWER_RUN = Run({
    "qa": [Hit("p1", 2.0), Hit("p2", 1.0)],                                     # answer at rank 2
    "qb": [Hit("p3", 2.0, text="Ottawa is the capital of Canada."), Hit("p1", 1.0)],  # own text wins: rank 1
    # qc has no hits at all
})


def test_answer_hits_and_top_k_accuracy():
    assert answer_hits(ANSWER_RUN, PASSAGES, ANSWERS) == {"qa": 2, "qb": 1, "qc": None}
    accuracy = top_k_accuracy(ANSWER_RUN, PASSAGES, ANSWERS, ks=(5, 1, 2))
    assert accuracy == {"Top-1": pytest.approx(1 / 3), "Top-2": pytest.approx(2 / 3), "Top-5": pytest.approx(2 / 3)}
    assert list(accuracy) == ["Top-1", "Top-2", "Top-5"]
    assert top_k_accuracy(ANSWER_RUN, PASSAGES.__getitem__, ANSWERS, ks=(1, 2)) == {
        "Top-1": pytest.approx(1 / 3), "Top-2": pytest.approx(2 / 3)}
    with pytest.raises(InputError, match="'p2'"):
        answer_hits(ANSWER_RUN, {"p1": PASSAGES["p1"]}, ANSWERS)
    with pytest.raises(ConfigError):
        top_k_accuracy(ANSWER_RUN, PASSAGES, ANSWERS, ks=(0,))


# --- significance -------------------------------------------------------------------------------------------------

BASE = [0.10, 0.25, 0.30, 0.42, 0.51, 0.22, 0.35, 0.18, 0.40, 0.28]
BETTER = [0.41, 0.52, 0.66, 0.70, 0.83, 0.49, 0.68, 0.45, 0.69, 0.61]


def test_paired_ttest():
    assert paired_ttest(BASE, BASE) == 1.0
    assert paired_ttest(BASE, BETTER) < 0.05
    assert paired_ttest(BASE, BETTER) == paired_ttest(BETTER, BASE)
    assert paired_ttest([0.2, 0.4, 0.3], [0.5, 0.1, 0.35]) > 0.5
    assert paired_ttest([0.5], [0.9]) == 1.0  # a single pair proves nothing
    with pytest.raises(InputError):
        paired_ttest([0.1, 0.2], [0.1])


def test_paired_randomisation_and_holm():
    assert paired_randomisation(BASE, BASE) == 1.0
    p = paired_randomisation(BASE, BETTER, samples=2000, seed=7)
    assert p < 0.05 and p == paired_randomisation(BASE, BETTER, samples=2000, seed=7)
    assert paired_randomisation([0.2, 0.4, 0.3], [0.5, 0.1, 0.35], samples=2000) > 0.5
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


# --- experiments --------------------------------------------------------------------------------------------------

DOCS = {
    "d1": "the capital of france is paris",
    "d2": "paris hilton is a celebrity",
    "d3": "berlin is the capital of germany",
    "d4": "the capital of canada is ottawa",
}
QUERIES = [Query("1", "capital of france"), Query("2", "capital germany"), Query("3", "ottawa canada capital")]
EXP_QRELS = {"1": {"d1": 1}, "2": {"d3": 1}, "3": {"d4": 1}}
EXP_ANSWERS = {"1": ["Paris"], "2": ["Berlin"], "3": ["Ottawa"]}


class TermOverlap(Stage):
    """Scores each document by how many query terms it contains (ties by id)."""

    name = "overlap"

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        return Run.from_scores({q.id: {d: float(sum(t in text.split() for t in q.text.split()))
                                       for d, text in DOCS.items()} for q in queries})


class ById(Stage):
    """Ignores the query: every ranking is d1, d2, d3, d4."""

    name = "by-id"

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        return Run({q.id: [Hit(d, -i) for i, d in enumerate(sorted(DOCS))] for q in queries})


def test_experiment_measures_answers_table_and_dict(tmp_path):
    result = Experiment([TermOverlap(), ById()], QUERIES, qrels=EXP_QRELS, measures=["RR", "nDCG@10"],
                        answers=EXP_ANSWERS, texts=DOCS, ks=(1, 3)).run()
    assert result.names == ["overlap", "by-id"] and result.baseline == "overlap"
    assert result.metrics == ["RR", "nDCG@10", "Top-1", "Top-3"]
    # overlap ranks the right document first for every query; by-id finds them at ranks 1, 3, 4
    assert result.aggregate["overlap"] == {"RR": 1.0, "nDCG@10": 1.0, "Top-1": 1.0, "Top-3": 1.0}
    assert result.aggregate["by-id"]["RR"] == pytest.approx((1 + 1 / 3 + 1 / 4) / 3)
    assert result.aggregate["by-id"]["Top-1"] == pytest.approx(1 / 3)
    assert result.aggregate["by-id"]["Top-3"] == pytest.approx(2 / 3)
    assert result.per_query["by-id"]["RR"] == {"1": 1.0, "2": pytest.approx(1 / 3), "3": 0.25}
    assert result.aggregate["by-id"] == {**evaluate(result.runs["by-id"], EXP_QRELS, ["RR", "nDCG@10"]),
                                         **top_k_accuracy(result.runs["by-id"], DOCS, EXP_ANSWERS, ks=(1, 3))}
    assert "overlap" not in result.pvalues
    assert set(result.pvalues["by-id"]) == set(result.metrics)
    assert result.pvalues["by-id"]["RR"] == pytest.approx(paired_ttest([1, 1, 1], [1, 1 / 3, 1 / 4]))
    assert result.seconds["overlap"] >= 0 and result.num_queries == 3

    console = Console(record=True, width=200)
    console.print(result.to_table())
    text = console.export_text()
    assert "overlap" in text and "by-id" in text and "nDCG@10 p" in text and "Top-3" in text
    assert "1.0000" in text and "0.5278" in text  # by-id's RR, 4 decimals
    assert "base" in text and f"▼ {result.pvalues['by-id']['RR']:.4f}" in text  # lower than the baseline
    assert f"-{result.pvalues['by-id']['RR']:.4f}" not in text  # a p-value, never a signed number

    data = json.loads(json.dumps(result.to_dict()))
    assert data["baseline"] == "overlap" and data["pipelines"][0]["pvalues"] == {}
    assert data["pipelines"][0]["comparisons"] == {}
    rr = data["pipelines"][1]["comparisons"]["RR"]
    assert rr["p_value"] == result.pvalues["by-id"]["RR"] and rr["direction"] == "lower"
    assert rr["difference"] == pytest.approx((1 + 1 / 3 + 1 / 4) / 3 - 1) and rr["significant"] is False
    assert data["pipelines"][1]["measures"]["Top-1"] == pytest.approx(1 / 3)
    assert data["per_query"]["by-id"]["RR"]["3"] == 0.25

    paths = result.save_runs(tmp_path)
    assert sorted(p.name for p in paths.values()) == ["by-id.run", "overlap.run"]
    assert Run.read_trec(paths["overlap"]).ids("1") == result.runs["overlap"].ids("1")


def test_experiment_restricts_to_its_queries_and_checks_config():
    qrels = {**EXP_QRELS, "other": {"d2": 1}}  # judged, but not an experiment query: not counted as a zero
    result = Experiment({"a": TermOverlap()}, QUERIES, qrels=qrels, measures=["RR"], baseline=None).run()
    assert result.aggregate == {"a": {"RR": 1.0}} and result.pvalues == {}
    assert [column.header for column in result.to_table().columns] == ["pipeline", "RR", "s", "q/s"]
    with pytest.raises(ConfigError, match="qrels .* or answers"):
        Experiment([TermOverlap()], QUERIES)
    with pytest.raises(ConfigError, match="baseline"):
        Experiment([TermOverlap(), ById()], QUERIES, qrels=EXP_QRELS, baseline="bm25")
    with pytest.raises(ConfigError, match="named 'overlap'"):
        Experiment([TermOverlap(), TermOverlap()], QUERIES, qrels=EXP_QRELS)
    with pytest.raises(ConfigError, match="'Foo'"):
        Experiment([TermOverlap()], QUERIES, qrels=EXP_QRELS, measures=["Foo"])


def test_experiment_takes_pyterrier_frames_and_names_what_it_cannot_take():
    """Before: qrels given as PyTerrier's frame (qid, docno, label) or as triples were an AttributeError ('list' object
    has no attribute 'items'), and a pipeline given by name read "pipeline '('b', 'm', '2', '5')' is a NoneType"."""
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame([(qid, doc, rel) for qid, docs in EXP_QRELS.items() for doc, rel in docs.items()],
                             columns=["qid", "docno", "label"])
    topics = pandas.DataFrame({"qid": [q.id for q in QUERIES], "query": [q.text for q in QUERIES]})
    from_frames = Experiment([TermOverlap(), ById()], topics, qrels=frame, measures=["RR"]).run()
    assert from_frames.aggregate == Experiment([TermOverlap(), ById()], QUERIES, qrels=EXP_QRELS,
                                               measures=["RR"]).run().aggregate
    with pytest.raises(ConfigError, match=r"qrels must be \{query id: \{doc id: relevance\}\} or a frame with qid, "
                                          r"docno and label columns; got list"):
        Experiment([TermOverlap()], QUERIES, qrels=[("1", "d1", 1)])
    with pytest.raises(ConfigError, match=r"qrels frame needs the columns qid, docno and label \(it has: q, d\)"):
        Experiment([TermOverlap()], QUERIES, qrels=pandas.DataFrame({"q": ["1"], "d": ["d1"]}))
    with pytest.raises(ConfigError, match=r"pipeline 'bm25' is a str, not a Stage or a \(name, stage\) pair; build "
                                          r"it with ws.pipeline\('bm25'\)"):
        Experiment(["bm25"], QUERIES, qrels=EXP_QRELS)


def test_experiment_checks_qrels_given_in_python_and_alpha():
    """Before: a relevance 'x' was a ValueError from int(), 1.5 was scored as 1 without a word, {qid: [doc ids]} an
    AttributeError, an int document id a TypeError from pytrec_eval naming neither, and alpha=5 marked every
    difference significant."""
    (qid, judged), = list(EXP_QRELS.items())[:1]
    docid = next(iter(judged))
    for qrels, message in (({qid: {docid: "x"}}, f"query '{qid}', document '{docid}': relevance 'x' is not a whole"),
                           ({qid: {docid: 1.5}}, "relevance 1.5 is not a whole number"),
                           ({qid: [docid]}, f"qrels of query '{qid}' must be {{doc id: relevance}}, got list"),
                           ({qid: {None: 1}}, f"qrels: document id of query '{qid}' None is not a string")):
        with pytest.raises(ConfigError, match=re.escape(message)):
            Experiment([TermOverlap()], QUERIES, qrels=qrels, measures=["RR"])
    as_numbers = {int(qid): {d: float(r) for d, r in docs.items()} for qid, docs in EXP_QRELS.items()}
    assert (Experiment([TermOverlap()], QUERIES, qrels=as_numbers, measures=["RR"]).run().aggregate
            == Experiment([TermOverlap()], QUERIES, qrels=EXP_QRELS, measures=["RR"]).run().aggregate)
    with pytest.raises(ConfigError, match="relevance 1.5 is not a whole number"):
        evaluate(Run({"1": [Hit("d1", 1.0)]}), {"1": {"d1": 1.5}}, ["RR"])
    with pytest.raises(ConfigError, match="alpha .* between 0 and 1, got 5"):
        Experiment([TermOverlap()], QUERIES, qrels=EXP_QRELS, alpha=5)


# --- real data ----------------------------------------------------------------------------------------------------

def read_qrels(path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            qid, _, docid, rel = line.split()
            qrels.setdefault(qid, {})[docid] = int(rel)
    return qrels


def test_perfect_run_on_trec_dl19_scores_one():
    path = shared_data_dir() / "trec-dl19" / "qrels.dl19-passage.txt"
    if not path.exists():
        pytest.skip(f"{path} not available")
    qrels = read_qrels(path)
    assert len(qrels) == 43 and sum(map(len, qrels.values())) == 9260
    perfect = Run.from_scores({qid: {d: float(rel) for d, rel in docs.items()} for qid, docs in qrels.items()})
    scores = evaluate(perfect, qrels, ["nDCG@10", "RR"])
    assert scores["nDCG@10"] == pytest.approx(1.0) and scores["RR"] == pytest.approx(1.0)
    worst = Run({qid: hits[::-1] for qid, hits in perfect.items()})
    assert evaluate(worst, qrels, ["nDCG@10"])["nDCG@10"] < 0.5
    missing_one = Run({qid: hits for qid, hits in perfect.items() if qid != next(iter(qrels))})
    assert evaluate(missing_one, qrels, ["nDCG@10"])["nDCG@10"] == pytest.approx(42 / 43)


def test_nq_gold_passages_hold_their_answers():
    folder = shared_data_dir() / "nq"
    if not (folder / "questions.jsonl").exists():
        pytest.skip(f"{folder} not available")
    with open(folder / "corpus.jsonl", encoding="utf-8") as handle:
        texts = {row["_id"]: row["text"] for row in map(json.loads, handle)}
    with open(folder / "questions.jsonl", encoding="utf-8") as handle:
        questions = [json.loads(line) for line in handle]
    answers = {q["id"]: q["answers"] for q in questions}
    gold = Run({q["id"]: [Hit(q["gold_passage"], 1.0)] for q in questions})
    assert top_k_accuracy(gold, texts, answers, ks=(1,)) == {"Top-1": 1.0}
    # another question's gold passage rarely holds this question's answer
    shifted = Run({q["id"]: [Hit(questions[i - 1]["gold_passage"], 1.0)] for i, q in enumerate(questions)})
    assert top_k_accuracy(shifted, texts, answers, ks=(1,))["Top-1"] < 0.1


def test_table_marks_direction_apart_from_the_p_value():
    """A higher, significant mean reads "▲ 0.0166*", a lower one "▼ ...", never a signed number."""
    per_query = {"base": {"m": {"1": 0.1, "2": 0.2}}, "up": {"m": {"1": 0.5, "2": 0.6}},
                 "down": {"m": {"1": 0.0, "2": 0.1}}}
    result = ExperimentResult(names=["base", "up", "down"], metrics=["m"], runs={}, per_query=per_query,
                              seconds={"base": 1.0, "up": 1.0, "down": 1.0}, num_queries=2,
                              pvalues={"up": {"m": 0.0166}, "down": {"m": 0.2}}, baseline="base")
    assert [result.marker(name, "m") for name in result.names] == ["base", "▲ 0.0166*", "▼ 0.2000"]
    assert result.comparison("up", "m") == {"p_value": 0.0166, "difference": pytest.approx(0.4),
                                            "direction": "higher", "significant": True}


def test_experiment_names_and_a_cut_that_changes_a_deeper_measure_are_said():
    """`names=` as PyTerrier's; and where a run of depth 2 beside whole ones cuts them all, the note names the
    measures that read deeper (an R@4 column held R@2 figures, said only by the depths)."""
    shallow = ById() % 2
    result = Experiment([ById(), shallow], QUERIES, qrels=EXP_QRELS, measures=["R@4", "R@1", "AP"],
                        names=["whole", "top2"]).run()
    assert result.names == ["whole", "top2"]
    note = next(note for note in result.notes if "common depth 2" in note)
    assert "so R@4, AP are measured on the top 2 of every run" in note and "R@1" not in note.split("so ")[1]
    assert result.aggregate["whole"]["R@4"] == pytest.approx(1 / 3)  # only d1 in the top 2 (d3, d4 at 3 and 4)
    whole = Experiment([ById(), shallow], QUERIES, qrels=EXP_QRELS, measures=["R@4"], names=["whole", "top2"],
                       same_depth=False).run()
    assert whole.aggregate["whole"]["R@4"] == 1.0
    with pytest.raises(ConfigError, match="one name per pipeline, 2"):
        Experiment([ById(), shallow], QUERIES, qrels=EXP_QRELS, names=["one"])
