"""Fine-tuning QUEST's relevance classifier (Malaviya et al., ACL 2023, Appendix A) on a MiniLM
cross-encoder.

Training data per query: every gold document repeated ``positive_repeats`` times (50 in the paper), plus
``retriever_negatives`` non-gold documents sampled from the retriever's top ``retriever_depth`` (250 of BM25's top
1000) and ``random_negatives`` non-gold documents sampled from the whole corpus (250). The loss is binary
cross-entropy on the logit of the input "query: {query}, doc: {title} {text}" (384 tokens at most). The decision
threshold is then chosen on validation queries by sweeping 0.00, 0.05, ..., 0.95 for the best average F1
(:mod:`sleuth.systems.quest.cut`, which also tries a cut by score gap).

Every count is a named parameter so that CPU runs and tests can shrink them (and say so). On a CPU the full recipe
(about 900 pairs per query) cannot be read in full: ``max_steps`` then trains on the first batches of the shuffled
recipe, i.e. a uniform sample of it. With ``lora`` the backbone stays frozen and only a low-rank adapter (plus the
fresh head) trains; an adapter limited to the top layers skips the backward pass through the lower ones.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.io import atomic_directory, atomic_write_text
from sleuth.models.adapters import MODEL_MARKERS
from sleuth.models.cross_encoder import DEFAULT_BACKBONE, MAX_LENGTH, CrossEncoderClassifier, pair_text
from sleuth.progress import progress
from sleuth.stages.run import Run
from sleuth.train.budget import budgeted_batches, total_steps
from sleuth.train.optimisation import Optimisation

TRAINING_FILE = "training.json"


@dataclass(frozen=True)
class ExampleBudget:
    """How many training examples each query contributes (defaults: the paper's)."""

    positive_repeats: int = 50
    retriever_negatives: int = 250
    random_negatives: int = 250
    retriever_depth: int = 1000
    max_queries: int | None = None  # train on the first N usable queries only (CPU budgets)
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("positive_repeats", "retriever_negatives", "random_negatives", "retriever_depth"):
            if getattr(self, name) < 0:
                raise ConfigError(f"classifier training: {name} must not be negative")


@dataclass(frozen=True)
class TrainingConfig:
    """Optimisation settings (AdamW, linear warm-up and decay, gradient clipping at 1)."""

    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_length: int = MAX_LENGTH
    max_steps: int | None = None
    seed: int = 0
    lora_rank: int | None = None  # train a LoRA of this rank instead of every weight
    lora_layers: tuple[int, ...] | None = None  # encoder layers with a LoRA (None: all)
    threads: int | None = None  # torch CPU threads (1 is fastest on a CPU shared with other work)
    max_minutes: float | None = None  # stop after this much wall time (the schedule still spans max_steps)


@dataclass(frozen=True)
class Documents:
    """Document titles and texts by id (what the classifier reads)."""

    titles: Mapping[str, str]
    texts: Mapping[str, str]

    def input(self, query: str, doc_id: str) -> str:
        return pair_text(query, self.titles.get(doc_id, doc_id), self.texts[doc_id])


def training_pairs(queries: Sequence[Query], gold: Mapping[str, Sequence[str]], documents: Documents,
                   retrieved: Run, budget: ExampleBudget = ExampleBudget()) -> list[tuple[str, float]]:
    """Shuffled ``(classifier input, label)`` pairs. Queries whose gold documents are all missing from
    ``documents`` are skipped (nothing to learn relevance from); gold documents missing from it are left out."""
    rng = random.Random(budget.seed)
    all_ids = sorted(documents.texts)
    pairs: list[tuple[str, float]] = []
    used = 0
    for query in queries:
        positives = [d for d in dict.fromkeys(gold.get(query.id, ())) if d in documents.texts]
        if not positives:
            continue
        if budget.max_queries is not None and used >= budget.max_queries:
            break
        used += 1
        excluded = set(gold.get(query.id, ()))
        for doc_id in positives:
            pairs.extend([(documents.input(query.text, doc_id), 1.0)] * budget.positive_repeats)
        ranked = [h.id for h in retrieved.get(query.id, [])[:budget.retriever_depth]
                  if h.id not in excluded and h.id in documents.texts]
        for doc_id in rng.sample(ranked, min(budget.retriever_negatives, len(ranked))):
            pairs.append((documents.input(query.text, doc_id), 0.0))
        for doc_id in random_negatives(all_ids, excluded, budget.random_negatives, rng):
            pairs.append((documents.input(query.text, doc_id), 0.0))
    rng.shuffle(pairs)
    return pairs


def random_negatives(ids: Sequence[str], excluded: set[str], count: int, rng: random.Random) -> list[str]:
    """``count`` distinct ids not in ``excluded`` (fewer when the corpus is smaller)."""
    available = len(ids) - len(excluded & set(ids))
    count = min(count, available)
    chosen: dict[str, None] = {}
    while len(chosen) < count:
        doc_id = ids[rng.randrange(len(ids))]
        if doc_id not in excluded:
            chosen[doc_id] = None
    return list(chosen)


def train_classifier(pairs: Sequence[tuple[str, float]], config: TrainingConfig = TrainingConfig(),
                     backbone: str = DEFAULT_BACKBONE, device: str = "cpu",
                     show_progress: bool = True, seconds: list[float] | None = None,
                     sizes: list[int] | None = None) -> tuple[CrossEncoderClassifier, list[float]]:
    """Fine-tune a cross-encoder with binary cross-entropy; returns it and the loss of every step (and appends
    the wall seconds and the number of pairs of every step to ``seconds`` and ``sizes`` when given)."""
    import time

    import torch

    if not pairs:
        raise ConfigError("classifier training: no training pairs (do the gold documents appear in the corpus?)")
    torch.manual_seed(config.seed)
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    classifier = CrossEncoderClassifier(backbone, device=device, max_length=config.max_length,
                                        batch_size=config.batch_size)
    if config.lora_rank is not None:
        from sleuth.models.adapters import LoraSettings

        classifier.add_lora(LoraSettings(rank=config.lora_rank, alpha=2 * config.lora_rank,
                                         layers=config.lora_layers))
    model = classifier.model
    total = total_steps(len(pairs), config.batch_size, config.epochs, config.max_steps)
    optimisation = Optimisation(model, config.learning_rate, total, config.warmup_ratio, config.weight_decay,
                                max_grad_norm=1.0)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    rng = random.Random(config.seed)
    losses: list[float] = []
    texts = [text for text, _ in pairs]
    model.train()
    with progress("training classifier", total, "steps", show_progress) as bar:
        for indices in budgeted_batches(lambda: length_grouped_batches(texts, config.batch_size, rng), total,
                                        config.max_minutes):
            started = time.perf_counter()
            batch = [pairs[i] for i in indices]
            inputs = classifier.tokenize([text for text, _ in batch])
            labels = torch.tensor([label for _, label in batch], dtype=torch.float32, device=device)
            losses.append(optimisation.step(loss_fn(model(**inputs).logits.reshape(-1), labels)))
            if seconds is not None:
                seconds.append(time.perf_counter() - started)
            if sizes is not None:
                sizes.append(len(batch))
            bar.advance()
            bar.note(f"loss {sum(losses[-20:]) / len(losses[-20:]):.3f}")
    model.eval()
    return classifier, losses


def length_grouped_batches(texts: Sequence[str], batch_size: int, rng: random.Random,
                           group: int = 50) -> list[list[int]]:
    """Shuffled batches of similar-length texts (less padding): shuffle, sort each window of ``group`` batches
    by length, cut it into batches, shuffle the batch order."""
    order = list(range(len(texts)))
    rng.shuffle(order)
    window = batch_size * group
    batches: list[list[int]] = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: len(texts[i]))
        batches.extend(chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def save_classifier(classifier: CrossEncoderClassifier, path: str | Path, record: Mapping) -> Path:
    """Write the model directory (or adapter) atomically, with ``training.json`` (budgets, counts, losses,
    thresholds)."""
    with atomic_directory(path, MODEL_MARKERS) as tmp:
        classifier.save(tmp)
        write_training_record(tmp, record)
    return Path(path)


def write_training_record(path: str | Path, record: Mapping) -> None:
    """Replace the ``training.json`` of a saved classifier."""
    atomic_write_text(Path(path) / TRAINING_FILE, json.dumps(record, indent=2, default=str) + "\n")


def read_training_record(path: str | Path) -> dict:
    """The ``training.json`` of a saved classifier ({} when absent)."""
    file = Path(path) / TRAINING_FILE
    return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else {}


def budget_record(budget: ExampleBudget, config: TrainingConfig) -> dict:
    """JSON-ready description of a training run's settings."""
    return {"budget": asdict(budget), "config": asdict(config)}
