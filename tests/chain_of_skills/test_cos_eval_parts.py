"""`sleuth cos eval` on the fixed tuning / report parts of the dev sets, over several question files, and over one
pooled corpus with distractors (small real pools here; the full runs are measurements)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sleuth.cli.main import main
from sleuth.corpus.question_split import in_tuning_part, question_part
from sleuth.systems.chain_of_skills.eval_corpus import eval_passages
from sleuth.systems.chain_of_skills.evaluation import eval_questions


@pytest.fixture(scope="module")
def dev_files(data_dir):
    hotpot = data_dir / "hotpotqa"
    return [hotpot / "hotpot_dev_distractor_100.json", hotpot / "hotpot_dev_distractor_more.json"]


def test_parts_are_fixed_disjoint_and_sized(dev_files, data_dir):
    every = eval_questions(dev_files)
    tune, report = eval_questions(dev_files, "tune"), eval_questions(dev_files, "report")
    assert (len(every), len(tune), len(report)) == (1712, 499, 1213)
    assert not {q.id for q in tune} & {q.id for q in report}
    twowiki = [data_dir / "2wikimultihopqa" / "2wiki_dev.json"]
    assert [len(eval_questions(twowiki, part)) for part in ("tune", "report")] == [43, 114]
    # a property of the id: the 100 alone split as they do inside all 1,712
    alone = {q.id for q in eval_questions(dev_files[:1], "report")}
    assert alone == {q.id for q in report} & {q.id for q in eval_questions(dev_files[:1])}
    assert in_tuning_part(tune[0].id) and not in_tuning_part(report[0].id)
    assert question_part(every[:10], "all") == every[:10]


def test_default_corpus_is_the_evaluated_questions_paragraphs_and_pooled_adds_the_rest(dev_files, data_dir):
    questions = eval_questions(dev_files, "report", limit=3)
    own = eval_passages("questions", dev_files, {q.id for q in questions})
    assert len(own) == 30 and {t for q in questions for t in q.metadata["context_titles"]} == {p.id for p in own}
    train = data_dir / "hotpotqa" / "hotpot_train_100.json"
    pooled = eval_passages("pooled", dev_files[:1], {q.id for q in questions}, [train])
    titles = {t for path in (dev_files[0], train) for r in json.loads(path.read_text(encoding="utf-8"))
              for t, _ in r["context"]}
    assert len(pooled) == len({p.id for p in pooled}) == len(titles) == 1993  # a title in both files is kept once
    assert [p.id for p in pooled[:10]] == eval_questions(dev_files[:1])[0].metadata["context_titles"]


@pytest.mark.slow
def test_eval_over_two_files_report_part_and_a_small_pool(dev_files, data_dir, tmp_path, capsys):
    # a small pool: the first 4 dev questions of each file and 1 training question as distractors
    files = []
    for index, source in enumerate(dev_files):
        files.append(tmp_path / f"dev{index}.json")
        files[-1].write_text(json.dumps(json.loads(source.read_text(encoding="utf-8"))[:4]), encoding="utf-8")
    train = json.loads((data_dir / "hotpotqa" / "hotpot_train_100.json").read_text(encoding="utf-8"))[:1]
    (tmp_path / "train.json").write_text(json.dumps(train), encoding="utf-8")
    report = tmp_path / "eval.json"
    main(["cos", "eval", "--questions", str(files[0]), "--questions", str(files[1]), "--part", "report",
          "--limit", "1", "--pooled", "--distractors", str(tmp_path / "train.json"), "--chain", "retrieval",
          "--json", str(report)])
    titles = {t for r in [*train, *(json.loads(f.read_text(encoding="utf-8")) for f in files)]
              for record in (r if isinstance(r, list) else [r]) for t, _ in record["context"]}
    assert len(titles) == 90
    printed = " ".join(capsys.readouterr().out.split())
    assert "(report part) (1 questions, pooled corpus 90 passages" in printed
    cached = sorted((Path(os.environ["SLEUTH_HOME"]) / "indexes").glob("cos-eval-*/*/**/*"))
    assert len({p.parent.parent for p in cached if p.name == "manifest.json"}) == 1  # one corpus
    # one skill index: the shipped model's retrieval and linking read passages through the same (frozen) weights
    assert len([p for p in cached if p.name == "manifest.json"]) == 1
    written = {p: p.stat().st_mtime_ns for p in cached if p.is_file()}
    recorded = json.loads(report.read_text(encoding="utf-8"))
    assert recorded["part"] == "report" and recorded["corpus"]["passages"] == 90
    assert recorded["rows"][0]["questions"] == 1 and 0 <= recorded["rows"][0]["path_recall@20"] <= 1
    # the pooled corpus does not depend on the part: its indexes are cached, the next run encodes nothing
    main(["cos", "eval", "--questions", str(files[0]), "--questions", str(files[1]), "--part", "all",
          "--limit", "2", "--pooled", "--distractors", str(tmp_path / "train.json"), "--chain", "retrieval"])
    printed = " ".join(capsys.readouterr().out.split())
    assert "(2 questions, pooled corpus 90 passages" in printed
    assert {p: p.stat().st_mtime_ns for p in written} == written
    assert sorted((Path(os.environ["SLEUTH_HOME"]) / "indexes").glob("cos-eval-*/*/**/*")) == cached


@pytest.mark.parametrize("args, message", [
    (["--part", "dev"], "--part must be one of all, tune, report"),
    (["--distractors", "DEV"], "--distractors needs --pooled"),
    (["--pooled", "--distractors", "/nonexistent/train.json"], "distractors file not found: /nonexistent/train.json"),
    (["--hop2-selection", "spread"], "--hop2-selection must be one of path, per-hop1, mixed, got 'spread'"),
    (["--selection-weights", "0.5"], "--selection-weights takes two finite numbers A,B (the weights of hop1_rerank "
                                     "and hop2), got '0.5'"),
    (["--selection-weights", "nan,1"], "--selection-weights takes two finite numbers"),  # ran with nan scores
])
def test_eval_part_and_pool_errors_are_one_line(args, message, dev_files, capsys):
    args = [str(dev_files[0]) if a == "DEV" else a for a in args]
    with pytest.raises(SystemExit) as exit_info:
        main(["cos", "eval", "--questions", str(dev_files[0]), "--model", "minilm", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_shards_cover_the_questions_once_over_the_same_corpus_and_merge_exactly(dev_files, tmp_path, capsys):
    common = ["cos", "eval", "--questions", str(dev_files[0]), "--part", "report", "--limit", "5", "--model",
              "minilm", "--chain", "retrieval", "--chain", "retrieval-2hop", "--per-question"]
    main([*common, "--json", str(tmp_path / "whole.json")])
    for shard in ("1/2", "0/2"):
        main([*common, "--shard", shard, "--json", str(tmp_path / f"shard{shard[0]}.json")])
    printed = " ".join(capsys.readouterr().out.split())
    assert "shard 1/2 (2 questions, corpus 50 passages" in printed  # the corpus of all 5 questions
    whole = json.loads((tmp_path / "whole.json").read_text(encoding="utf-8"))
    shards = [json.loads((tmp_path / f"shard{i}.json").read_text(encoding="utf-8")) for i in (0, 1)]
    assert [s["rows"][0]["questions"] for s in shards] == [3, 2] and shards[0]["shard"] == "0/2"
    main(["cos", "merge", str(tmp_path / "shard1.json"), str(tmp_path / "shard0.json"), "--json",
          str(tmp_path / "merged.json")])
    merged = json.loads((tmp_path / "merged.json").read_text(encoding="utf-8"))
    assert merged["shards"] == 2 and merged["corpus"] == whole["corpus"]
    for mine, theirs in zip(merged["rows"], whole["rows"]):
        assert {k: v for k, v in mine.items() if k != "seconds"} == {k: v for k, v in theirs.items() if k != "seconds"}
    assert 0 < whole["rows"][1]["path_recall@20"] < 1  # a measure that could differ between shards
    outcomes = whole["rows"][1]["per_question"]  # [R@1, R@5, R@10, R@20, EM] per question, 0 or 1
    assert len(outcomes) == 5 and sum(o[3] for o in outcomes.values()) / 5 == whole["rows"][1]["path_recall@20"]

    capsys.readouterr()
    main(["cos", "compare", str(tmp_path / "merged.json"), str(tmp_path / "whole.json"), "--chain", "retrieval-2hop",
          "--json", str(tmp_path / "same.json")])
    same = json.loads((tmp_path / "same.json").read_text(encoding="utf-8"))
    assert same["questions"] == 5 and all(r["difference"] == 0 and r["p"] == 1.0 for r in same["rows"])
    main(["cos", "compare", str(tmp_path / "whole.json"), "--chain", "retrieval-2hop", "--against", "retrieval",
          "--json", str(tmp_path / "chains.json")])
    chains = json.loads((tmp_path / "chains.json").read_text(encoding="utf-8"))["rows"]
    r20 = next(r for r in chains if r["measure"] == "path_recall@20")
    assert r20["a"] == whole["rows"][1]["path_recall@20"] and r20["b"] == whole["rows"][0]["path_recall@20"]
    assert r20["a"] - r20["b"] == pytest.approx((r20["a_wins"] - r20["b_wins"]) / 5) and 0 < r20["p"] <= 1
    assert "p: paired randomisation" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize("args, message", [
    (["--shard", "2/2"], "--shard must be i/n with 0 <= i < n (e.g. 0/4), got '2/2'"),
    (["--shard", "x"], "--shard must be i/n with 0 <= i < n (e.g. 0/4), got 'x'"),
    (["--limit", "1", "--shard", "1/2"], "shard 1/2 holds no question"),
])
def test_shard_errors_are_one_line(args, message, dev_files, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["cos", "eval", "--questions", str(dev_files[0]), "--model", "minilm", "--chain", "retrieval", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_compare_refuses_records_it_cannot_pair(tmp_path, capsys):
    row = {"chain": "hotpotqa", "questions": 2, "path_recall@20": 0.5, "passage_em": 0.5, "seconds": 1.0}
    with_outcomes = {"rows": [{**row, "per_question": {"q1": [1, 1], "q2": [0, 0]}}]}
    other_questions = {"rows": [{**row, "per_question": {"q1": [1, 1], "q3": [0, 0]}}]}
    cases = {"a.json": with_outcomes, "b.json": {"rows": [row]}, "c.json": other_questions, "d.json": [1]}
    for name, content in cases.items():
        (tmp_path / name).write_text(json.dumps(content), encoding="utf-8")
    for args, message in [(["b.json", "a.json"], "b.json: no per-question outcomes; run `sleuth cos eval"),
                          (["a.json", "c.json"], "different questions (1 only in the first, e.g. ['q2']"),
                          (["a.json", "--chain", "retrieval"], "a.json: no chain 'retrieval' (it has hotpotqa)"),
                          (["a.json", "--against", "hotpotqa"], "--against hotpotqa is the chain compared"),
                          (["d.json", "a.json"], "d.json: not a `sleuth cos eval --json` record"),
                          (["missing.json", "a.json"], "missing.json")]:
        with pytest.raises(SystemExit) as exit_info:
            main(["cos", "compare", *(str(tmp_path / a) if a.endswith(".json") else a for a in args)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1, err
    with pytest.raises(SystemExit):
        main(["cos", "eval", "--questions", str(tmp_path / "a.json"), "--per-question"])
    assert "--per-question writes into the --json record" in capsys.readouterr().err


def test_merge_refuses_records_that_are_not_one_runs_shards(tmp_path, capsys):
    record = {"model": "m", "int8": False, "part": "report", "corpus": {"passages": 10}, "limits": {}, "ablate": [],
              "rows": [{"chain": "retrieval", "questions": 1, "path_recall@20": 1.0, "passage_em": 0.0,
                        "seconds": 1.0}]}
    cases = {"a.json": {**record, "shard": "0/2"}, "b.json": {**record, "shard": "0/2"},
             "c.json": {**record, "shard": "1/2", "part": "tune"}, "d.json": {"rows": []}}
    for name, content in cases.items():
        (tmp_path / name).write_text(json.dumps(content), encoding="utf-8")
    (tmp_path / "e.json").write_text("{", encoding="utf-8")
    for files, message in [(["a.json", "b.json"], "shards 0/2, 0/2 are not 0/2..1/2 each once"),
                           (["a.json", "c.json"], "shard record 2 differs from the first in 'part'"),
                           (["d.json"], "d.json: not a `sleuth cos eval --shard i/n --json` record (no 'model')"),
                           (["e.json"], "e.json: not a JSON record"),
                           (["missing.json"], "shard record not found")]:
        with pytest.raises(SystemExit) as exit_info:
            main(["cos", "merge", *(str(tmp_path / f) for f in files)])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip()
        assert message in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_processes_evaluating_one_corpus_share_one_index_build(dev_files, tmp_path, monkeypatch):
    """Shards started together (two threads here, each with its own lock handle, as two processes) build a corpus's
    index once: the second waits for the first's build and loads it."""
    from concurrent.futures import ThreadPoolExecutor

    from sleuth.systems.chain_of_skills.eval_corpus import eval_skill_index
    from sleuth.systems.chain_of_skills.model import load_model

    monkeypatch.setenv("SLEUTH_HOME", str(tmp_path))
    passages = eval_passages("questions", dev_files[:1], {q.id for q in eval_questions(dev_files[:1], limit=3)})
    model = load_model("minilm")
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(lambda _: eval_skill_index(passages, model, "minilm", "retrieval", True), range(2))
    assert len(first) == len(passages) == 30
    assert first.manifest.created == second.manifest.created  # one build, loaded by the other
    assert len(list(tmp_path.rglob("manifest.json"))) == 1
