"""Chain-of-Skills training: data builders on the real HotpotQA / NQ files, a tiny multi-task run (loss falls, model
and span head saved and reloaded into the cos_chain stage), and `sleuth cos eval` on a few dev questions."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from sleuth.cli.main import main
from sleuth.errors import ConfigError
from sleuth.systems.chain_of_skills.span_head import SpanProposalHead
from sleuth.systems.chain_of_skills.training_data import (
    SKILLS,
    CosExample,
    hotpotqa_examples,
    load_hotpotqa,
    mention_span,
    merge,
    nq_examples,
    ottqa_examples,
    squad_examples,
)
from sleuth.train.contrastive import ContrastiveExample, batch_layout


@pytest.fixture(scope="module")
def hotpot_data(data_dir):
    folder = data_dir / "hotpotqa"
    questions, corpus = load_hotpotqa(folder / "hotpot_train_100.json", folder / "hotpot_train_100_corpus.json")
    return questions, corpus, hotpotqa_examples(questions, corpus)


def test_hotpotqa_builders_give_every_skill_with_consistent_examples(hotpot_data):
    questions, corpus, data = hotpot_data
    assert len(questions) == 100
    # reranking: 200 hop-1 examples (question -> supporting passage) + 167 hop-2 ones (the orders of "expanded")
    assert {skill: len(data[skill]) for skill in SKILLS} == {"retrieval": 200, "expanded": 167, "reranking": 367,
                                                             "linking": 83, "span": 61}
    for skill, examples in data.items():
        assert all(e.skill == skill and e.source == "hotpotqa" for e in examples)
    by_text = {q.text: q for q in questions}
    hop2 = [e for e in data["reranking"] if " [SEP] " in e.query]
    assert len(hop2) == 167
    for example, expanded in zip(hop2, data["expanded"]):
        question, hop1 = expanded.query
        assert example.query == f"{question} [SEP] {hop1}" and example.positive_id == expanded.positive_id
    for example in data["retrieval"] + data["reranking"]:
        gold = by_text[example.query.split(" [SEP] ")[0]].metadata["supporting_titles"]
        assert example.positive_id in gold
        assert len(example.negatives) == len(example.negative_ids)
        assert not set(example.negative_ids) & set(gold)
    assert all(len(e.negatives) == 1 for e in data["retrieval"])
    for example in data["expanded"]:
        question, hop1 = example.query
        gold = by_text[question].metadata["supporting_titles"]
        first = next(t for t in gold if hop1.startswith(f"{t}, "))
        assert example.positive_id in gold and example.positive_id != first
        mentioned = [t for t in gold if mention_span(t, question)]
        if by_text[question].metadata["type"] == "bridge" and len(mentioned) == 1:
            assert first == mentioned[0]
    for example in data["linking"]:
        start, end = example.mention
        assert example.query[start:end].lower() == example.positive_id.lower()
    for example in data["span"]:
        assert example.spans and all(0 <= a < b <= len(example.query) for a, b in example.spans)
    # every linking mention is one of its question's gold spans
    spans = {e.query: set(e.spans) for e in data["span"]}
    assert all(e.mention in spans[e.query] for e in data["linking"])


def test_mention_span_needs_word_boundaries():
    assert mention_span("Paris", "Is paris in France?") == (3, 8)
    assert mention_span("Paris", "Parisian food") is None


def test_nq_builders_and_merge(data_dir):
    nq = nq_examples(data_dir / "nq" / "questions.jsonl", data_dir / "nq" / "corpus.jsonl", negatives=2, limit=50)
    assert set(nq) == {"retrieval", "reranking"}
    assert len(nq["retrieval"]) == len(nq["reranking"]) == 50
    for example in nq["retrieval"]:
        assert example.skill == "retrieval" and len(example.negative_ids) == 2
        assert example.positive_id not in example.negative_ids
    merged = merge(nq, {"span": [], "linking": [CosExample("linking", "q", "p", "p", mention=(0, 1))]})
    assert {k: len(v) for k, v in merged.items()} == {"retrieval": 50, "reranking": 50, "linking": 1}


def test_nq_train_split_squad_and_ottqa_builders(data_dir):
    train = nq_examples(data_dir / "nq" / "questions.jsonl", data_dir / "nq" / "corpus.jsonl", split="train")
    dev = nq_examples(data_dir / "nq" / "questions.jsonl", data_dir / "nq" / "corpus.jsonl", split="dev")
    assert len(train["retrieval"]) == 800 and len(dev["retrieval"]) == 200  # the seeded 80/20 split of sleuth dhr
    assert not {e.query for e in train["retrieval"]} & {e.query for e in dev["retrieval"]}
    squad = squad_examples(data_dir / "squad2" / "dev-v2.0.json", negatives=2, rerank_negatives=3, limit=100)
    assert len(squad["retrieval"]) == len(squad["reranking"]) == 100
    for example in squad["retrieval"]:
        article = example.positive_id.split("#")[0]
        assert example.source == "squad" and len(example.negative_ids) == 2
        assert all(n.split("#")[0] == article and n != example.positive_id for n in example.negative_ids)
    assert all(len(e.negatives) == 3 for e in squad["reranking"])
    ottqa = ottqa_examples(data_dir / "ottqa", data_dir / "ottqa" / "dev.traced.json", rows_per_table=2)
    assert {skill: len(v) > 100 for skill, v in ottqa.items()} == {"linking": True, "span": True, "expanded": True}
    for example in ottqa["linking"]:
        start, end = example.mention
        mention = example.query[start:end]
        assert mention and example.query[start - 2:start] == ": "  # a whole cell of the row
        assert example.positive.startswith(example.positive_id.removeprefix("/wiki/").replace("_", " ")[:5])
    for example in ottqa["span"]:
        assert all(example.query[a - 2:a] == ": " for a, _ in example.spans)


def test_interleaved_schedule_gives_every_skill_its_share():
    from sleuth.systems.chain_of_skills.training import CosTrainConfig, scheduler

    data = {skill: [CosExample(skill, "q")] for skill in SKILLS}
    config = CosTrainConfig(weights={"retrieval": 1, "expanded": 1, "reranking": 1, "linking": 0.8, "span": 0.2})
    pick = scheduler(data, config)
    drawn = [pick() for _ in range(400)]
    assert drawn.count("span") == 20 and drawn.count("linking") == 80 and drawn.count("retrieval") == 100
    assert all("span" in drawn[i:i + 21] for i in range(0, 380, 20))  # spread out, not bunched


def test_same_passage_false_negatives_are_masked(hotpot_data):
    _, _, data = hotpot_data
    # two questions' positives: the same passage id in two slots must be masked for both queries
    a, b = data["retrieval"][0], data["retrieval"][2]
    twin = CosExample("retrieval", b.query, a.positive, a.positive_id, list(b.negatives), list(b.negative_ids))
    layout = [ContrastiveExample(e.query, e.positive, e.negatives, e.positive_id, e.negative_ids) for e in (a, twin)]
    _, candidates, positives, masks = batch_layout(layout)
    assert positives == [0, 1] and len(candidates) == 4
    assert 1 in masks[0] and 0 in masks[1]


@pytest.fixture(scope="module")
def trained(hotpot_data, tmp_path_factory):
    from sleuth.systems.chain_of_skills.model import MultiExpertEncoder
    from sleuth.systems.chain_of_skills.span_head import SpanProposalHead
    from sleuth.systems.chain_of_skills.training import CosTrainConfig, train_cos

    _, _, data = hotpot_data
    tiny = {"retrieval": data["retrieval"][:4], "span": data["span"][:4], "linking": data["linking"][:4]}
    model = MultiExpertEncoder.from_backbone("minilm")
    head = SpanProposalHead(model.dim, seed=3)
    out = tmp_path_factory.mktemp("cos-model")
    config = CosTrainConfig(lr=2e-4, batch_size=4, max_steps=9, max_length=64, sampling="round-robin",
                            warmup_ratio=0.0)
    result = train_cos(model, head, tiny, out, config)
    return result, model, head, out


@pytest.mark.slow
def test_tiny_multi_task_run_lowers_every_skill_loss(trained):
    result, _, _, out = trained
    assert len(result.losses) == 9 and result.skills[:3] == ["retrieval", "span", "linking"]
    for skill in ("retrieval", "span", "linking"):
        losses = result.skill_losses(skill)
        assert len(losses) == 3 and losses[-1] < losses[0], (skill, losses)
    log = json.loads((out / "cos_training.json").read_text())
    assert log["skills"] == result.skills and log["examples"] == {skill: {"hotpotqa": 4} for skill in ("retrieval", "span", "linking")}


@pytest.mark.slow
def test_saved_model_and_span_head_reload_into_cos_chain(trained, data_dir, tmp_path):
    from sleuth.corpus.hotpotqa import hotpotqa_context_documents
    from sleuth.pipelines.workspace import CorpusSource, Workspace
    from sleuth.systems.chain_of_skills.builders import cos_chain_stage
    from sleuth.systems.chain_of_skills.model import MultiExpertEncoder
    from sleuth.systems.chain_of_skills.span_head import load_span_head

    _, model, head, out = trained
    assert model.config.max_length == 256  # the training token limit is not saved as the model's
    loaded = MultiExpertEncoder.load(out)
    for key, value in model.bert.state_dict().items():
        assert torch.equal(value, loaded.bert.state_dict()[key]), key
    again = load_span_head(out, loaded.dim)
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in head.state_dict().items())
    assert load_span_head(tmp_path, loaded.dim) is None
    docs = list(hotpotqa_context_documents(data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"))[:10]
    (tmp_path / "corpus.json").write_text(json.dumps({d.id: d.metadata["sentences"] for d in docs}))
    ws = Workspace(CorpusSource(tmp_path / "corpus.json", format="hotpotqa"), home=tmp_path, show_progress=False)
    stage = cos_chain_stage(ws, chain="retrieval", model=str(out), k_retrieval=3, k_link=1, k=5)
    assert all(torch.equal(v, stage.link.span_head.state_dict()[k]) for k, v in head.state_dict().items())
    from sleuth.corpus.model import Query

    run = stage.transform([Query(id="q", text=f"Where was {docs[0].title} born?")])
    assert 1 <= len(run["q"]) <= 5


@pytest.mark.slow
def test_cos_eval_command_reports_both_chains(trained, data_dir, tmp_path, capsys):
    _, _, _, out = trained
    report = tmp_path / "eval.json"
    main(["cos", "eval", "--questions", str(data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"),
          "--model", str(out), "--limit", "5", "--chain", "retrieval", "--chain", "hotpotqa",
          "--k-retrieval", "5", "--k-link", "1", "--k-hop1", "2", "--k-expanded", "3", "--k-hop2-link", "1",
          "--json", str(report)])
    assert "path_recall@20" in capsys.readouterr().out
    rows = json.loads(report.read_text())["rows"]
    assert [r["chain"] for r in rows] == ["retrieval", "hotpotqa"]
    for row in rows:
        assert row["questions"] == 5
        recalls = [row[f"path_recall@{k}"] for k in (1, 5, 10, 20)]
        assert recalls == sorted(recalls) and all(0 <= r <= 1 for r in recalls)
        assert 0 <= row["passage_em"] <= 1
    # 5 questions x 10 context paragraphs: the top 20 of the retrieval chain cannot miss every gold pair
    assert rows[0]["path_recall@1"] == 0.0 and rows[0]["path_recall@20"] > 0


@pytest.mark.slow
def test_tiny_lora_run_writes_the_adapter_format(hotpot_data, tmp_path):
    from sleuth.models.adapters import adapter_info
    from sleuth.systems.chain_of_skills.experts import LoraSpec
    from sleuth.systems.chain_of_skills.model import ADAPTER_FILE, MultiExpertConfig, MultiExpertEncoder
    from sleuth.systems.chain_of_skills.span_head import load_span_head
    from sleuth.systems.chain_of_skills.training import CosTrainConfig, train_cos

    _, _, data = hotpot_data
    tiny = {skill: data[skill][:4] for skill in ("retrieval", "reranking", "span")}
    config = MultiExpertConfig(variant="lora", lora=LoraSpec(frozen_experts=(1, 3)), pooling="mean",
                               expert_layers=(4, 5))
    model = MultiExpertEncoder.from_backbone("minilm", config)
    head = SpanProposalHead(model.dim, seed=3)
    settings = CosTrainConfig(lr=1e-3, batch_size=4, max_steps=6, max_length=64, warmup_ratio=0.0, threads=1,
                              sampling="round-robin", checkpoints=(2, 4))
    result = train_cos(model, head, tiny, tmp_path / "lora", settings, card=lambda r: f"# tiny\n{len(r.losses)} steps\n")
    out = tmp_path / "lora"
    assert sorted(p.name for p in out.iterdir()) == sorted(["cos_config.json", ADAPTER_FILE, "sleuth-adapter.json",
                                                            "README.md", "span_head.safetensors",
                                                            "cos_training.json"])
    assert adapter_info(out)["backbone"] == "minilm" and (out / "README.md").read_text() == "# tiny\n6 steps\n"
    log = json.loads((out / "cos_training.json").read_text())
    assert log["steps"] == 6 and log["steps_per_skill"] == {"retrieval": 2, "reranking": 2, "span": 2}
    assert log["context_cache"]["misses"] > 0 and result.examples_per_second() > 0
    loaded = MultiExpertEncoder.load(out)
    texts = [e.query for e in tiny["retrieval"]]
    assert np.array_equal(loaded.encode(texts, "retrieval"), model.encode(texts, "retrieval"))
    assert not np.array_equal(loaded.encode(texts, "retrieval"), loaded.encode(texts, "retrieval", "context"))
    again = load_span_head(out, loaded.dim)
    assert all(torch.equal(v, again.state_dict()[k]) for k, v in head.state_dict().items())
    # checkpoints beside the model: the model after 2 and 4 steps, each loadable, with its own record
    saved = tmp_path / "lora-checkpoints"
    assert sorted(p.name for p in saved.iterdir()) == ["step-2", "step-4"]
    assert json.loads((saved / "step-2" / "cos_training.json").read_text())["steps"] == 2
    assert MultiExpertEncoder.load(saved / "step-2").config.max_length == model.config.max_length
    early = MultiExpertEncoder.load(saved / "step-2").encode(texts, "retrieval")
    assert not np.allclose(early, loaded.encode(texts, "retrieval"))  # two more steps moved the model


def test_checkpoints_outside_the_schedule_are_refused():
    from sleuth.systems.chain_of_skills.training import CosTrainConfig

    with pytest.raises(ConfigError, match="checkpoints must be steps between 1 and max_steps - 1"):
        CosTrainConfig(max_steps=10, checkpoints=(5, 10)).check()


@pytest.mark.parametrize("args, message", [
    (["--questions", "/nonexistent/dev.json"], "questions file not found: /nonexistent/dev.json"),
    (["--questions", "/"], "questions file is a folder; give a file: /"),  # before: "not found" for a folder
    (["--model", "/nonexistent/model"], "model directory not found: /nonexistent/model"),
    (["--chain", "nq"], "unknown chain 'nq'"),
])
def test_cos_eval_bad_input_is_one_line(args, message, data_dir, capsys):
    base = {"--questions": str(data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"), "--model": "minilm"}
    for flag, value in zip(args[::2], args[1::2]):
        base[flag] = value
    with pytest.raises(SystemExit) as exit_info:
        main(["cos", "eval", *[x for pair in base.items() for x in pair]])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_aligned_rerank_bases_are_the_chain_scores_of_each_group(hotpot_data):
    """The retrieval scores the reranker is trained on top of (one batched pass per skill) equal, group by group,
    the dot products of the model's own query and passage vectors: single retrieval for hop-1 groups, expanded
    retrieval for hop-2 ones; cached or not."""
    from sleuth.systems.chain_of_skills.chain_scores import HOP1_RERANK_WEIGHT
    from sleuth.systems.chain_of_skills.model import load_model
    from sleuth.systems.chain_of_skills.training import ContextCache, retrieval_scores

    _, _, data = hotpot_data
    hop1 = [e for e in data["reranking"] if " [SEP] " not in e.query][:3]
    hop2 = [e for e in data["reranking"] if " [SEP] " in e.query][:3]
    groups = [[(e.query, e.positive)] + [(e.query, n) for n in e.negatives[:2]] for e in (hop1[0], *hop2, *hop1[1:])]
    model = load_model(None)
    for cache in (None, ContextCache(model)):
        bases = retrieval_scores(torch, model, groups, cache)
        assert len(bases) == len(groups)
        for group, (scores, weight) in zip(groups, bases):
            question, _, first = group[0][0].partition(" [SEP] ")
            skill, query = ("expanded", (question, first)) if first else ("retrieval", question)
            passages = [p for _, p in group]
            expected = model.encode(passages, skill, "context") @ model.encode([query], skill)[0]
            assert weight == (1.0 if first else HOP1_RERANK_WEIGHT)
            np.testing.assert_allclose(scores.numpy(), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_route_gives_the_reranker_an_expert_of_its_own(data_dir, tmp_path, capsys):
    """`--route reranking=6,6` adds a seventh expert that only the reranker reads: the saved model routes the chain's
    reranking through it (the expanded query keeps expert 4, as in the paper's table) and training moved its deltas."""
    from sleuth.systems.chain_of_skills.model import MultiExpertEncoder

    folder, out = data_dir / "hotpotqa", tmp_path / "own-reranker"
    main(["cos", "train", "--hotpotqa", str(folder / "hotpot_train_100.json"), "--hotpotqa-corpus",
          str(folder / "hotpot_train_100_corpus.json"), "--variant", "lora", "--frozen-expert", "1", "--frozen-expert",
          "3", "--expert-layer", "5", "--pooling", "mean", "--route", "reranking=6,6", "--max-steps", "5",
          "--batch-size", "2", "--max-length", "64", "--lr", "1e-2", "--sampling", "round-robin", "--threads", "1",
          "--out", str(out)])
    loaded = MultiExpertEncoder.load(out)
    assert loaded.config.num_experts == 7
    assert [loaded.expert_for(skill, side) for skill, side in (("reranking", "query"), ("reranking", "context"),
                                                               ("expanded", "query"), ("retrieval", "query"))] \
        == [6, 6, 4, 0]
    deltas = {key: float(value.abs().max()) for key, value in loaded.adapter_state().items() if ".lora_b." in key}
    assert any(key.endswith(".lora_b.6") and moved > 0 for key, moved in deltas.items())
    assert "reranking" in json.loads((out / "cos_training.json").read_text())["steps_per_skill"]


@pytest.mark.parametrize("args, message", [
    (["--route", "reranking=6"], "--route expects SKILL=QUERY_EXPERT,CONTEXT_EXPERT (e.g. reranking=6,6), got "
                                 "'reranking=6'"),
    (["--route", "ranking=6,6"], "--route: unknown skill 'ranking'"),
    (["--route", "reranking=6,6", "--model", "cos-minilm-lora"], "--route sets the routing of a fresh model"),
])
def test_cos_train_bad_route_is_one_line(args, message, data_dir, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["cos", "train", "--hotpotqa", str(data_dir / "hotpotqa" / "hotpot_train_100.json"), *args,
              "--out", str(tmp_path / "m")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("args, message", [
    (["--weight", "retrieval=abc"], "--weight expects SKILL=NUMBER"),
    (["--weight", "span=-1"], "skill weights must be >= 0"),
    (["--checkpoint-at", "5", "--max-steps", "3"], "checkpoints must be steps between 1 and max_steps - 1 (2)"),
])
def test_cos_train_schedule_is_checked_before_the_data_is_read(args, message, tmp_path, capsys):
    """A bad schedule option is named before any training file is read (it was, after 11-15 s of loading): here
    the data file is broken, and the option's error is the one reported."""
    broken = tmp_path / "broken.json"
    broken.write_text("[{", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["cos", "train", "--hotpotqa", str(broken), *args, "--out", str(tmp_path / "m")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
