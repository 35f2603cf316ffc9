"""Paired significance tests over per-query values (same queries, same order) and Holm-Bonferroni correction."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sleuth.errors import ConfigError, InputError


def differences(a: Sequence[float], b: Sequence[float]) -> np.ndarray:
    """``b - a`` as floats; vectors of different lengths or with NaN raise an InputError."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise InputError(f"paired tests need two vectors of the same length, got {x.shape} and {y.shape}")
    if np.isnan(x).any() or np.isnan(y).any():
        raise InputError("paired tests got a NaN value")
    return y - x


def degenerate_pvalue(diffs: np.ndarray) -> float | None:
    """The p-value when no test is possible: 1.0 for fewer than two pairs or no difference at all,
    0.0 for the same non-zero difference on every pair; None otherwise."""
    if len(diffs) < 2 or not diffs.any():
        return 1.0
    if np.ptp(diffs) <= 1e-12 * max(1.0, float(np.abs(diffs).max())):
        return 0.0
    return None


def paired_ttest(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided paired Student t-test p-value (scipy.stats.ttest_rel); identical vectors give 1.0, never NaN."""
    diffs = differences(a, b)
    fixed = degenerate_pvalue(diffs)
    if fixed is not None:
        return fixed
    from scipy import stats  # imported here: scipy.stats alone costs about a second of every CLI start

    return float(stats.ttest_rel(a, b).pvalue)


def paired_randomisation(a: Sequence[float], b: Sequence[float], samples: int = 10_000, seed: int = 0,
                         batch: int = 1_000) -> float:
    """Two-sided paired randomisation (sign-flip permutation) test of the mean difference.

    Each sample flips the sign of every pair's difference with probability 1/2; the p-value is
    ``(1 + #samples with |mean| >= |observed mean|) / (1 + samples)``. Reproducible for a given ``seed``.
    """
    if samples < 1:
        raise ConfigError(f"samples must be positive, got {samples}")
    diffs = differences(a, b)
    if len(diffs) < 1 or not diffs.any():
        return 1.0
    observed = abs(diffs.mean()) - 1e-12
    rng = np.random.default_rng(seed)
    extreme = 0
    for start in range(0, samples, batch):
        signs = rng.choice((-1.0, 1.0), size=(min(batch, samples - start), len(diffs)))
        extreme += int((np.abs(signs @ diffs) / len(diffs) >= observed).sum())
    return (extreme + 1) / (samples + 1)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the input order (step-down, monotone, capped at 1)."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [1.0] * len(pvalues)
    running = 0.0
    for position, index in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - position) * pvalues[index]))
        adjusted[index] = running
    return adjusted


TESTS = {"ttest": paired_ttest, "randomisation": paired_randomisation}
CORRECTIONS = {"holm": holm}
