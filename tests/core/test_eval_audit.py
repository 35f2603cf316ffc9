"""What the evaluation audit of session 36 found, each mended, on real Vaswani qrels and BM25: a pipeline that
returns nothing no longer cuts every other run to depth 0, a TREC run file keeps tiny scores in order, a score that
is not a finite number is refused where it would be measured or fused, a misspelt measure parameter is one error
line, and counts (NumRet, NumRel) are summed as trec_eval and ir_measures give them."""

from __future__ import annotations

import ir_measures
import pytest

from sleuth.corpus.qrels import read_qrels
from sleuth.corpus.trec import read_trec_documents, read_trec_topics
from sleuth.errors import ConfigError, InputError
from sleuth.eval.experiment import Experiment
from sleuth.eval.measures import evaluate, parse_measures
from sleuth.index.bm25 import BM25Index
from sleuth.stages.fusion import Fuse
from sleuth.stages.retrieve import BM25Retrieve
from sleuth.stages.run import Hit, Run
from sleuth.stages.run_file import RunFile


@pytest.fixture(scope="module")
def vaswani(data_dir):
    folder = data_dir / "vaswani"
    from sleuth.corpus.model import Passage

    passages = [Passage.from_document(d) for d in read_trec_documents(folder / "doc-text.trec")]
    topics = list(read_trec_topics(folder / "query-text.trec"))[:20]
    qrels = {qid: docs for qid, docs in read_qrels(folder / "qrels").items() if qid in {t.id for t in topics}}
    return BM25Retrieve(BM25Index.build(passages, show_progress=False), k=100), topics, qrels


def test_a_pipeline_that_returns_nothing_does_not_zero_the_table(vaswani):
    """Before: its depth 0 was the common depth, so BM25's nDCG@10 read 0.0000 beside it."""
    bm25, topics, qrels = vaswani
    nothing = RunFile(Run({"elsewhere": [Hit("d", 1.0)]}), name="other")
    result = Experiment({"bm25": bm25, "other": nothing}, topics, qrels=qrels, measures=["nDCG@10", "AP"]).run()
    alone = evaluate(bm25.transform(topics), qrels, ["nDCG@10", "AP"])
    assert result.aggregate["bm25"] == pytest.approx(alone) and alone["nDCG@10"] > 0.3
    assert result.aggregate["other"]["nDCG@10"] == 0.0


def test_a_trec_run_file_keeps_tiny_scores_in_order(tmp_path):
    """Before: 9 fixed decimals wrote every score below 5e-10 as 0.000000000 (a fused run with weights 1e-10 read
    back unranked)."""
    run = Run({"1": [Hit("a", 3e-10), Hit("b", 2e-10), Hit("c", 1e-10)], "2": [Hit("x", 0.1 + 0.2)]})
    run.write_trec(tmp_path / "tiny.trec")
    back = Run.read_trec(tmp_path / "tiny.trec")
    assert back.scores() == run.scores() and back.ids("1") == ["a", "b", "c"]


def test_a_score_that_is_not_finite_is_refused(tmp_path, vaswani):
    """Before: a NaN in a Python run was measured (its query's order arbitrary) and fused (the whole query NaN);
    inf read from a run file failed later, naming the fused output."""
    bm25, topics, qrels = vaswani
    nan = RunFile(Run({topics[0].id: [Hit("1", float("nan")), Hit("2", 1.0)]}), name="nan")
    with pytest.raises(ConfigError, match=r"pipeline 'nan' scored document '1' of query '1' nan, not a finite"):
        Experiment({"nan": nan}, topics[:1], qrels=qrels).run()
    with pytest.raises(ConfigError, match=r"fuse: branch 'nan' scored document '1' of query '1' nan"):
        Fuse([nan, RunFile(Run({topics[0].id: [Hit("2", 1.0)]}), name="ok")], method="weighted",
             weights=[1.0, 1.0]).transform(topics[:1])
    (tmp_path / "inf.trec").write_text("1 Q0 a 1 inf t\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"inf.trec:1: score 'inf' is not finite"):
        Run.read_trec(tmp_path / "inf.trec")


def test_a_misspelt_measure_parameter_is_one_error_line(sleuth, data_dir, tmp_path):
    """Before: accepted by parse_measures, then a KeyError traceback from ir_measures (exit 1)."""
    with pytest.raises(ConfigError, match=r"measure 'AP\(rell=2\)': unknown parameter rell \(known: cutoff, "
                                          r"judged_only, rel\)"):
        parse_measures(["AP", "AP(rell=2)"])
    (tmp_path / "run.trec").write_text("1 Q0 1 1 2.0 t\n", encoding="utf-8")
    done = sleuth("eval", "--run", tmp_path / "run.trec", "--qrels", data_dir / "vaswani" / "qrels", "--metric",
                  "nDCG(judged=True)@10")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("error: measure 'nDCG(judged=True)@10': unknown parameter "
                                                            "judged (known: cutoff, dcg, gains, judged_only)")


def test_counts_are_summed_as_trec_eval_sums_them(vaswani):
    """Before: NumRet and NumRel were averaged over the queries."""
    bm25, topics, qrels = vaswani
    run = bm25.transform(topics)
    ours = evaluate(run, qrels, ["NumRet", "NumRel", "AP"])
    reference = ir_measures.calc_aggregate(
        parse_measures(["NumRet", "NumRel", "AP"]), qrels,
        {qid: {h.id: float(len(hits) - r) for r, h in enumerate(hits)} for qid, hits in run.items()})
    assert ours == pytest.approx({str(m): v for m, v in reference.items()})
    assert ours["NumRet"] == 100 * len([t for t in topics if t.id in qrels])


def test_two_denominators_in_one_row_are_said(vaswani):
    """Before: a SQuAD evaluation averaged R@1 over every question and Top-k over the answerable ones, unsaid."""
    bm25, topics, qrels = vaswani
    judged = [t for t in topics if t.id in qrels][:4]
    answers = {judged[0].id: ["the"], judged[1].id: ["of"]}
    experiment = Experiment({"bm25": bm25}, judged, qrels={t.id: qrels[t.id] for t in judged}, answers=answers,
                            measures=["R@10"], ks=[5])
    assert "answer accuracy (Top-k) is measured on the 2 questions with an answer, the judged-document measures on " \
           "all 4" in experiment.notes
