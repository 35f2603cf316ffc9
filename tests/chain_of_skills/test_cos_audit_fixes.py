"""What the Chain-of-Skills audit of session 36 found, each mended: empty questions and float ids of a HotpotQA file
refused where they are read, a 2Wiki file given as --hotpotqa refused, a full (non-LoRA) model saved whole over an
earlier model (and its weights readable as open() makes files), one string encoded as one text, path_passages
refusing a ranking that carries no paths, a slow retrieve's rate not rounded to 0, and a HotpotQA question without
supporting paragraphs left unjudged by `sleuth eval`."""

from __future__ import annotations

import json
import os

import pytest

from sleuth.cli.retrieve_cmd import summary
from sleuth.corpus.hotpotqa import read_hotpotqa_questions
from sleuth.errors import ConfigError, InputError
from sleuth.stages.paths import PathPassages
from sleuth.stages.run import Hit, Run
from sleuth.systems.chain_of_skills.model import MultiExpertConfig, MultiExpertEncoder, load_model
from tests.cli_support import one_line_error


@pytest.fixture
def dev3(data_dir) -> list[dict]:
    return json.loads((data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json").read_text(encoding="utf-8"))[:3]


def test_a_blank_question_or_a_float_id_is_refused_where_it_is_read(dev3, tmp_path, sleuth):
    """Before: `cos eval` evaluated a question "" or "   " (every other entry point refuses it), and `_id: 1.0` was
    read as the id '1.0'."""
    for i, (key, value, message) in enumerate((("question", "   ", "field 'question': empty question"),
                                               ("_id", 1.0, "field '_id': id 1.0 is a JSON number"))):
        records = [dict(record) for record in dev3]
        records[1][key] = value
        path = tmp_path / f"bad{i}.json"
        path.write_text(json.dumps(records), encoding="utf-8")
        with pytest.raises(InputError, match=message):
            list(read_hotpotqa_questions(path))
    one_line_error(sleuth("cos", "eval", "--questions", tmp_path / "bad0.json", "--chain", "retrieval"),
                   "bad0.json[1]: field 'question': empty question")


def test_a_2wiki_file_given_as_hotpotqa_is_refused(data_dir, tmp_path, sleuth):
    """Before: trained, its bridge-comparison questions paired as HotpotQA hops and labelled hotpotqa."""
    twowiki = data_dir / "2wikimultihopqa" / "2wiki_dev.json"
    one_line_error(sleuth("cos", "train", "--hotpotqa", twowiki, "--max-steps", "1", "--out", tmp_path / "m"),
                   "field 'evidences': a 2WikiMultihopQA question (it has evidences): give this file as --twowiki")
    assert not (tmp_path / "m").exists()


def test_a_full_model_is_saved_whole_over_an_earlier_one(tmp_path):
    """Before: a non-LoRA model was written file by file into --out, so a LoRA model's files stayed beside it and
    the folder no longer loaded ("cos_adapter.safetensors needs the 'lora' variant")."""
    folder = tmp_path / "model"
    load_model(None).save(folder)  # the shipped LoRA model: an adapter
    assert (folder / "cos_adapter.safetensors").is_file()
    full = MultiExpertEncoder.from_backbone("minilm", MultiExpertConfig(variant="none", num_experts=1, expert_layers=()))
    full.save(folder)
    assert not (folder / "cos_adapter.safetensors").exists() and not (folder / "sleuth-adapter.json").exists()
    reloaded = load_model(str(folder))
    assert reloaded.config.variant == "none"
    umask = os.umask(0)
    os.umask(umask)
    weights = [f for f in folder.iterdir() if f.suffix == ".safetensors"]
    assert weights and all(f.stat().st_mode & 0o777 == 0o666 & ~umask for f in weights)  # before: 0600
    vectors = reloaded.encode("who directed the film", "retrieval")  # one string: one text (before: per character)
    assert vectors.shape == (1, reloaded.dim)


def test_path_passages_refuses_a_ranking_without_paths():
    """Before: a PyTerrier frame's path hits (no extras) passed through unchanged, scored 0 against passages."""
    from sleuth.corpus.model import Query

    run = Run({"q": [Hit("A||B", 1.0), Hit("C||D", 0.5)]})
    with pytest.raises(ConfigError, match=r"path_passages got 2 hits and no evidence path .* e.g. 'A\|\|B'"):
        PathPassages().transform([Query("q", "x")], run)


def test_a_slow_retrieve_reports_its_rate_in_two_figures(tmp_path):
    run = Run({str(i): [Hit("d", 1.0)] for i in range(3)})
    assert summary(tmp_path / "r.jsonl", run, 15.6).endswith("in 15.6 s, 0.19 queries/s")  # before: 0 queries/s


def test_eval_leaves_a_question_without_supporting_paragraphs_unjudged(dev3, tmp_path, sleuth):
    """Before: scored 0 and averaged in (R@5 .083 where the one judged question scored .5)."""
    records = [dict(record) for record in dev3]
    for record in records[1:]:
        del record["supporting_facts"]
    path = tmp_path / "one_judged.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    per_query = tmp_path / "pq.tsv"
    done = sleuth("eval", "--corpus", path, "--pipeline", "bm25", "--metric", "R@5", "--per-query", per_query)
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in per_query.read_text(encoding="utf-8").splitlines()[1:]]
    assert {row[1] for row in rows} == {records[0]["_id"]}


def test_a_hops_link_extra_is_the_aligned_score_it_merged():
    """Before: the `link` extra (declared "entity linking, aligned") held the raw link score, so a hop found by
    linking read `merged .6439, link 1.0426`, a merge no reader could recover."""
    from sleuth.systems.chain_of_skills.chain import merged_hits
    from sleuth.systems.chain_of_skills.chain_scores import aligned_links

    found, links = [Hit("a", 8.0), Hit("b", 2.0)], [Hit("b", 10.0), Hit("c", 5.0)]
    aligned = aligned_links({"a": 8.0, "b": 2.0}, {"b": 10.0, "c": 5.0})
    by_id = {hit.id: hit for hit in merged_hits([found, links], 1.06)}
    assert by_id["c"].extras["link"] == pytest.approx(aligned["c"]) and aligned["c"] != 5.0
    assert by_id["b"].extras["link"] == pytest.approx(aligned["b"]) and "link" not in by_id["a"].extras


def test_cos_eval_says_in_its_caption_when_the_hotpotqa_chain_is_not_the_full_one(dev3, tmp_path, sleuth):
    """Before: an ablation, a hop-2 budget or an ensemble was said in the --json record only; the table read as
    the full chain."""
    path = tmp_path / "dev2.json"
    path.write_text(json.dumps(dev3[:2]), encoding="utf-8")
    done = sleuth("cos", "eval", "--questions", path, "--chain", "hotpotqa", "--ablate", "linking", "--ablate",
                  "fusion", "--k-hop2-rerank", "5")
    assert done.returncode == 0, done.stderr
    caption = " ".join(done.stdout.split())
    assert "hop limits 10/2/3/4/1; hotpotqa chain without linking, fusion; hop-2 rerank budget 5)" in caption


def test_the_note_on_a_run_of_unjudged_ids_comes_from_one_query_on():
    from sleuth.eval.experiment import unjudged_run_note

    run = Run({str(q): [Hit(f"A{q}||B{q}", 1.0)] for q in range(3)})
    qrels = {str(q): {f"A{q}": 1} for q in range(3)}
    note = unjudged_run_note("chain", run, qrels)
    assert note is not None and note.startswith("pipeline 'chain' retrieved no judged document for any of its 3")


def test_a_musique_file_as_hotpotqa_contexts_is_named_as_such(data_dir):
    """Before: a MuSiQue file given as --distractors was "field '_id': missing"."""
    from sleuth.corpus.hotpotqa import hotpotqa_context_documents

    with pytest.raises(InputError, match="a MuSiQue record, not a HotpotQA-format question"):
        list(hotpotqa_context_documents(data_dir / "musique" / "musique_dev_200.jsonl"))


def test_cos_train_names_a_missing_model_before_reading_the_data(data_dir, tmp_path, sleuth):
    """Before: every training example was built first (`examples: {...}` printed), then the model was missing."""
    done = sleuth("cos", "train", "--hotpotqa", data_dir / "hotpotqa" / "hotpot_train_100.json", "--model",
                  tmp_path / "missing", "--max-steps", "1", "--out", tmp_path / "m")
    one_line_error(done, "is not a multi-expert model directory: cos_config.json is missing")
    assert "examples:" not in done.stderr
