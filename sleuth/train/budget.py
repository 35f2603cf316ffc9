"""The step and wall-time budget of a training run: how many steps it takes, and the batches it trains on until
that many steps are done or its time is up (what ``train_contrastive`` and QUEST's classifier share)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

Batch = TypeVar("Batch")


def total_steps(examples: int, batch_size: int, epochs: int, max_steps: int | None) -> int:
    """Every batch of every epoch, or ``max_steps`` when that is fewer (None: no cap)."""
    steps = math.ceil(examples / batch_size) * epochs
    return steps if max_steps is None else min(max_steps, steps)


def budgeted_batches(epoch: Callable[[], Iterable[Batch]], steps: int, max_minutes: float | None,
                     start: float | None = None) -> Iterator[Batch]:
    """Batches of one epoch after another (``epoch()`` makes a freshly shuffled one), each a training step: no more
    than ``steps``, and none once ``max_minutes`` of wall time have passed since ``start`` (a ``perf_counter``
    reading; default: now). The step in flight when the time runs out finishes; no new one starts."""
    deadline = None if max_minutes is None else (time.perf_counter() if start is None else start) + 60 * max_minutes
    taken = 0

    def done() -> bool:
        return taken >= steps or (deadline is not None and time.perf_counter() > deadline)

    while not done():
        empty = True
        for batch in epoch():
            if done():
                return
            empty = False
            taken += 1
            yield batch
        if empty:
            return
