"""`sleuth quest ...` as a user runs it: real processes on the real QUEST and Wikipedia files."""

from __future__ import annotations

import json

import pytest

from sleuth.corpus.quest import read_quest_examples, read_quest_predictions, write_quest_predictions
from tests.cli_support import one_line_error


@pytest.fixture(scope="module")
def val_head(data_dir, tmp_path_factory):
    """The first 12 films/books examples of the real val split, as their own file (ids val-0001 ...)."""
    path = tmp_path_factory.mktemp("quest-cli") / "val.jsonl"
    lines = (data_dir / "quest" / "val.jsonl").read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join(lines[:12]) + "\n", encoding="utf-8")
    return path


def test_corpus_predict_and_eval(sleuth, val_head, tmp_path):
    documents = tmp_path / "documents.jsonl"
    result = sleuth("quest", "corpus", val_head, "--out", documents)
    assert result.returncode == 0, result.stderr
    titles = [json.loads(line)["title"] for line in documents.read_text().splitlines()]
    assert titles and len(titles) == len(set(titles))

    predictions = tmp_path / "pred.jsonl"
    result = sleuth("quest", "predict", val_head, "--documents", documents, "--pipeline", "quest-bm25",
                    "--set-size", 5, "--max-queries", 4, "--out", predictions)
    assert result.returncode == 0, result.stderr
    predicted = read_quest_predictions(predictions)
    assert list(predicted) == ["val-0001", "val-0002", "val-0003", "val-0004"]
    assert all(len(q.metadata["docs"]) == 5 and len(q.metadata["ranking"]) >= 5 for q in predicted.values())
    capped = tmp_path / "capped.jsonl"  # --set, as sleuth eval takes it: BM25's top 7 only
    result = sleuth("quest", "predict", val_head, "--documents", documents, "--pipeline", "quest-bm25",
                    "--set", "bm25.k=7", "--max-queries", 4, "--out", capped)
    assert result.returncode == 0, result.stderr
    assert [q.metadata["ranking"] for q in read_quest_predictions(capped).values()] == \
           [q.metadata["ranking"][:7] for q in predicted.values()]

    gold_as_prediction = tmp_path / "gold.jsonl"
    write_quest_predictions(gold_as_prediction, read_quest_examples(val_head))
    result = sleuth("quest", "eval", val_head, "--predictions", gold_as_prediction, "--predictions", predictions,
                    "--json")
    assert result.returncode == 0, result.stderr
    reports = json.loads(result.stdout)
    assert reports["gold"]["overall"]["F1"] == 1.0 and reports["gold"]["count"]["overall"] == 12
    bm25 = reports["pred"]["overall"]
    assert 0.0 < bm25["F1"] < 1.0 and bm25["Recall@20"] >= bm25["R"]  # 8 of 12 queries predicted nothing
    table = sleuth("quest", "eval", val_head, "--predictions", predictions, "--by", "template")
    assert table.returncode == 0 and "F1" in table.stdout and "_ or _" in table.stdout


def test_a_classify_pipelines_ranking_goes_past_its_set(sleuth, val_head, tmp_path):
    """metadata.ranking is the classified top 30 uncut, then BM25's ranking beyond them (it was the set itself, so a
    classify pipeline's Recall@K was its set's recall at every K)."""
    documents, bm25, classify = tmp_path / "documents.jsonl", tmp_path / "bm25.jsonl", tmp_path / "classify.jsonl"
    assert sleuth("quest", "corpus", val_head, "--out", documents).returncode == 0
    for pipeline, out in (("quest-bm25", bm25), ("quest-bm25-classify", classify)):
        result = sleuth("quest", "predict", val_head, "--documents", documents, "--pipeline", pipeline,
                        "--max-queries", 3, "--ranking-depth", 60, "--out", out)
        assert result.returncode == 0, result.stderr
    retrieved, classified = read_quest_predictions(bm25), read_quest_predictions(classify)
    for qid, prediction in classified.items():
        docs, ranking, bm25_ranking = (prediction.metadata["docs"], prediction.metadata["ranking"],
                                       retrieved[qid].metadata["ranking"])
        assert ranking[:len(docs)] == docs and len(ranking) == len(bm25_ranking[:60])
        assert set(ranking[:30]) == set(bm25_ranking[:30]) and ranking[30:] == bm25_ranking[30:60]
    assert any(len(p.metadata["ranking"]) > 30 > len(p.metadata["docs"]) for p in classified.values())
    result = sleuth("quest", "eval", val_head, "--predictions", classify, "--json")
    overall = json.loads(result.stdout)["classify"]["overall"]
    assert overall["Recall@50"] > overall["R"]


def test_train_without_queries_left_after_the_tuning_hold_out_is_one_line(sleuth, val_head, tmp_path):
    documents = tmp_path / "documents.jsonl"
    assert sleuth("quest", "corpus", val_head, "--out", documents).returncode == 0
    # 12 examples, 60 held out for tuning by default: nothing left to train on (was a traceback from bm25s)
    result = sleuth("quest", "train", "--examples", val_head, "--documents", documents, "--out", tmp_path / "m")
    one_line_error(result, "no training queries left", "of 12 have a gold document", "--tune-queries")


def test_quest_corpus_output_is_indexed_without_format(sleuth, val_head, tmp_path):
    """`sleuth index` recognises the {title, text} lines `quest corpus` writes (no --format quest needed)."""
    documents = tmp_path / "documents.jsonl"
    assert sleuth("quest", "corpus", val_head, "--out", documents).returncode == 0
    first = json.loads(documents.read_text().splitlines()[0])
    result = sleuth("index", documents, "--kind", "bm25", "--out", tmp_path / "ix")
    assert result.returncode == 0, result.stderr
    query = " ".join(first["text"].split()[:30])
    hits = json.loads(sleuth("search", query, "--index", tmp_path / "ix", "-k", "3", "--json").stdout)["hits"]
    assert hits[0]["id"] == first["title"]  # titles are the ids, as with --format quest


def test_eval_errors_are_one_line(sleuth, val_head, tmp_path):
    empty_gold = tmp_path / "gold.jsonl"
    rows = [json.loads(line) for line in val_head.read_text().splitlines()[:2]]
    rows[1]["docs"] = []
    empty_gold.write_text("".join(json.dumps(r) + "\n" for r in rows))
    predictions = tmp_path / "pred.jsonl"
    write_quest_predictions(predictions, read_quest_examples(empty_gold))
    one_line_error(sleuth("quest", "eval", empty_gold, "--predictions", predictions), "gold-0002", "empty gold set")
    stranger = tmp_path / "other.jsonl"
    stranger.write_text(json.dumps({"id": "test-9999", "query": "q", "docs": ["a"]}) + "\n")
    one_line_error(sleuth("quest", "eval", val_head, "--predictions", stranger), "test-9999", "joined to gold by id")
    one_line_error(sleuth("quest", "eval", val_head, "--predictions", tmp_path / "missing.jsonl"), "missing.jsonl")


def test_eval_scores_a_whole_files_predictions_against_a_gold_subset(sleuth, val_head, tmp_path):
    """Predictions of all 12 queries against a gold file of 5 of them (with their ids): the 5 are scored, the other
    7 left out with a note (before: refused, "query id 'val-0006' is not in gold.jsonl")."""
    rows = [{**json.loads(line), "id": f"val-{i:04d}"} for i, line in enumerate(val_head.read_text().splitlines(), 1)]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows[:5]))
    predictions = tmp_path / "pred.jsonl"
    predictions.write_text("".join(json.dumps({**r, "docs": r["docs"][:1]}) + "\n" for r in rows))
    result = sleuth("quest", "eval", gold, "--predictions", predictions, "--json")
    assert result.returncode == 0, result.stderr
    assert "7 of its 12 predictions are for queries not in" in " ".join(result.stderr.split())
    report = json.loads(result.stdout)["pred"]
    assert report["count"]["overall"] == 5 and report["overall"]["P"] == 1.0
    assert report["overall"]["R"] == pytest.approx(sum(1 / len(r["docs"]) for r in rows[:5]) / 5)


def test_eval_refuses_predictions_joined_to_another_query(sleuth, val_head, tmp_path):
    """QUEST's own predictions carry no ids: they are joined by line number, which silently scored a file in
    another order (or of another split) against the wrong gold sets before."""
    rows = [json.loads(line) for line in val_head.read_text().splitlines()]
    reordered = tmp_path / "reordered.jsonl"  # QUEST's format, no ids: the second and first queries swapped
    reordered.write_text("".join(json.dumps({"query": r["query"], "docs": r["docs"]}) + "\n"
                                 for r in [rows[1], rows[0], *rows[2:]]))
    one_line_error(sleuth("quest", "eval", val_head, "--predictions", reordered, "--id-prefix", "val"),
                   "'val-0001'", rows[1]["query"], "same order")
    one_line_error(sleuth("quest", "eval", val_head, "--predictions", reordered), "reordered-0001",
                   "--id-prefix val")
    named = tmp_path / "val30.jsonl"  # gold ids val-NNNN in a file of another name: the hint gave 'val30', which
    named.write_text("".join(json.dumps({**r, "id": f"val-{i:04d}"}) + "\n" for i, r in enumerate(rows, 1)))
    one_line_error(sleuth("quest", "eval", named, "--predictions", reordered), "--id-prefix val if")  # failed again
    in_order = tmp_path / "in-order.jsonl"
    in_order.write_text("".join(json.dumps({"query": r["query"], "docs": r["docs"]}) + "\n" for r in rows))
    result = sleuth("quest", "eval", val_head, "--predictions", in_order, "--id-prefix", "val", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["in-order"]["overall"]["F1"] == 1.0


def test_build_and_parse(sleuth, data_dir, tmp_path, val_head):
    dumps = sorted((data_dir / "wikipedia").glob("*.bz2"))
    built = tmp_path / "built.jsonl"
    result = sleuth("quest", "build", *dumps, "--out", built, "--limits", "relaxed", "--per-template", 3)
    assert result.returncode == 0, result.stderr
    examples = list(read_quest_examples(built))
    assert len(examples) == 21 and all(2 <= len(e.metadata["docs"]) <= 20 for e in examples)
    one_line_error(sleuth("quest", "build", *dumps, "--out", built, "--limits", "loose"), "--limits")
    one_line_error(sleuth("quest", "build", *dumps, "--out", built, "--per-template", -5), "--per-template")
    tables = data_dir / "wikipedia" / "enwiki-table-markup.xml.bz2"  # 5 articles: no category fits a template
    one_line_error(sleuth("quest", "build", tables, "--out", built), "no category of 5 articles", "limits relaxed")
    assert len(list(read_quest_examples(built))) == 21  # the queries written before are kept
    result = sleuth("quest", "parse", val_head, "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["overall"]["count"] == 12


def test_predict_with_the_classifier_is_quiet_and_reports_progress(sleuth_process, val_head, tmp_path):
    """The shipped classifier loads without transformers' FutureWarning; the queries done show in a log."""
    documents = tmp_path / "documents.jsonl"
    assert sleuth_process("quest", "corpus", val_head, "--out", documents).returncode == 0
    result = sleuth_process("quest", "predict", val_head, "--documents", documents, "--pipeline", "quest-bm25-classify",
                    "--max-queries", 3, "--out", tmp_path / "pred.jsonl",
                    env={"SLEUTH_PROGRESS_SECONDS": "0.02", "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr and "deprecated" not in result.stderr, result.stderr
    assert "predicting with quest-bm25-classify: " in result.stderr, result.stderr


def test_quest_predict_takes_a_stage_name_and_refuses_one_that_needs_candidates(sleuth, val_head, tmp_path):
    """`--pipeline classify` alone (a stage name, taken since session 35) has no candidates to classify: refused at
    once, before the task or any model is loaded, not when run."""
    out = tmp_path / "pred.jsonl"
    one_line_error(sleuth("quest", "predict", val_head, "--documents", val_head, "--pipeline", "classify", "--out",
                          out), "stage 1 'classify': works on the ranking of an earlier stage, so it cannot come first")
    assert not out.exists()


def test_eval_says_which_gold_queries_have_no_prediction_and_takes_domains(sleuth, val_head, data_dir, tmp_path):
    """`quest predict --domain films ...` then `quest eval val.jsonl` averaged the other domains' queries in as
    zeros without a word (F1 .18 where films and books give .32); and --documents of another format named
    `--field`, an option no quest command has."""
    rows = [json.loads(line) for line in val_head.read_text().splitlines()]
    predictions = tmp_path / "five.jsonl"
    predictions.write_text("".join(json.dumps({**r, "id": f"val-{i:04d}"}) + "\n" for i, r in enumerate(rows[:5], 1)))
    result = sleuth("quest", "eval", val_head, "--predictions", predictions, "--json")
    assert result.returncode == 0, result.stderr
    assert "7 of the 12 gold queries have no prediction" in " ".join(result.stderr.split())
    domain = rows[0]["metadata"]["domain"]
    scoped = sleuth("quest", "eval", val_head, "--predictions", predictions, "--domain", domain, "--json")
    assert scoped.returncode == 0, scoped.stderr
    in_domain = sum(r["metadata"]["domain"] == domain for r in rows)
    assert json.loads(scoped.stdout)["five"]["count"]["overall"] == in_domain
    done = sleuth("quest", "predict", val_head, "--documents", data_dir / "squad2" / "dev-v2.0.json", "--pipeline",
                  "quest-bm25", "--out", tmp_path / "x.jsonl")
    one_line_error(done, "not a QUEST documents.jsonl")
    assert "--field" not in done.stderr
