"""Sharded index builds on Ray: passages -> Ray Data -> an actor pool of encoders -> the sharded writer.

Encoding: the driver plans the encoder's own length-sorted batches (the ones it would make in one process), Ray Data
carries one planned batch per row, ``map_batches`` runs them on a pool of encoder actors (one model load per actor,
fractional CPUs so the read tasks keep a CPU), and the vectors are gathered by row. Because every batch is the one
the single-process path encodes, the vectors -- and so the exact-search rankings -- are the same.
BM25: each shard is tokenised in a Ray task; vocabulary, global statistics and score matrices are then built as in
:class:`sleuth.index.sharded.ShardedBM25Index`.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Params
from sleuth.index.docstore import DocStore
from sleuth.index.sharded import ShardedBM25Index, ShardedDenseIndex
from sleuth.index.tokenize import Analyzer
from sleuth.models.encoder import length_sorted_batches
from sleuth.scale.session import require_ray


@dataclass
class RayOptions:
    """How the Ray build runs: encoder actors (count, CPUs each, planned batches per call), Ray Data blocks."""

    workers: int = 2
    actor_cpus: float = 0.5
    batches_per_call: int = 2
    blocks: int | None = None
    show_progress: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not (isinstance(self.workers, int) and self.workers >= 1):
            raise ConfigError(f"Ray build: workers must be at least 1, got {self.workers!r}")
        if not (isinstance(self.actor_cpus, (int, float)) and math.isfinite(self.actor_cpus) and self.actor_cpus > 0):
            raise ConfigError(f"Ray build: actor_cpus must be a positive number, got {self.actor_cpus!r}")


def planned_batches(texts: Sequence[str], backend: str, batch_size: int) -> list[list[int]]:
    """The batches an encoder makes when given all ``texts`` at once: sentence-transformers (``torch``) sorts by
    ``np.argsort`` of the negated lengths, sleuth's ONNX encoder by a stable length sort."""
    if backend == "torch":
        order = np.argsort([-len(t) for t in texts]).tolist()
        return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    return length_sorted_batches(list(texts), batch_size)


@functools.lru_cache(maxsize=8)
def encoder_facts(encoder: str, device: str, options: str) -> tuple[dict, int, int, str, str]:
    """Spec, dimension, batch size, backend and passage prefix of an encoder (loaded once in the driver, to plan
    the batches and record the spec; cached)."""
    from sleuth.models.registry import load_encoder

    probe = load_encoder(encoder, device=device, **json.loads(options))
    return probe.spec(), probe.dim, probe.batch_size, probe.backend, probe.passage_prefix


class EncoderActor:
    """A Ray Data actor: loads the encoder once, encodes each planned batch as one encoder call."""

    def __init__(self, encoder: str, device: str = "cpu", options: dict | None = None):
        from sleuth.models.registry import load_encoder

        self.encoder = load_encoder(encoder, device=device, **(options or {}))

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = [np.asarray(r, dtype=np.int64) for r in batch["rows"]]
        vectors = [self.encoder.encode_passages([str(t) for t in texts]) for texts in batch["texts"]]
        return {"row": np.concatenate(rows), "vector": np.concatenate(vectors).astype(np.float32)}


def encode_on_ray(texts: Sequence[str], encoder: str = "minilm", device: str = "cpu",
                  options: RayOptions = RayOptions(), encoder_options: dict | None = None) -> tuple[np.ndarray, dict]:
    """Vectors of ``texts`` (in input order) encoded by a pool of Ray actors, and the encoder's spec.

    Needs a connected Ray (see :func:`sleuth.scale.session.ray_session`)."""
    ray = require_ray()
    spec, dim, batch_size, backend, prefix = encoder_facts(encoder, device, json.dumps(encoder_options or {}))
    spec = dict(spec)
    if not texts:
        return np.zeros((0, dim), dtype=np.float32), spec
    plan = planned_batches([prefix + t for t in texts], backend, batch_size)
    items = [{"rows": np.asarray(b, dtype=np.int64), "texts": [texts[i] for i in b]} for b in plan]
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = options.show_progress
    blocks = options.blocks or min(len(items), max(4 * options.workers, 1))
    dataset = ray.data.from_items(items).repartition(blocks)  # several blocks, so every actor gets work
    encoded = dataset.map_batches(EncoderActor, fn_constructor_kwargs={"encoder": encoder, "device": device,
                                                                       "options": encoder_options or {}},
                                  batch_size=options.batches_per_call, batch_format="numpy",
                                  compute=ray.data.ActorPoolStrategy(size=options.workers),
                                  num_cpus=options.actor_cpus, **options.extra)
    vectors = np.zeros((len(texts), dim), dtype=np.float32)
    seen = np.zeros(len(texts), dtype=bool)
    for batch in encoded.iter_batches(batch_size=None, batch_format="numpy"):
        vectors[batch["row"]] = np.stack(batch["vector"]) if batch["vector"].dtype == object else batch["vector"]
        seen[batch["row"]] = True
    if not seen.all():
        raise RuntimeError(f"Ray encoding returned {int(seen.sum())} of {len(texts)} vectors")
    return vectors, spec


def tokenize_on_ray(analyzer: Analyzer, shard_texts: list[list[str]], cpus: float = 0.5) -> list[Any]:
    """Each shard's texts tokenised (ids and its own vocabulary) in a Ray task."""
    ray = require_ray()

    @ray.remote(num_cpus=cpus)
    def tokenize(settings: dict, texts: list[str]) -> Any:
        return Analyzer(**settings).tokenize_ids(texts)

    settings = analyzer.to_dict()
    return ray.get([tokenize.remote(settings, texts) for texts in shard_texts])


def build_bm25_on_ray(passages: Iterable[Passage], path: str | Path | None, shards: int,
                      params: BM25Params = BM25Params(), analyzer: Analyzer = Analyzer(),
                      corpus_info: dict | None = None, options: RayOptions = RayOptions()) -> ShardedBM25Index:
    """A sharded BM25 index whose shards were tokenised in Ray tasks."""
    return ShardedBM25Index.build(passages, path, shards, params, analyzer, corpus_info, options.show_progress,
                                  tokenize=lambda a, texts: tokenize_on_ray(a, texts, options.actor_cpus))


def build_dense_on_ray(passages: Iterable[Passage], path: str | Path | None, shards: int, encoder: str = "minilm",
                       factory: str = "Flat", corpus_info: dict | None = None, device: str = "cpu",
                       options: RayOptions = RayOptions()) -> ShardedDenseIndex:
    """A sharded dense index whose vectors were encoded by Ray actors."""
    passages = list(passages)
    texts = DocStore.from_passages(passages).contents()
    vectors, spec = encode_on_ray(texts, encoder, device, options)
    return ShardedDenseIndex.build(passages, path=path, factory=factory, shards=shards, corpus_info=corpus_info,
                                   show_progress=options.show_progress, vectors=vectors, encoder_spec=spec)
