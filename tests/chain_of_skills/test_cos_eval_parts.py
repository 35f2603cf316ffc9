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
    assert len({p.parent.parent for p in cached if p.name == "manifest.json"}) == 1  # one corpus, 2 skill indexes
    assert len([p for p in cached if p.name == "manifest.json"]) == 2
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
])
def test_eval_part_and_pool_errors_are_one_line(args, message, dev_files, capsys):
    args = [str(dev_files[0]) if a == "DEV" else a for a in args]
    with pytest.raises(SystemExit) as exit_info:
        main(["cos", "eval", "--questions", str(dev_files[0]), "--model", "minilm", *args])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
