"""Contrastive training of a linear head over frozen, precomputed embeddings (the encoder itself stays fixed).

A head maps a vector ``x`` to ``normalise(x @ (I + A))``; ``A`` starts at zero, so an untrained head is the frozen
encoder. Queries and candidates go through the same head (like sleuth's one-model bi-encoders), so a trained head
re-scores an existing index by transforming its stored vectors, without encoding a text again. The loss is the one
of :mod:`sleuth.train.contrastive`: each query against its positive, its hard negatives and every other candidate of
the batch (in-batch negatives), candidates with the query's own positive id masked out.

Several tasks (e.g. DHR's document and passage objectives) can train one head: steps go round-robin over the tasks,
``max_steps`` steps per task.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sleuth.errors import ConfigError
from sleuth.train.contrastive import TrainConfig, contrastive_loss, torch_modules
from sleuth.train.optimisation import Optimisation


@dataclass
class VectorExample:
    """A query row, its positive candidate row and hard negative candidate rows."""

    query: int
    positive: int
    negatives: list[int] = field(default_factory=list)


@dataclass
class VectorTask:
    """Query vectors, candidate vectors (rows are candidate ids) and the examples that index them."""

    queries: np.ndarray
    candidates: np.ndarray
    examples: list[VectorExample]


class LinearHead:
    """``normalise(x @ matrix)``; the identity matrix is the untrained head."""

    def __init__(self, matrix: np.ndarray):
        self.matrix = np.asarray(matrix, dtype=np.float32)

    @classmethod
    def identity(cls, dim: int) -> LinearHead:
        return cls(np.eye(dim, dtype=np.float32))

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        out = np.asarray(vectors, dtype=np.float32) @ self.matrix
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def save(self, path: str | Path) -> None:
        np.save(path, self.matrix)

    @classmethod
    def load(cls, path: str | Path) -> LinearHead:
        return cls(np.load(path))


@dataclass
class HeadResult:
    """The trained head, the loss of every step (all tasks interleaved) and the timing."""

    head: LinearHead
    losses: list[float]
    seconds: float
    examples: int  # examples seen (sum of batch sizes)

    @property
    def examples_per_second(self) -> float:
        return self.examples / max(self.seconds, 1e-9)


def task_batches(task: VectorTask, batch_size: int, rng: random.Random) -> Iterator[list[VectorExample]]:
    """Endless shuffled batches of a task's examples (a new shuffle every epoch)."""
    while True:
        order = list(range(len(task.examples)))
        rng.shuffle(order)
        for start in range(0, len(order), batch_size):
            yield [task.examples[i] for i in order[start:start + batch_size]]


def batch_tensors(task: VectorTask, batch: Sequence[VectorExample], torch):
    """Query vectors, candidate vectors (positives first, then the hard negatives) and the masks of duplicates."""
    rows = [e.positive for e in batch] + [r for e in batch for r in e.negatives]
    masks = [[j for j, row in enumerate(rows) if j != i and row == e.positive] for i, e in enumerate(batch)]
    queries = torch.from_numpy(np.ascontiguousarray(task.queries[[e.query for e in batch]], dtype=np.float32))
    candidates = torch.from_numpy(np.ascontiguousarray(task.candidates[rows], dtype=np.float32))
    return queries, candidates, masks


def train_linear_head(tasks: Sequence[VectorTask], config: TrainConfig) -> HeadResult:
    """Train one head on ``tasks`` for ``config.max_steps`` steps per task (batch ``config.batch_size``)."""
    torch, _ = torch_modules()
    config.check()
    if not tasks or any(not t.examples for t in tasks) or not config.max_steps:
        raise ConfigError("a linear head needs examples for every task and max_steps")
    dims = {t.queries.shape[1] for t in tasks} | {t.candidates.shape[1] for t in tasks}
    if len(dims) != 1:
        raise ConfigError(f"query and candidate vectors differ in dimension: {sorted(dims)}")
    dim = dims.pop()
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    delta = torch.nn.Linear(dim, dim, bias=False)
    torch.nn.init.zeros_(delta.weight)
    total = config.max_steps * len(tasks)
    optimisation = Optimisation(delta, config.lr, total, config.warmup_ratio, config.weight_decay, config.max_grad_norm)
    streams = [task_batches(t, config.batch_size, rng) for t in tasks]
    losses: list[float] = []
    seen = 0
    start = time.perf_counter()
    for step in range(total):
        task = tasks[step % len(tasks)]
        batch = next(streams[step % len(tasks)])
        queries, candidates, masks = batch_tensors(task, batch, torch)
        loss = contrastive_loss(queries + delta(queries), candidates + delta(candidates),
                                list(range(len(batch))), masks, config.scale)
        losses.append(optimisation.step(loss))
        seen += len(batch)
    matrix = np.eye(dim, dtype=np.float32) + delta.weight.detach().numpy().T  # x @ (I + W^T) = x + delta(x)
    return HeadResult(LinearHead(matrix), losses, time.perf_counter() - start, seen)
