"""Metric-DP word mechanisms of Faggioli & Ferro (ECIR 2024): CMP and Mahalanobis, as the paper defines them.

Pure, vectorised noise functions first; then the small :class:`Mechanism` interface that turns vocabulary rows into
obfuscated rows: ``noisy = vectors[rows] + noise``, then the word nearest to each noisy point.

- CMP (Feyisetan et al., WSDM 2020): N ~ Normal(0, I_m), direction X = N / |N|, radius Y ~ Gamma(shape=m,
  scale=1/epsilon), noise Z = Y X.
- Mahalanobis (Xu et al., PrivateNLP 2020): Sigma = population covariance of the embedding matrix divided by the
  mean per-dimension variance; Sigma_loc = sqrtm(lambda Sigma + (1 - lambda) I); X = Sigma_loc N / |N| renormalised
  to unit length; Z = Y X with Y as in CMP.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from sleuth.errors import ConfigError
from sleuth.systems.private_search.embeddings import WordEmbeddings

#: lambda of the Mahalanobis mechanism: weight of the embedding covariance against the identity (authors' code: 1)
DEFAULT_LAMBDA = 1.0
#: the default mechanism of the private stage, `sleuth privacy` and ``POST /obfuscate``
DEFAULT_MECHANISM = "vickrey-mahalanobis"
#: the default privacy budget (stage, CLI and HTTP alike) for the 50-d GloVe table: the paper's recommended 12.5
#: (300-d) times about 0.5, the ratio at which our VkrMhl reaches the paper's similarity (docs/privacy/README.md);
#: a 12.5 here would leak about as much as the paper's 25
DEFAULT_EPSILON = 6.25


#: the smallest privacy budget accepted. At 0.001 the noise radius (mean dim / epsilon: 50,000 for 50-d GloVe) is
#: already ten thousand times a word vector's length, so each obfuscated word is a random word unrelated to the
#: query: a smaller budget adds no privacy, and far below it (about 1e-17) the radius overflows float arithmetic and
#: every word becomes one constant word.
MIN_EPSILON = 1e-3


def check_epsilon(epsilon: float, name: str = "epsilon") -> float:
    """The privacy budget as a float; it must be a finite number of at least :data:`MIN_EPSILON`. Errors call it
    ``name`` (the command line: ``--epsilon``)."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {epsilon!r}") from None
    if not np.isfinite(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number, got {epsilon!r}")
    if value < MIN_EPSILON:
        raise ConfigError(f"{name} must be at least {MIN_EPSILON:g}, got {epsilon!r}: below it the noise already "
                          "replaces every word by a random one (nothing of the query is left to search with), and far "
                          "below it every word becomes one constant word")
    return value


def unit_directions(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    """``n`` directions uniform on the unit sphere of R^dim: N / |N| with N ~ Normal(0, I)."""
    normal = rng.standard_normal((n, dim))
    return normal / np.linalg.norm(normal, axis=1, keepdims=True)


def gamma_radii(rng: np.random.Generator, n: int, dim: int, epsilon: float) -> np.ndarray:
    """``n`` noise radii Y ~ Gamma(shape=dim, scale=1/epsilon)."""
    return rng.gamma(shape=dim, scale=1.0 / check_epsilon(epsilon), size=n)


def cmp_noise(rng: np.random.Generator, n: int, dim: int, epsilon: float) -> np.ndarray:
    """``n`` CMP noise vectors Z = Y X (density proportional to exp(-epsilon |z|))."""
    return unit_directions(rng, n, dim) * gamma_radii(rng, n, dim, epsilon)[:, None]


def normalised_covariance(vectors: np.ndarray) -> np.ndarray:
    """Sigma: the population covariance (ddof=0) of the rows, divided by the mean per-dimension variance."""
    vectors = np.asarray(vectors, dtype=np.float64)
    covariance = np.atleast_2d(np.cov(vectors, rowvar=False, ddof=0))
    spread = float(np.mean(np.diag(covariance))) if len(vectors) else 0.0
    if not np.isfinite(spread) or spread <= 0:  # before: a division by zero, then eigh's LinAlgError traceback
        raise ConfigError(f"mahalanobis: the {len(vectors):,} word vectors of the vocabulary do not vary (one word, "
                          "or all alike), so they have no covariance to shape the noise: give a larger vocabulary")
    return covariance / spread


def sigma_loc(vectors: np.ndarray, lam: float = DEFAULT_LAMBDA) -> np.ndarray:
    """Sigma_loc of an embedding matrix: :func:`regularised_root` of its :func:`normalised_covariance`."""
    return regularised_root(normalised_covariance(vectors), lam)


def regularised_root(sigma: np.ndarray, lam: float = DEFAULT_LAMBDA) -> np.ndarray:
    """sqrtm(lambda Sigma + (1 - lambda) I), the symmetric square root (by eigendecomposition)."""
    if not 0.0 <= lam <= 1.0:
        raise ConfigError(f"mahalanobis: lambda must be in [0, 1], got {lam!r}")
    regularised = lam * sigma + (1.0 - lam) * np.eye(sigma.shape[0])
    values, vectors = np.linalg.eigh(regularised)
    return (vectors * np.sqrt(np.clip(values, 0.0, None))) @ vectors.T


def mahalanobis_noise(rng: np.random.Generator, n: int, loc: np.ndarray, epsilon: float) -> np.ndarray:
    """``n`` Mahalanobis noise vectors: direction Sigma_loc N/|N| renormalised to unit length, radius as in CMP."""
    dim = loc.shape[0]
    directions = unit_directions(rng, n, dim) @ loc.T
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return directions * gamma_radii(rng, n, dim, epsilon)[:, None]


class Mechanism(ABC):
    """A word-level metric-DP mechanism over one embedding table.

    :meth:`noise` draws noise vectors; :meth:`choose` maps noisy points to vocabulary rows (nearest word by
    default: of the :attr:`choices` nearest words, :meth:`pick` publishes one); :meth:`obfuscate_rows` does both for
    a batch of word rows, :meth:`obfuscate_segments` for several batches, each with its own generator, in one
    nearest-word search. Epsilon is given per call.
    """

    name: str = "mechanism"
    #: how many nearest words :meth:`pick` chooses from
    choices: int = 1

    def __init__(self, embeddings: WordEmbeddings):
        self.embeddings = embeddings

    @abstractmethod
    def noise(self, rng: np.random.Generator, n: int, epsilon: float) -> np.ndarray:
        """``n`` noise vectors of the table's dimension."""

    def perturb(self, rows: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
        """Noisy points: the vectors of ``rows`` plus fresh noise each (float32)."""
        rows = np.asarray(rows, dtype=np.int64)
        base = self.embeddings.matrix()[rows]
        return (base + self.noise(rng, len(rows), epsilon)).astype(np.float32)

    def pick(self, distances: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The vocabulary row published for each noisy point, from the (n, :attr:`choices`) distances and rows of
        its nearest words: the nearest."""
        return rows[:, 0]

    def choose(self, noisy: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The vocabulary row published for each noisy point (:meth:`pick` of its nearest words)."""
        return self.pick(*self.embeddings.nearest(noisy, k=self.choices), rng)

    def obfuscate_rows(self, rows: np.ndarray, epsilon: float, rng: np.random.Generator) -> np.ndarray:
        """One obfuscated row per input row (every input row gets independent noise)."""
        return self.obfuscate_segments([rows], epsilon, [rng])[0]

    def obfuscate_segments(self, segments: Sequence[np.ndarray], epsilon: float,
                           rngs: Sequence[np.random.Generator]) -> list[np.ndarray]:
        """:meth:`obfuscate_rows` of each segment of rows with its own generator, in one nearest-word search: a
        segment's draws are those it gets alone (its noise, then its picks), whatever segments share the call."""
        epsilon = check_epsilon(epsilon)
        noisy = [self.perturb(rows, epsilon, rng) for rows, rng in zip(segments, rngs)]
        if not any(len(points) for points in noisy):
            return [np.zeros(0, dtype=np.int64) for _ in segments]
        distances, rows = self.embeddings.nearest(np.concatenate(noisy), k=self.choices)
        published, start = [], 0
        for points, rng in zip(noisy, rngs):
            end = start + len(points)
            published.append(self.pick(distances[start:end], rows[start:end], rng) if end > start
                             else np.zeros(0, dtype=np.int64))
            start = end
        return published

    def describe(self) -> dict:
        """Name and parameters, for reports."""
        return {"mechanism": self.name}


class CMP(Mechanism):
    """Calibrated Multivariate Perturbation (Feyisetan et al. 2020): isotropic noise, Gamma(m, 1/epsilon) radius."""

    name = "cmp"

    def noise(self, rng: np.random.Generator, n: int, epsilon: float) -> np.ndarray:
        return cmp_noise(rng, n, self.embeddings.dim, epsilon)


class Mahalanobis(Mechanism):
    """Mahalanobis mechanism (Xu et al. 2020): noise direction stretched by Sigma_loc towards populated regions.

    ``lam`` is lambda of Sigma_loc = sqrtm(lambda Sigma + (1 - lambda) I); 1 (the default, as in the authors' code)
    uses the embedding covariance alone, 0 reduces to CMP.
    """

    name = "mahalanobis"

    def __init__(self, embeddings: WordEmbeddings, lam: float = DEFAULT_LAMBDA):
        if not 0.0 <= lam <= 1.0:
            raise ConfigError(f"mahalanobis: lambda must be in [0, 1], got {lam!r}")
        super().__init__(embeddings)
        self.lam = float(lam)
        key = ("sigma_loc", self.lam)
        if key not in embeddings.derived:
            embeddings.derived[key] = sigma_loc(embeddings.matrix(), self.lam)
        self.loc = embeddings.derived[key]

    def noise(self, rng: np.random.Generator, n: int, epsilon: float) -> np.ndarray:
        return mahalanobis_noise(rng, n, self.loc, epsilon)

    def describe(self) -> dict:
        return {"mechanism": self.name, "lambda": self.lam}
