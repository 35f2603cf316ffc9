"""Linear heads over frozen vectors (sleuth.train.heads), as the SQuAD DHR bench trains them: an untrained head is
the identity, training lowers the loss and lifts the positives, bad input is refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sleuth.errors import ConfigError
from sleuth.train.contrastive import TrainConfig
from sleuth.train.heads import LinearHead, VectorExample, VectorTask, train_linear_head


def test_identity_head_keeps_unit_vectors(tmp_path):
    vectors = np.random.default_rng(0).normal(size=(5, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    head = LinearHead.identity(8)
    assert np.allclose(head.apply(vectors), vectors, atol=1e-6)
    head.save(tmp_path / "head.npy")
    assert np.array_equal(LinearHead.load(tmp_path / "head.npy").matrix, head.matrix)


def test_bad_tasks_are_refused():
    task = VectorTask(np.zeros((2, 4), np.float32), np.zeros((2, 3), np.float32), [VectorExample(0, 1)])
    with pytest.raises(ConfigError, match="dimension"):
        train_linear_head([task], TrainConfig(max_steps=1))
    with pytest.raises(ConfigError, match="max_steps"):
        train_linear_head([VectorTask(task.queries, task.queries, [])], TrainConfig(max_steps=1))


@pytest.mark.slow
def test_head_learns_real_question_passage_pairs(data_dir):
    """MiniLM vectors of 150 NQ questions, their gold passages and 150 other passages, one hard negative each (the
    best-scoring other passage): the head's loss falls and the gold passages' mean rank improves."""
    from sleuth.models.registry import load_encoder

    questions = [json.loads(line) for line in open(data_dir / "nq" / "questions.jsonl", encoding="utf-8")][:150]
    rows = [json.loads(line) for line in open(data_dir / "nq" / "corpus.jsonl", encoding="utf-8")]
    by_id = {r["_id"]: r for r in rows}
    gold_ids = [q["gold_passage"] for q in questions]
    pool = [by_id[i] for i in gold_ids] + [r for r in rows if r["_id"] not in set(gold_ids)][:150]
    encoder = load_encoder("minilm")
    queries = encoder.encode_queries([q["question"] for q in questions])
    passages = encoder.encode_passages([f"{p['title']} {p['text']}" for p in pool])
    zero_shot = queries @ passages.T
    zero_shot[np.arange(150), np.arange(150)] = -np.inf
    examples = [VectorExample(i, i, [int(zero_shot[i].argmax())]) for i in range(150)]

    def mean_rank(head: LinearHead) -> float:
        scores = head.apply(queries) @ head.apply(passages).T
        return float(np.mean((scores >= scores[np.arange(150), np.arange(150)][:, None]).sum(1)))

    result = train_linear_head([VectorTask(queries, passages, examples)],
                               TrainConfig(lr=5e-3, batch_size=16, max_steps=60, show_progress=False))
    assert np.mean(result.losses[-10:]) < np.mean(result.losses[:10])
    base = mean_rank(LinearHead.identity(queries.shape[1]))
    assert base > 1.0 and mean_rank(result.head) < base
    assert result.examples == 6 * 150 and result.examples_per_second > 0  # 60 steps = 6 epochs of 10 batches
