"""The int8 copy of the Chain-of-Skills encoder on real HotpotQA dev questions (untrained MiniLM experts): it keeps
the retrieval and reranking rankings close to float32, leaves the original model untouched, and runs a chain from
YAML (``int8: true``)."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch

from sleuth.corpus.hotpotqa import hotpotqa_context_documents, read_hotpotqa_questions
from sleuth.corpus.model import Passage
from sleuth.pipelines.config import load_pipeline
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.systems.chain_of_skills.model import MultiExpertEncoder
from sleuth.systems.chain_of_skills.quantise import is_quantised, quantise
from sleuth.systems.chain_of_skills.skill_index import SkillIndex
from sleuth.systems.chain_of_skills.stages import Rerank, SingleRetrieve

QUESTIONS = 6


@pytest.fixture(scope="module")
def hotpot(data_dir):
    """Six dev questions, their 60 context paragraphs, the float32 model and its int8 copy."""
    path = data_dir / "hotpotqa" / "hotpot_dev_distractor_100.json"
    questions = list(itertools.islice(read_hotpotqa_questions(path), QUESTIONS))
    wanted = {t for q in questions for t in q.metadata["context_titles"]}
    passages = [Passage(d.id, d.id, "".join(d.metadata["sentences"]).strip(), (d.id,))
                for d in hotpotqa_context_documents(path) if d.id in wanted]
    model = MultiExpertEncoder.from_backbone("minilm")
    return questions, passages, model, quantise(model)


def overlap(a, b, k: int) -> float:
    return len({h.id for h in a[:k]} & {h.id for h in b[:k]}) / k


def test_int8_keeps_the_retrieval_and_reranking_rankings(hotpot):
    questions, passages, model, int8 = hotpot
    index = SkillIndex.build(passages, model, "retrieval")  # the index stays float32
    texts = [q.text for q in questions]
    full, small = SingleRetrieve(model, index).retrieve(texts, 10), SingleRetrieve(int8, index).retrieve(texts, 10)
    # measured: top-10 overlap 0.98 on average, the same top passage for all 6 questions
    assert np.mean([overlap(a, b, 10) for a, b in zip(full, small)]) >= 0.8
    assert np.mean([a[0].id == b[0].id for a, b in zip(full, small)]) >= 0.8
    correlations = []
    for question, hits in zip(texts, full):
        scores = np.array(Rerank(model).scores([question] * len(hits), hits))
        quantised = np.array(Rerank(int8).scores([question] * len(hits), hits))
        assert np.abs(scores - quantised).max() > 0  # really another computation
        correlations.append(np.corrcoef(scores, quantised)[0, 1])
    assert min(correlations) >= 0.85 and np.mean(correlations) >= 0.9  # measured: 0.96 / 0.97


def test_quantise_copies_and_leaves_the_model_untouched(hotpot):
    questions, _, model, int8 = hotpot
    assert is_quantised(int8) and not is_quantised(model)
    assert int8.bert is not model.bert and int8.tokenizer is model.tokenizer and int8.config == model.config
    assert len(int8.switches) == len(model.switches) > 0
    before = model.encode([questions[0].text], "retrieval")
    int8.encode([questions[0].text], "linking")  # routes the copy's experts, not the model's
    assert {s.active for s in model.switches} == {model.expert_for("retrieval")} != {model.expert_for("linking")}
    assert {s.active for s in int8.switches} == {model.expert_for("linking")}
    assert all(isinstance(p, torch.nn.Parameter) and p.dtype == torch.float32 for p in model.bert.parameters())
    np.testing.assert_array_equal(model.encode([questions[0].text], "retrieval"), before)


def test_an_int8_chain_from_yaml(two_dev_questions, two_question_corpus, tmp_path):
    questions = two_dev_questions[0]
    workspace = Workspace(CorpusSource(two_question_corpus, format="hotpotqa"), home=tmp_path / "home",
                          show_progress=False)
    limits = {"k_retrieval": 8, "k_link": 2, "k_hop1": 3, "k_expanded": 4, "k_hop2_link": 1, "k": 20}
    runs = {}
    for int8 in (False, True):
        config = tmp_path / f"chain{int8}.yaml"
        config.write_text(json.dumps({"name": "c", "stages": [{"cos_chain": {"chain": "hotpotqa", "int8": int8,
                                                                             **limits}}]}), encoding="utf-8")
        pipeline = load_pipeline(config, workspace)
        assert is_quantised(pipeline.stages[0].rerank.model) == int8  # the one stage: the chain
        runs[int8] = pipeline(questions)
    for question in questions:
        full, small = runs[False][question.id], runs[True][question.id]
        assert full and small and len(small) <= 3 * (4 + 10)
        assert overlap(full, small, 5) >= 0.4
