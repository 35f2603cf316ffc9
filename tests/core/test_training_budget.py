"""The step and wall-time budget every trainer shares (sleuth.train.budget)."""

from __future__ import annotations

import random
import time

from sleuth.train.budget import budgeted_batches, total_steps


def test_total_steps_counts_every_batch_of_every_epoch_up_to_max_steps():
    assert total_steps(10, 4, 3, None) == 9  # 3 batches (4, 4, 2) a epoch
    assert total_steps(10, 4, 3, 5) == 5
    assert total_steps(10, 4, 1, 50) == 3
    assert total_steps(10, 4, 3, 0) == 0


def test_batches_run_epoch_after_epoch_each_freshly_shuffled_until_the_steps_are_done():
    rng, epochs = random.Random(0), []

    def epoch() -> list[list[int]]:
        order = list(range(6))
        rng.shuffle(order)
        epochs.append(order)
        return [order[:3], order[3:]]

    taken = list(budgeted_batches(epoch, 5, None))
    assert len(taken) == 5 and len(epochs) == 3  # a third epoch for the fifth step, never a fourth
    assert taken == [e[s:s + 3] for e in epochs for s in (0, 3)][:5]
    assert list(budgeted_batches(epoch, 0, None)) == [] and len(epochs) == 3
    assert list(budgeted_batches(lambda: [], 5, None)) == []  # nothing to train on: no endless loop


def test_no_step_starts_after_the_wall_time_is_up():
    assert list(budgeted_batches(lambda: [[1], [2]], 100, 1.0, start=time.perf_counter() - 61)) == []
    started, seen = time.perf_counter(), []
    for batch in budgeted_batches(lambda: [[1], [2], [3]], 100, 0.1 / 60):  # 0.1 s
        seen.append(batch)
        time.sleep(0.04)
    assert 2 <= len(seen) <= 4 and time.perf_counter() - started < 1
