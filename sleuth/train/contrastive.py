"""Bi-encoder contrastive fine-tuning: in-batch negatives plus hard negatives per example (DPR / DHR recipe).

One shared encoder (a sentence-transformers model, or a plain transformers model given mean pooling) embeds both the
query and the candidates; embeddings are L2-normalised (sleuth's encoders search by cosine) and scaled by ``scale``.
Every query is scored against all positives and hard negatives of its batch; the loss is the negative log-likelihood of
its own positive (paper Eq. in section 2.2). A candidate with the same id as the query's positive elsewhere in the batch
(the same passage serving two questions) is masked out instead of counted as a negative.

Checkpoints are ordinary sentence-transformers model directories, or with ``lora_rank`` a LoRA adapter over the frozen
backbone (a few MB, what can ship inside the package): ``load_encoder(path)`` loads either.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError, MissingExtraError
from sleuth.io import atomic_write_text
from sleuth.models.registry import backbone_dir, backbone_name
from sleuth.progress import progress
from sleuth.train.budget import budgeted_batches, total_steps
from sleuth.train.optimisation import Optimisation


@dataclass
class ContrastiveExample:
    """A query, its positive text and hard negative texts; ids (when known) let in-batch duplicates be masked."""

    query: str
    positive: str
    negatives: list[str] = field(default_factory=list)
    positive_id: str | None = None
    negative_ids: list[str | None] = field(default_factory=list)
    also_relevant: frozenset[str] = frozenset()  # ids of the query's other positives: masked, never negatives


@dataclass
class TrainConfig:
    """Optimisation settings (DHR: lr 2e-5, AdamW, linear schedule with warm-up)."""

    lr: float = 2e-5
    batch_size: int = 16
    epochs: int = 1
    max_steps: int | None = None  # stop after this many steps (None: run every epoch)
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    max_grad_norm: float = 2.0  # DPR's gradient clipping
    scale: float = 20.0  # inverse temperature on cosine scores (sentence-transformers' MNRL default)
    max_length: int | None = None  # token limit (None: the model's own max_seq_length)
    seed: int = 13
    device: str = "cpu"
    show_progress: bool = True
    lora_rank: int | None = None  # train a LoRA adapter of this rank over the frozen backbone (None: every weight)
    lora_layers: tuple[int, ...] | None = None  # encoder layers with a LoRA (None: all)
    max_minutes: float | None = None  # stop after this much wall time (the schedule still spans every step)

    def check(self) -> TrainConfig:
        if self.lr <= 0 or self.batch_size < 1 or self.epochs < 1 or (self.max_steps is not None and self.max_steps < 1):
            raise ConfigError("training needs lr > 0, batch_size >= 1, epochs >= 1 and max_steps >= 1 when given")
        if self.lora_rank is not None and self.lora_rank < 1:
            raise ConfigError("training: lora_rank must be at least 1")
        return self


@dataclass
class TrainResult:
    """Where the model was saved and how the loss went (one value per optimisation step)."""

    path: Path
    losses: list[float]
    steps: int
    seconds: float

    def first_last(self, window: int = 5) -> tuple[float, float]:
        """Mean loss of the first and the last ``window`` steps."""
        window = max(1, min(window, len(self.losses) // 2 or 1))
        return (sum(self.losses[:window]) / window, sum(self.losses[-window:]) / window)


def torch_modules():
    """torch and sentence-transformers, or a MissingExtraError naming the extra."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise MissingExtraError("torch and sentence-transformers", "torch", "training") from None
    return torch, SentenceTransformer


def load_trainable(model: str | Path, device: str = "cpu", max_length: int | None = None):
    """A SentenceTransformer from a model directory (a plain transformers directory gets mean pooling)."""
    _, SentenceTransformer = torch_modules()
    from sleuth.models.quiet import quiet_model_load

    try:
        with quiet_model_load():
            st = SentenceTransformer(str(model), device=device)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load model '{model}' for training: {str(exc).splitlines()[0]}") from None
    if max_length:
        st.max_seq_length = max_length
    return st


def batch_layout(batch: Sequence[ContrastiveExample]) -> tuple[list[str], list[str], list[int], list[list[int]]]:
    """Queries, the batch's candidate texts (positives first, then every hard negative), each query's positive
    column, and per query the columns to mask (other candidates that are its own positive under another id slot)."""
    queries = [e.query for e in batch]
    candidates = [e.positive for e in batch]
    ids: list[str | None] = [e.positive_id for e in batch]
    for example in batch:
        candidates.extend(example.negatives)
        ids.extend(list(example.negative_ids) + [None] * (len(example.negatives) - len(example.negative_ids)))
    masks = []
    for i, example in enumerate(batch):
        masks.append([j for j, cid in enumerate(ids)
                      if j != i and ((cid is not None and (cid == example.positive_id or cid in example.also_relevant))
                                     or candidates[j] == example.positive)])
    return queries, candidates, list(range(len(batch))), masks


def contrastive_loss(query_embeddings, candidate_embeddings, positives: Sequence[int],
                     masks: Sequence[Sequence[int]] = (), scale: float = 20.0):
    """Mean negative log-likelihood of each query's positive among all candidates (cosine * scale, masked -inf)."""
    torch, _ = torch_modules()
    q = torch.nn.functional.normalize(query_embeddings, dim=-1)
    c = torch.nn.functional.normalize(candidate_embeddings, dim=-1)
    scores = scale * q @ c.T
    if masks:
        mask = torch.zeros_like(scores, dtype=torch.bool)
        for i, columns in enumerate(masks):
            mask[i, list(columns)] = True
        scores = scores.masked_fill(mask, float("-inf"))
    target = torch.as_tensor(list(positives), device=scores.device)
    return torch.nn.functional.cross_entropy(scores, target)


def embed(model, texts: list[str]):
    """Sentence embeddings of ``texts`` with gradients (tokenised with the model's own limit)."""
    features = model.preprocess(texts) if hasattr(model, "preprocess") else model.tokenize(texts)
    features = {k: v.to(model.device) if hasattr(v, "to") else v for k, v in features.items()}
    return model(features)["sentence_embedding"]


def batches(examples: Sequence[ContrastiveExample], batch_size: int, rng: random.Random) -> list[list[ContrastiveExample]]:
    """The examples shuffled by ``rng`` and cut into batches (the last one may be smaller; a batch of one is kept)."""
    order = list(range(len(examples)))
    rng.shuffle(order)
    return [[examples[i] for i in order[s:s + batch_size]] for s in range(0, len(order), batch_size)]


def train_contrastive(model: str | Path, examples: Sequence[ContrastiveExample], out: str | Path,
                      config: TrainConfig = TrainConfig(), log_name: str = "loss.json") -> TrainResult:
    """Fine-tune ``model`` on ``examples`` and save it to ``out`` (a sentence-transformers directory, or with
    ``config.lora_rank`` a LoRA adapter; ``model`` may be such an adapter, whose training then goes on) with
    ``out/<log_name>``: the loss of every step, the configuration and the timing."""
    torch, _ = torch_modules()
    config.check()
    if not examples:
        raise ConfigError("no training examples")
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    lora = lora_settings(config)
    adapter = None
    if lora is not None:
        from sleuth.models.adapters import adapter_info, is_adapter

        if is_adapter(model):  # go on training a LoRA adapter (a later round): its own backbone, its deltas
            adapter, model = Path(model), adapter_info(model)["backbone"]
    st = load_trainable(backbone_dir(model), config.device, config.max_length)
    if lora is not None:
        from sleuth.models.adapters import add_lora, continue_lora

        st[0].model = add_lora(st[0].model, lora) if adapter is None else continue_lora(st[0].model, adapter, lora)
    st.train()
    total = total_steps(len(examples), config.batch_size, config.epochs, config.max_steps)
    optimisation = Optimisation(st, config.lr, total, config.warmup_ratio, config.weight_decay, config.max_grad_norm)
    losses: list[float] = []
    start = time.perf_counter()
    with progress(f"training {Path(out).name}", total, "steps", config.show_progress) as task:
        for batch in budgeted_batches(lambda: batches(examples, config.batch_size, rng), total, config.max_minutes,
                                      start):
            queries, candidates, positives, masks = batch_layout(batch)
            loss = contrastive_loss(embed(st, queries), embed(st, candidates), positives, masks, config.scale)
            losses.append(optimisation.step(loss))
            task.advance()
            task.note(f"loss {losses[-1]:.3f}")
    st.eval()
    out = Path(out)
    seconds = time.perf_counter() - start
    card = bi_encoder_card(backbone_name(model), len(examples), losses, config, seconds, lora is not None)
    if lora is not None:
        from sleuth.models.adapters import save_adapter

        save_adapter(st[0].model, out, backbone_name(model), lora, card=card, extra={"kind": "bi-encoder"})
    else:
        from sleuth.io import atomic_directory
        from sleuth.models.adapters import MODEL_MARKERS
        from sleuth.models.quiet import quiet_model_load

        # swapped in whole (before: written into the folder, among an earlier run's files), without transformers'
        # "Writing model shards" bars, with sleuth's card (before: the base model's, word for word)
        with atomic_directory(out, MODEL_MARKERS) as staged, quiet_model_load():
            st.save(str(staged))
            (staged / "README.md").write_text(card, encoding="utf-8")
    result = TrainResult(out, losses, len(losses), seconds)
    write_loss_log(out / log_name, result, config, len(examples), backbone_name(model))
    return result


def lora_settings(config: TrainConfig):
    """The LoRA of a bi-encoder run (every encoder linear, no head: mean pooling has no weights), or None."""
    if config.lora_rank is None:
        return None
    from sleuth.models.adapters import LoraSettings

    return LoraSettings(rank=config.lora_rank, alpha=2 * config.lora_rank, layers=config.lora_layers,
                        modules_to_save=())


def bi_encoder_card(base: str, examples: int, losses: list[float], config: TrainConfig, seconds: float,
                    adapter: bool) -> str:
    """The model card of a trained bi-encoder (``dhr train``'s encoders, ``quest train-dense``)."""
    from sleuth.train.card import hardware_line, training_card

    what = f"a LoRA adapter of rank {config.lora_rank}" if adapter else "every weight"
    loss = f"; loss {losses[0]:.3f} -> {losses[-1]:.3f}" if losses else ""
    return training_card(
        "Bi-encoder (contrastive, in-batch negatives)", base, [f"{examples:,} (query, positive, negatives) examples"],
        [f"{what}; {len(losses):,} steps of batch {config.batch_size} (epochs {config.epochs}, max steps "
         f"{config.max_steps}), lr {config.lr}, warm-up {config.warmup_ratio}, max length {config.max_length}, "
         f"scale {config.scale}{loss}", f"time: {seconds:.0f} s; the loss of every step in the loss log beside it"],
        config.seed, hardware=hardware_line(config.device))


def write_loss_log(path: Path, result: TrainResult, config: TrainConfig, examples: int, base: str) -> None:
    """The loss curve and the run's settings as JSON (atomically)."""
    payload: dict[str, Any] = {"base_model": base, "examples": examples, "steps": result.steps,
                               "seconds": round(result.seconds, 2), "config": asdict(config), "losses": result.losses}
    atomic_write_text(path, json.dumps(payload, indent=1) + "\n")
