"""Chain-of-Skills multi-task training (Ma et al., ACL 2023, §3.2): one skill per batch, the multi-expert encoder and the span
proposal head trained jointly.

* Bi-encoder skills (``retrieval``, ``expanded``, ``linking``): query vectors through the skill's query expert,
  candidates (every positive of the batch, then every hard negative) through its context expert, dot-product
  scores, cross-entropy of the own positive; a candidate that is the query's own passage under another slot is
  masked (``sleuth.train.contrastive.batch_layout``). Linking queries are the mention vector: the mean of the
  mention's first and last token states, as ``sleuth.systems.chain_of_skills.stages.EntityLink`` computes it.
* ``reranking``: score = h_CLS . h_first_SEP of the pair (query, passage); cross-entropy of the positive against
  the example's hard negatives (and, when it has none, the other positives of the batch).
* ``span``: ``SpanProposalHead.loss`` on the span expert's token states, gold spans against sampled non-gold spans.

Batches pick a skill by weighted sampling (``weights``; default equal, the span proposal skill taking 20% of the
linking share: linking 0.8, span 0.2) or round-robin. The result is a model directory that
``MultiExpertEncoder.load`` reads, with the span head saved next to it (``sleuth.systems.chain_of_skills.span_head.save_span_head``),
which the ``cos_chain`` stage loads.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.io import atomic_write_text
from sleuth.systems.chain_of_skills.training_data import CosExample
from sleuth.train.contrastive import ContrastiveExample, batch_layout
from sleuth.train.optimisation import Optimisation

BI_ENCODER = ("retrieval", "expanded", "linking")
DEFAULT_WEIGHTS = {"retrieval": 1.0, "expanded": 1.0, "reranking": 1.0, "linking": 0.8, "span": 0.2}
SPAN_NEGATIVES = 32


@dataclass
class CosTrainConfig:
    """Optimisation and sampling settings of a multi-task run."""

    lr: float = 2e-5
    batch_size: int = 8
    max_steps: int = 100
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    max_grad_norm: float = 2.0
    max_length: int | None = None  # token limit while training (None: the model's)
    sampling: str = "weighted"  # or "round-robin"
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    seed: int = 13
    device: str = "cpu"

    def check(self) -> CosTrainConfig:
        if self.lr <= 0 or self.batch_size < 1 or self.max_steps < 1:
            raise ConfigError("cos training needs lr > 0, batch_size >= 1 and max_steps >= 1")
        if self.sampling not in ("weighted", "round-robin"):
            raise ConfigError(f"unknown sampling '{self.sampling}': use weighted or round-robin")
        if any(w < 0 for w in self.weights.values()):
            raise ConfigError("skill weights must be >= 0")
        return self


@dataclass
class CosTrainResult:
    path: Path
    losses: list[float]
    skills: list[str]
    seconds: float

    def skill_losses(self, skill: str) -> list[float]:
        return [loss for loss, s in zip(self.losses, self.skills) if s == skill]


def scheduler(data: Mapping[str, Sequence[CosExample]], config: CosTrainConfig) -> Callable[[], str]:
    """A function returning the next batch's skill (weighted sampling or round-robin over the skills with data)."""
    rng = random.Random(config.seed)
    skills = [s for s in data if data[s] and config.weights.get(s, 0.0) > 0]
    if not skills:
        raise ConfigError("no training examples for any skill with a weight > 0")
    counter = iter(range(10**12))
    if config.sampling == "round-robin":
        return lambda: skills[next(counter) % len(skills)]
    weights = [config.weights[s] for s in skills]
    return lambda: rng.choices(skills, weights)[0]


class Batcher:
    """Shuffled batches of one skill's examples, reshuffled whenever the list is used up."""

    def __init__(self, examples: Sequence[CosExample], batch_size: int, rng: random.Random):
        self.examples, self.batch_size, self.rng = list(examples), batch_size, rng
        self.order: list[int] = []

    def next(self) -> list[CosExample]:
        if len(self.order) < min(self.batch_size, len(self.examples)):
            order = list(range(len(self.examples)))
            self.rng.shuffle(order)
            self.order = order
        picked, self.order = self.order[:self.batch_size], self.order[self.batch_size:]
        return [self.examples[i] for i in picked]


def pooled(model, states, attention_mask):
    """Pooling as ``MultiExpertEncoder.encode`` does it ([CLS] or masked mean)."""
    if model.config.pooling == "cls":
        return states[:, 0]
    mask = attention_mask.unsqueeze(-1).to(states.dtype)
    return (states * mask).sum(1) / mask.sum(1).clamp(min=1)


def run(model, texts: Sequence[Any], skill: str, side: str, offsets: bool = False):
    """(tokenised batch, last hidden states with gradients) of ``texts`` through the skill's expert."""
    batch = model.tokenize(list(texts), offsets=offsets)
    states = model.forward(batch["input_ids"], batch["attention_mask"], model.expert_for(skill, side),
                           batch.get("token_type_ids"))
    return batch, states


def token_span(offsets, start: int, end: int) -> tuple[int, int] | None:
    """First and last token (positions) whose characters overlap [start, end) (special tokens excluded)."""
    inside = [k for k, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (inside[0], inside[-1]) if inside else None


def dot_loss(torch, queries, candidates, positives: Sequence[int], masks: Sequence[Sequence[int]]):
    scores = queries @ candidates.T
    mask = torch.zeros_like(scores, dtype=torch.bool)
    for i, columns in enumerate(masks):
        mask[i, list(columns)] = True
    scores = scores.masked_fill(mask, float("-inf"))
    return torch.nn.functional.cross_entropy(scores, torch.as_tensor(list(positives), device=scores.device))


def bi_encoder_loss(torch, model, batch: Sequence[CosExample], skill: str):
    layout = [ContrastiveExample(str(e.query), e.positive, list(e.negatives), e.positive_id, list(e.negative_ids))
              for e in batch]
    _, candidates, positives, masks = batch_layout(layout)
    cand_batch, cand_states = run(model, candidates, skill, "context")
    cand = pooled(model, cand_states, cand_batch["attention_mask"])
    if skill == "linking":
        q_batch, q_states = run(model, [e.query for e in batch], skill, "query", offsets=True)
        vectors, keep = [], []
        for row, example in enumerate(batch):
            assert example.mention is not None
            span = token_span(q_batch["offset_mapping"][row].tolist(), *example.mention)
            if span is not None:
                vectors.append((q_states[row, span[0]] + q_states[row, span[1]]) / 2)
                keep.append(row)
        if not keep:
            return None
        return dot_loss(torch, torch.stack(vectors), cand, [positives[r] for r in keep], [masks[r] for r in keep])
    q_batch, q_states = run(model, [e.query for e in batch], skill, "query")
    return dot_loss(torch, pooled(model, q_states, q_batch["attention_mask"]), cand, positives, masks)


def rerank_loss(torch, model, batch: Sequence[CosExample]):
    groups = []
    for i, example in enumerate(batch):
        others = list(example.negatives) or [e.positive for j, e in enumerate(batch)
                                             if j != i and e.positive_id != example.positive_id]
        if others:
            groups.append([(str(example.query), example.positive)] + [(str(example.query), o) for o in others])
    if not groups:
        return None
    pairs = [pair for group in groups for pair in group]
    tokens, states = run(model, pairs, "reranking", "query")
    sep = model.tokenizer.sep_token_id
    first_sep = (tokens["input_ids"] == sep).int().argmax(dim=1)
    scores = (states[:, 0] * states[torch.arange(len(pairs)), first_sep]).sum(-1)
    losses, start = [], 0
    for group in groups:
        group_scores = scores[start:start + len(group)].unsqueeze(0)
        losses.append(torch.nn.functional.cross_entropy(group_scores, torch.zeros(1, dtype=torch.long,
                                                                                  device=scores.device)))
        start += len(group)
    return torch.stack(losses).mean()


def span_loss(torch, model, head, batch: Sequence[CosExample], rng: random.Random):
    from sleuth.systems.chain_of_skills.span_head import candidate_spans

    tokens, states = run(model, [e.query for e in batch], "span", "query", offsets=True)
    losses = []
    for row, example in enumerate(batch):
        offsets = tokens["offset_mapping"][row].tolist()
        gold = [s for s in (token_span(offsets, a, b) for a, b in example.spans) if s is not None]
        positions = [k for k, (a, b) in enumerate(offsets) if b > a]
        negatives = [s for s in candidate_spans(positions) if s not in gold]
        negatives = rng.sample(negatives, min(SPAN_NEGATIVES, len(negatives)))
        if gold and negatives:
            losses.append(head.loss(states[row], gold, negatives))
    return torch.stack(losses).mean() if losses else None


def train_cos(model, head, data: Mapping[str, Sequence[CosExample]], out: str | Path,
              config: CosTrainConfig = CosTrainConfig(), log: Callable[[str], None] | None = None) -> CosTrainResult:
    """Train ``model`` (a MultiExpertEncoder) and ``head`` (a SpanProposalHead) on ``data`` (skill -> examples) for
    ``config.max_steps`` batches; save both to ``out`` with ``out/cos_training.json`` (losses per step and skill)."""
    import torch

    from sleuth.systems.chain_of_skills.span_head import save_span_head

    config.check()
    unknown = set(data) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise ConfigError(f"unknown skills in the training data: {sorted(unknown)}")
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    saved_config = model.config
    if config.max_length:
        model.config = replace(model.config, max_length=config.max_length)
    model.bert.to(config.device)
    model.device = config.device
    head.to(config.device)
    modules = torch.nn.ModuleDict({"bert": model.bert, "span": head})
    modules.train()
    optimisation = Optimisation(modules, config.lr, config.max_steps, config.warmup_ratio, config.weight_decay,
                                config.max_grad_norm)
    next_skill = scheduler(data, config)
    batchers = {skill: Batcher(examples, config.batch_size, rng) for skill, examples in data.items() if examples}
    losses: list[float] = []
    skills: list[str] = []
    start = time.perf_counter()
    attempts = 0
    while len(losses) < config.max_steps:
        attempts += 1
        if attempts > 10 * config.max_steps:
            raise ConfigError("cos training: the batches yield no usable examples (no mention tokens found?)")
        skill = next_skill()
        batch = batchers[skill].next()
        if skill in BI_ENCODER:
            loss = bi_encoder_loss(torch, model, batch, skill)
        elif skill == "reranking":
            loss = rerank_loss(torch, model, batch)
        else:
            loss = span_loss(torch, model, head, batch, rng)
        if loss is None:
            continue
        losses.append(optimisation.step(loss))
        skills.append(skill)
        if log and (len(losses) % 10 == 0 or len(losses) == config.max_steps):
            log(f"step {len(losses)}/{config.max_steps} {skill} loss {losses[-1]:.4f}")
    modules.eval()
    model.config = saved_config  # the training token limit is not the model's inference limit
    out = Path(out)
    model.save(out)
    save_span_head(head, out)
    result = CosTrainResult(out, losses, skills, time.perf_counter() - start)
    payload = {"config": asdict(config), "examples": {s: len(e) for s, e in data.items()},
               "seconds": round(result.seconds, 2), "losses": losses, "skills": skills}
    atomic_write_text(out / "cos_training.json", json.dumps(payload, indent=1) + "\n")
    return result
