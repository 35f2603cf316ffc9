"""Chain-of-Skills multi-task training (Ma et al., ACL 2023, §3.2): one skill per batch, the multi-expert encoder and the
span proposal head trained jointly.

* Bi-encoder skills (``retrieval``, ``expanded``, ``linking``): query vectors through the skill's query expert,
  candidates (every positive of the batch, then every hard negative) through its context expert, dot-product
  scores, cross-entropy of the own positive; a candidate that is the query's own passage under another slot is
  masked (``sleuth.train.contrastive.batch_layout``). Linking queries are the mention vector: the mean of the
  mention's first and last token states, as ``sleuth.systems.chain_of_skills.stages.EntityLink`` computes it.
  When the context expert has no trainable weights (a "lora" model's ``frozen_experts``) the candidates' vectors
  do not change during training: they are computed once, without gradients, and cached (:class:`ContextCache`).
  With ``anchored_links`` (default) linking adds a balanced binary cross-entropy on the same scores (the own entity
  above 0, every other one below): the chain scales link scores by a ratio (eq. 6, ``link * max_retrieval /
  max(max_link, max_retrieval)``), which presumes that an unrelated entity scores near 0, while the softmax alone
  leaves every score shifted by the mention vector's product with the direction all entity vectors share.
* ``reranking``: score = h_CLS . h_first_SEP of the pair (query, passage); cross-entropy of the positive against
  the example's hard negatives (at most ``rerank_negatives`` of them, sampled; and, when it has none, the other
  positives of the batch). Hop-2 examples read "question [SEP] hop-1 passage" as their query, as the chain does.
  With ``aligned_rerank`` (default) the cross-entropy is over the score the chain ranks by, not the reranking score
  alone: hop 1 ``retrieval + 1.5 * rerank`` (the hop-1 order of eq. 7), hop 2 ``expanded + rerank`` (the terms of
  the path score that vary with the hop-2 passage), the retrieval scores computed by the current model without
  gradients. The reranker then learns what retrieval misses, on the scale it is added to (see docs/cos).
* ``span``: ``SpanProposalHead.loss`` on the span expert's token states, gold spans against sampled non-gold spans.

Schedule: the skill of each batch is drawn by ``sampling``: "interleaved" (default: a deterministic smooth weighted
round-robin, so every skill gets its share of the batches, ``weights``, up to one batch, whatever the seed: the span
skill is guaranteed its batches), "weighted" (random draws by weight) or "round-robin". Within a skill, a batch holds
examples of one source (HotpotQA, MuSiQue, SQuAD, ...: ``CosExample.source``), the source drawn with probability
proportional to its example count to the power ``source_temperature`` (0.5: a large source such as SQuAD does not
drown a small one such as HotpotQA). Batches are built by length buckets (examples of similar length together, less
padding). The result is a model directory that ``MultiExpertEncoder.load`` reads (for a "lora" model an adapter of a
few MB), with the span head saved next to it (``span_head.safetensors``) and ``cos_training.json`` (losses, skills,
sources and seconds per step, examples/s).
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter, defaultdict
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
DEFAULT_WEIGHTS = {"retrieval": 1.0, "expanded": 1.0, "reranking": 1.0, "linking": 0.8, "span": 0.5}
SAMPLINGS = ("interleaved", "weighted", "round-robin")
SPAN_NEGATIVES = 32
BUCKET_BATCHES = 20  # a length bucket holds this many batches' worth of examples


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
    sampling: str = "interleaved"
    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    source_temperature: float = 0.5  # a source's share within a skill ~ (its examples) ** this
    rerank_negatives: int | None = 3  # hard negatives per reranking example (sampled; None: all)
    aligned_rerank: bool = True  # train the reranker on the chain's sum of retrieval and reranking scores
    anchored_links: bool = True  # linking: a binary term puts unrelated entities' scores below 0
    bucket: bool = True  # length-bucketed batches
    cache_context: bool = True  # cache the vectors of frozen context sides
    threads: int | None = None  # torch CPU threads (None: torch's default)
    time_budget_s: float | None = None  # stop (and save) after this many seconds; the schedule follows the clock
    checkpoints: tuple[int, ...] = ()  # also save the model after these many steps (checkpoint_dir(out, N))
    seed: int = 13
    device: str = "cpu"

    def check(self) -> CosTrainConfig:
        if self.lr <= 0 or self.batch_size < 1 or self.max_steps < 1:
            raise ConfigError("cos training needs lr > 0, batch_size >= 1 and max_steps >= 1")
        if self.sampling not in SAMPLINGS:
            raise ConfigError(f"unknown sampling '{self.sampling}': use one of {', '.join(SAMPLINGS)}")
        if any(w < 0 for w in self.weights.values()):
            raise ConfigError("skill weights must be >= 0")
        if self.rerank_negatives is not None and self.rerank_negatives < 1:
            raise ConfigError("rerank_negatives must be >= 1 (or None for all)")
        if self.threads is not None and self.threads < 1:
            raise ConfigError("threads must be >= 1")
        if any(step < 1 or step >= self.max_steps for step in self.checkpoints):
            raise ConfigError(f"checkpoints must be steps between 1 and max_steps - 1 ({self.max_steps - 1}); "
                              f"got {sorted(self.checkpoints)}")
        return self


@dataclass
class CosTrainResult:
    path: Path
    losses: list[float]
    skills: list[str]
    seconds: float
    sources: list[str] = field(default_factory=list)
    examples: list[int] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    step_cpu_seconds: list[float] = field(default_factory=list)  # this process's CPU time per step

    def skill_losses(self, skill: str) -> list[float]:
        return [loss for loss, s in zip(self.losses, self.skills) if s == skill]

    def examples_per_second(self) -> float:
        """Training examples per second of step time (batches' examples over the seconds of their steps)."""
        return sum(self.examples) / sum(self.step_seconds) if self.step_seconds else 0.0

    def examples_per_cpu_second(self) -> float:
        """Training examples per CPU second of this process (steadier than wall time on a shared machine)."""
        return sum(self.examples) / sum(self.step_cpu_seconds) if self.step_cpu_seconds else 0.0


def scheduler(data: Mapping[str, Sequence[CosExample]], config: CosTrainConfig) -> Callable[[], str]:
    """A function returning the next batch's skill among the skills with data and a weight > 0 (see the module
    docstring for the three samplings)."""
    rng = random.Random(config.seed)
    skills = [s for s in data if data[s] and config.weights.get(s, 0.0) > 0]
    if not skills:
        raise ConfigError("no training examples for any skill with a weight > 0")
    counter = iter(range(10**12))
    if config.sampling == "round-robin":
        return lambda: skills[next(counter) % len(skills)]
    weights = [config.weights[s] for s in skills]
    if config.sampling == "weighted":
        return lambda: rng.choices(skills, weights)[0]
    credit = dict.fromkeys(skills, 0.0)
    total = sum(weights)

    def interleaved() -> str:  # smooth weighted round-robin: after n picks each skill has n * share, +-1
        for skill, weight in zip(skills, weights):
            credit[skill] += weight
        best = max(skills, key=lambda s: credit[s])
        credit[best] -= total
        return best

    return interleaved


def example_length(example: CosExample) -> int:
    query = example.query if isinstance(example.query, str) else " ".join(example.query)
    return len(query) + len(example.positive)


class Batcher:
    """Batches of one skill's examples, reshuffled whenever the list is used up; with ``bucket`` each pass cuts
    shuffled chunks of :data:`BUCKET_BATCHES` batches into batches of similar length (then shuffles the batches)."""

    def __init__(self, examples: Sequence[CosExample], batch_size: int, rng: random.Random, bucket: bool = False):
        self.examples, self.batch_size, self.rng, self.bucket = list(examples), batch_size, rng, bucket
        self.batches: list[list[int]] = []

    def refill(self) -> None:
        order = list(range(len(self.examples)))
        self.rng.shuffle(order)
        size = self.batch_size
        if not self.bucket:
            self.batches = [order[i:i + size] for i in range(0, len(order) - size + 1, size)] or [order]
            return
        batches = []
        chunk = size * BUCKET_BATCHES
        for start in range(0, len(order), chunk):
            part = sorted(order[start:start + chunk], key=lambda i: example_length(self.examples[i]))
            batches += [part[i:i + size] for i in range(0, len(part), size)]
        full = [b for b in batches if len(b) == size] or batches
        self.rng.shuffle(full)
        self.batches = full

    def next(self) -> list[CosExample]:
        if not self.batches:
            self.refill()
        return [self.examples[i] for i in self.batches.pop()]


class SourceBatcher:
    """One skill's batches, each from one source; sources drawn ~ count ** ``temperature``."""

    def __init__(self, examples: Sequence[CosExample], batch_size: int, rng: random.Random, bucket: bool,
                 temperature: float):
        groups: dict[str, list[CosExample]] = defaultdict(list)
        for example in examples:
            groups[example.source].append(example)
        self.sources = sorted(groups)
        self.weights = [len(groups[s]) ** temperature for s in self.sources]
        self.batchers = {s: Batcher(groups[s], batch_size, rng, bucket) for s in self.sources}
        self.rng = rng

    def next(self) -> tuple[str, list[CosExample]]:
        source = self.rng.choices(self.sources, self.weights)[0] if len(self.sources) > 1 else self.sources[0]
        return source, self.batchers[source].next()


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


class ContextCache:
    """Pooled vectors of texts read by an unchanged backbone (frozen experts), computed once without gradients and
    without dropout, kept by text."""

    def __init__(self, model, batch_size: int = 32):
        self.model, self.batch_size = model, batch_size
        self.vectors: dict[str, Any] = {}
        self.hits = self.misses = 0

    def __call__(self, torch, texts: Sequence[str], skill: str):
        missing = list(dict.fromkeys(t for t in texts if t not in self.vectors))
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        if missing:
            training = self.model.bert.training
            self.model.bert.eval()
            with torch.no_grad():
                order = sorted(missing, key=len)
                for i in range(0, len(order), self.batch_size):
                    part = order[i:i + self.batch_size]
                    batch, states = run(self.model, part, skill, "context")
                    for text, vector in zip(part, pooled(self.model, states, batch["attention_mask"])):
                        self.vectors[text] = vector.detach()
            self.model.bert.train(training)
        return torch.stack([self.vectors[t] for t in texts])


def token_span(offsets, start: int, end: int) -> tuple[int, int] | None:
    """First and last token (positions) whose characters overlap [start, end) (special tokens excluded)."""
    inside = [k for k, (a, b) in enumerate(offsets) if b > a and a < end and b > start]
    return (inside[0], inside[-1]) if inside else None


def dot_loss(torch, queries, candidates, positives: Sequence[int], masks: Sequence[Sequence[int]],
             anchored: bool = False):
    """Cross-entropy of each query's own positive among the candidates (masked slots left out); with ``anchored``
    plus the balanced binary cross-entropy of the raw scores (positive > 0, every unmasked other < 0)."""
    raw = queries @ candidates.T
    mask = torch.zeros_like(raw, dtype=torch.bool)
    for i, columns in enumerate(masks):
        mask[i, list(columns)] = True
    target = torch.as_tensor(list(positives), device=raw.device)
    loss = torch.nn.functional.cross_entropy(raw.masked_fill(mask, float("-inf")), target)
    if not anchored:
        return loss
    is_positive = torch.zeros_like(raw, dtype=torch.bool)
    is_positive[torch.arange(len(target)), target] = True
    binary = torch.nn.functional.binary_cross_entropy_with_logits(raw, is_positive.float(), reduction="none")
    negative = ~is_positive & ~mask
    return loss + binary[is_positive].mean() + (binary[negative].mean() if negative.any() else 0.0)


def bi_encoder_loss(torch, model, batch: Sequence[CosExample], skill: str, cache: ContextCache | None = None,
                    anchored: bool = False):
    layout = [ContrastiveExample(str(e.query), e.positive, list(e.negatives), e.positive_id, list(e.negative_ids))
              for e in batch]
    _, candidates, positives, masks = batch_layout(layout)
    if cache is not None and model.frozen_side(skill, "context"):
        cand = cache(torch, candidates, skill)
    else:
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
        return dot_loss(torch, torch.stack(vectors), cand, [positives[r] for r in keep], [masks[r] for r in keep],
                        anchored)
    q_batch, q_states = run(model, [e.query for e in batch], skill, "query")
    return dot_loss(torch, pooled(model, q_states, q_batch["attention_mask"]), cand, positives, masks)


def retrieval_scores(torch, model, groups: Sequence[Sequence[tuple[str, str]]], cache: ContextCache | None):
    """Per group of (query, passage) pairs, the retrieval score the chain adds the reranking score to (no
    gradients): single retrieval for a question, expanded retrieval for "question [SEP] hop-1 passage"; and the
    weight of the reranking score in the chain's sum (eq. 7: 1.5 at hop 1, 1 at hop 2). One forward pass per skill
    and side for the whole batch (a pass per group left a GPU idle between tiny batches)."""
    from sleuth.systems.chain_of_skills.chain_scores import HOP1_RERANK_WEIGHT

    training = model.bert.training
    model.bert.eval()
    by_skill: dict[str, list[int]] = {"retrieval": [], "expanded": []}
    texts: list[Any] = []
    for g, group in enumerate(groups):
        first, _, hop1 = group[0][0].partition(" [SEP] ")
        by_skill["expanded" if hop1 else "retrieval"].append(g)
        texts.append((first, hop1) if hop1 else group[0][0])
    scores: list[Any] = [None] * len(groups)
    with torch.no_grad():
        for skill, members in by_skill.items():
            if not members:
                continue
            batch, states = run(model, [texts[g] for g in members], skill, "query")
            vectors = pooled(model, states, batch["attention_mask"])
            passages = [passage for g in members for _, passage in groups[g]]
            if cache is not None and model.frozen_side(skill, "context"):
                candidates = cache(torch, passages, skill)
            else:
                tokens, cand_states = run(model, passages, skill, "context")
                candidates = pooled(model, cand_states, tokens["attention_mask"])
            start = 0
            for g, vector in zip(members, vectors):
                scores[g] = candidates[start:start + len(groups[g])] @ vector
                start += len(groups[g])
    model.bert.train(training)
    return [(scores[g], 1.0 if isinstance(texts[g], tuple) else HOP1_RERANK_WEIGHT) for g in range(len(groups))]


def rerank_loss(torch, model, batch: Sequence[CosExample], rng: random.Random | None = None,
                negatives: int | None = None, aligned: bool = False, cache: ContextCache | None = None):
    groups = []
    for i, example in enumerate(batch):
        others = list(example.negatives) or [e.positive for j, e in enumerate(batch)
                                             if j != i and e.positive_id != example.positive_id]
        if negatives is not None and len(others) > negatives:
            others = (rng or random).sample(others, negatives)
        if others:
            groups.append([(str(example.query), example.positive)] + [(str(example.query), o) for o in others])
    if not groups:
        return None
    pairs = [pair for group in groups for pair in group]
    tokens, states = run(model, pairs, "reranking", "query")
    sep = model.tokenizer.sep_token_id
    first_sep = (tokens["input_ids"] == sep).int().argmax(dim=1)
    scores = (states[:, 0] * states[torch.arange(len(pairs)), first_sep]).sum(-1)
    bases = retrieval_scores(torch, model, groups, cache) if aligned else None
    losses, start = [], 0
    for g, group in enumerate(groups):
        group_scores = scores[start:start + len(group)]
        if bases is not None:
            base, weight = bases[g]
            group_scores = base + weight * group_scores
        group_scores = group_scores.unsqueeze(0)
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


def schedule_factor(done: float, warmup_ratio: float) -> float:
    """Learning-rate factor at fraction ``done`` of the run: linear warm-up, then linear decay to 0."""
    if done < warmup_ratio:
        return done / warmup_ratio
    return max(0.0, (1.0 - done) / (1.0 - warmup_ratio)) if warmup_ratio < 1 else 1.0


class _Trainable:
    """The parameters that need gradients (a "lora" model's deltas and the span head; everything otherwise)."""

    def __init__(self, modules):
        self.params = [p for p in modules.parameters() if p.requires_grad]

    def parameters(self):
        return iter(self.params)


def train_cos(model, head, data: Mapping[str, Sequence[CosExample]], out: str | Path,
              config: CosTrainConfig = CosTrainConfig(), log: Callable[[str], None] | None = None,
              card: Callable[[CosTrainResult], str] | None = None) -> CosTrainResult:
    """Train ``model`` (a MultiExpertEncoder) and ``head`` (a SpanProposalHead) on ``data`` (skill -> examples) for
    ``config.max_steps`` batches (or until ``config.time_budget_s``); save both to ``out`` with
    ``out/cos_training.json`` (per step: loss, skill, source, examples, seconds) and, when ``card`` is given, the
    model card it writes from the result (README.md)."""
    import torch

    config.check()
    unknown = set(data) - set(DEFAULT_WEIGHTS)
    if unknown:
        raise ConfigError(f"unknown skills in the training data: {sorted(unknown)}")
    if config.threads is not None:
        torch.set_num_threads(config.threads)
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
    optimisation = Optimisation(_Trainable(modules), config.lr, config.max_steps, config.warmup_ratio,
                                config.weight_decay, config.max_grad_norm)
    # with a time budget the warm-up / linear decay follows max(steps done, time used) as a fraction of its budget,
    # so a run on a busy machine still ends with a decayed learning rate when its time is up
    timed = config.time_budget_s is not None
    next_skill = scheduler(data, config)
    batchers = {skill: SourceBatcher(examples, config.batch_size, rng, config.bucket, config.source_temperature)
                for skill, examples in data.items() if examples}
    cache = ContextCache(model) if config.cache_context else None
    result = CosTrainResult(Path(out), [], [], 0.0)
    start = time.perf_counter()
    load_start = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    attempts = 0
    stopped = "max_steps"
    while len(result.losses) < config.max_steps:
        if config.time_budget_s is not None and time.perf_counter() - start > config.time_budget_s:
            stopped = "time_budget"
            break
        attempts += 1
        if attempts > 10 * config.max_steps:
            raise ConfigError("cos training: the batches yield no usable examples (no mention tokens found?)")
        skill = next_skill()
        source, batch = batchers[skill].next()
        begin, begin_cpu = time.perf_counter(), time.process_time()
        if skill in BI_ENCODER:
            loss = bi_encoder_loss(torch, model, batch, skill, cache, config.anchored_links and skill == "linking")
        elif skill == "reranking":
            loss = rerank_loss(torch, model, batch, rng, config.rerank_negatives, config.aligned_rerank, cache)
        else:
            loss = span_loss(torch, model, head, batch, rng)
        if loss is None:
            continue
        if timed:
            assert config.time_budget_s is not None
            done = max(len(result.losses) / config.max_steps, (time.perf_counter() - start) / config.time_budget_s)
            for group in optimisation.optimizer.param_groups:
                group["lr"] = config.lr * schedule_factor(min(done, 1.0), config.warmup_ratio)
        result.losses.append(optimisation.step(loss))
        result.step_seconds.append(time.perf_counter() - begin)
        result.step_cpu_seconds.append(time.process_time() - begin_cpu)
        result.skills.append(skill)
        result.sources.append(source)
        result.examples.append(len(batch))
        steps = len(result.losses)
        if steps in config.checkpoints:
            result.seconds = time.perf_counter() - start
            model.config, training_config = saved_config, model.config
            modules.eval()
            save_run(model, head, checkpoint_dir(out, steps),
                     training_record(config, data, result, "checkpoint", cache, load_start), None)
            modules.train()
            model.config = training_config
        if log and (steps % 10 == 0 or steps == config.max_steps):
            log(f"step {steps}/{config.max_steps} {skill} ({source}) loss {result.losses[-1]:.4f} "
                f"[{time.perf_counter() - start:.0f} s, {result.examples_per_second():.2f} examples/s, "
                f"{result.examples_per_cpu_second():.2f} per CPU s]")
    result.seconds = time.perf_counter() - start
    modules.eval()
    model.config = saved_config  # the training token limit is not the model's inference limit
    out = Path(out)
    save_run(model, head, out, training_record(config, data, result, stopped, cache, load_start),
             card(result) if card else None)
    return result


def checkpoint_dir(out: str | Path, steps: int) -> Path:
    """Where a run saving to ``out`` keeps its model after ``steps`` steps: ``OUT-checkpoints/step-N`` (beside ``out``,
    which the final save replaces as a whole)."""
    out = Path(out)
    return out.with_name(f"{out.name}-checkpoints") / f"step-{steps}"


def training_record(config: CosTrainConfig, data: Mapping[str, Sequence[CosExample]], result: CosTrainResult,
                    stopped: str, cache: ContextCache | None, load_start: float | None) -> dict[str, Any]:
    """What ``cos_training.json`` holds: the settings, the data, and per step loss, skill, source and time."""
    import torch

    return {"config": asdict(config), "examples": {s: dict(Counter(e.source for e in v)) for s, v in data.items()},
            "steps": len(result.losses), "stopped_by": stopped, "seconds": round(result.seconds, 2),
            "examples_per_second": round(result.examples_per_second(), 3),
            "examples_per_cpu_second": round(result.examples_per_cpu_second(), 3),
            "steps_per_skill": dict(Counter(result.skills)),
            "context_cache": {"hits": cache.hits, "misses": cache.misses} if cache else None,
            "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
            "load_average": {"start": load_start, "end": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
            "losses": result.losses, "skills": result.skills, "sources": result.sources,
            "step_seconds": [round(s, 3) for s in result.step_seconds],
            "step_cpu_seconds": [round(s, 3) for s in result.step_cpu_seconds], "batch_examples": result.examples}


def save_run(model, head, out: Path, record: dict[str, Any], card: str | None) -> None:
    """Save the model and its span head to ``out`` with ``cos_training.json`` (one atomic swap for an adapter)."""
    from sleuth.systems.chain_of_skills.span_head import SPAN_HEAD_FILE, save_span_head

    def extras(directory: Path) -> None:
        save_span_head(head, directory)
        atomic_write_text(directory / "cos_training.json", json.dumps(record, indent=1) + "\n")

    model.save(out, card=card, extras=extras)
    assert (out / SPAN_HEAD_FILE).is_file()
