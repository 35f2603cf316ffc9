"""The Vickrey mechanism (Xu et al., 2021): after CMP or Mahalanobis noise, publish the nearest or the second
nearest word, so that a word is less often replaced by itself.

With d1 <= d2 the Euclidean distances of the two vocabulary words nearest to the noisy point, the nearest is chosen
with probability p = (1 - t) d2 / (t d1 + (1 - t) d2), else the second; t = 0.75 in the paper.
"""

from __future__ import annotations

import numpy as np

from sleuth.errors import ConfigError
from sleuth.systems.private_search.mechanisms import Mechanism

#: t of the Vickrey choice (the paper's and the authors' code's value)
DEFAULT_T = 0.75


def nearest_probability(d1: np.ndarray, d2: np.ndarray, t: float = DEFAULT_T) -> np.ndarray:
    """p = (1 - t) d2 / (t d1 + (1 - t) d2), the probability of publishing the nearest word (1 when both are 0)."""
    d1, d2 = np.asarray(d1, dtype=np.float64), np.asarray(d2, dtype=np.float64)
    denominator = t * d1 + (1.0 - t) * d2
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(denominator > 0, (1.0 - t) * d2 / np.where(denominator > 0, denominator, 1.0), 1.0)
    return np.clip(p, 0.0, 1.0)


def vickrey_pick(distances: np.ndarray, rows: np.ndarray, t: float, rng: np.random.Generator) -> np.ndarray:
    """From (n, 2) distances and rows of the two nearest words, pick one row per point by the Vickrey rule."""
    take_nearest = rng.random(len(rows)) < nearest_probability(distances[:, 0], distances[:, 1], t)
    return np.where(take_nearest, rows[:, 0], rows[:, 1])


class Vickrey(Mechanism):
    """Vickrey over a base mechanism's noise (``cmp`` or ``mahalanobis``): Vkr_CMP and Vkr_Mhl in the paper."""

    def __init__(self, base: Mechanism, t: float = DEFAULT_T):
        if not 0.0 <= t <= 1.0:
            raise ConfigError(f"vickrey: t must be in [0, 1], got {t!r}")
        if len(base.embeddings) < 2:
            raise ConfigError("vickrey: the vocabulary needs at least two words")
        super().__init__(base.embeddings)
        self.base, self.t = base, float(t)
        self.name = f"vickrey-{base.name}"

    def noise(self, rng: np.random.Generator, n: int, epsilon: float) -> np.ndarray:
        return self.base.noise(rng, n, epsilon)

    choices = 2

    def pick(self, distances: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return vickrey_pick(distances, rows, self.t, rng)

    def describe(self) -> dict:
        return {**self.base.describe(), "mechanism": self.name, "t": self.t}
