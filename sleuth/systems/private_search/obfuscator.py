"""Query obfuscation: a query in, ``n`` obfuscated queries out.

:class:`QueryObfuscator` is the interface shared by the DP mechanisms and the non-DP baselines (AED, FSH).
:class:`DPObfuscator` tokenises the queries, maps words to vocabulary rows, obfuscates every word of every copy of
every query in one vectorised batch (one FAISS search), and joins the published words back into queries.

Out-of-vocabulary words (numbers, rare words, words outside a restricted vocabulary) follow ``oov``:

- ``drop`` (default, as the authors' code): the word is left out of every obfuscated query; a query with no
  vocabulary word at all is refused (QueryError naming its words) instead of giving empty obfuscations;
- ``random``: each copy gets a uniformly random vocabulary word instead (keeps the query length);
- ``error``: raise a QueryError naming the word;
- ``keep``: send the word unchanged. This leaks it to the search engine and must be asked for explicitly.

Only ``keep`` ever sends an out-of-vocabulary word. (An in-vocabulary word may come back as itself: that is the
mechanism's own randomness, whose likelihood epsilon controls.)

Randomness: by default a fresh generator seeded from the operating system's entropy on every call; pass ``seed``
(an int or a numpy Generator) for reproducible experiments.
"""

from __future__ import annotations

import re
import zlib
from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from sleuth.errors import ConfigError, QueryError
from sleuth.service.limits import MAX_OBFUSCATIONS
from sleuth.systems.private_search.mechanisms import Mechanism, check_epsilon

OOV_POLICIES = ("drop", "random", "error", "keep")
DEFAULT_OOV = "drop"
WORD = re.compile(r"[^\W_]+")

Seed = int | np.random.Generator | None


def tokenize(text: str) -> list[str]:
    """Lower-cased runs of letters and digits (punctuation splits words: "what's" -> what, s)."""
    return WORD.findall(text.lower())


def make_rng(seed: Seed = None) -> np.random.Generator:
    """A Generator: the one given, one seeded with the given int, or (None) a new one seeded from OS entropy."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0):
        raise ConfigError(f"seed must be an integer >= 0, got {seed!r}")
    return np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence(seed)))


def text_rng(seed: int, text: str) -> np.random.Generator:
    """The generator of one query under an integer ``seed`` (checked as :func:`make_rng` checks it), seeded by the
    seed and the query's text: its draws do not depend on the queries obfuscated with it in one call."""
    make_rng(seed)
    key = zlib.crc32(text.encode("utf-8", "surrogatepass"))
    return np.random.Generator(np.random.PCG64DXSM(np.random.SeedSequence([int(seed), key])))


def one_each(rngs: Sequence[np.random.Generator], queries: Sequence[str]) -> list[np.random.Generator]:
    """``rngs`` as a list, one generator a query (a ConfigError where the counts differ)."""
    if len(rngs) != len(queries):
        raise ConfigError(f"{len(rngs)} generators for {len(queries)} queries (give one a query)")
    return list(rngs)


def check_count(n: int, maximum: int | None = MAX_OBFUSCATIONS) -> int:
    """The number of obfuscated queries per query: a positive integer, at most ``maximum`` (by default the cap
    shared by ``sleuth privacy`` and ``POST /obfuscate``)."""
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ConfigError(f"the number of obfuscated queries must be a positive integer, got {n!r}")
    if maximum is not None and n > maximum:
        raise ConfigError(f"at most {maximum} obfuscated queries per query, got {n}")
    return int(n)


class QueryObfuscator(ABC):
    """Turns each query into ``n`` obfuscated queries that may be sent to an untrusted search engine."""

    name: str = "obfuscator"
    #: whether :meth:`obfuscate` takes a privacy budget
    uses_epsilon: bool = False

    @abstractmethod
    def obfuscate(self, queries: Sequence[str], n: int = 20, epsilon: float | None = None,
                  seed: Seed = None) -> list[list[str]]:
        """``n`` obfuscated queries for each query (a list per query, in input order)."""

    def obfuscate_one(self, query: str, n: int = 20, epsilon: float | None = None, seed: Seed = None) -> list[str]:
        """``n`` obfuscated queries of one query."""
        return self.obfuscate([query], n, epsilon, seed)[0]

    def obfuscate_each(self, queries: Sequence[str], n: int, epsilon: float | None,
                       rngs: Sequence[np.random.Generator]) -> list[list[str]]:
        """``n`` obfuscated queries for each query, drawn from its own generator (``rngs[i]`` for ``queries[i]``):
        each as :meth:`obfuscate` gives it alone with that generator (a mechanism may batch the work)."""
        return [self.obfuscate([query], n, epsilon, rng)[0] for query, rng in zip(queries, one_each(rngs, queries))]

    def describe(self) -> dict:
        return {"obfuscator": self.name}


class DPObfuscator(QueryObfuscator):
    """Word-by-word DP obfuscation with a :class:`Mechanism`; epsilon is required per call."""

    uses_epsilon = True

    def __init__(self, mechanism: Mechanism, oov: str = DEFAULT_OOV):
        if oov not in OOV_POLICIES:
            raise ConfigError(f"unknown out-of-vocabulary policy '{oov}' (known: {', '.join(OOV_POLICIES)})")
        self.mechanism, self.oov = mechanism, oov
        self.name = mechanism.name

    @property
    def embeddings(self):
        return self.mechanism.embeddings

    def word_rows(self, queries: Sequence[str]) -> list[list[int | str]]:
        """Per query, its words as vocabulary rows; out-of-vocabulary words stay strings (for the OOV policy)."""
        result = []
        for i, query in enumerate(queries):
            if not isinstance(query, str) or not query.strip():
                raise QueryError(f"query {i + 1} is empty")
            items: list[int | str] = []
            for word in tokenize(query):
                row = self.embeddings.row(word)
                if row is None and self.oov == "error":
                    raise QueryError(f"query {i + 1}: '{word}' is not in the vocabulary of {self.embeddings.source}")
                items.append(word if row is None else row)
            if not items:  # before: "??? !!!" gave empty obfuscations whatever the OOV policy
                raise QueryError(f"query {i + 1} has no words ({query.strip()[:80]!r}), so every obfuscation would "
                                 "be empty")
            if self.oov == "drop" and all(isinstance(item, str) for item in items):
                words = ", ".join(f"'{w}'" for w in dict.fromkeys(items))
                raise QueryError(f"query {i + 1}: no word of it ({words[:200]}) is in the vocabulary of "
                                 f"{self.embeddings.source}, so every obfuscation would be empty; oov 'random' "
                                 "replaces such words by random vocabulary words")
            result.append(items)
        return result

    def obfuscate(self, queries: Sequence[str], n: int = 20, epsilon: float | None = None,
                  seed: Seed = None) -> list[list[str]]:
        rng = make_rng(seed)
        return self._obfuscated(queries, n, epsilon, [rng] * len(queries), one_stream=True)

    def obfuscate_each(self, queries: Sequence[str], n: int, epsilon: float | None,
                       rngs: Sequence[np.random.Generator]) -> list[list[str]]:
        """As :meth:`QueryObfuscator.obfuscate_each`, in one nearest-word search for all the queries (4.5x the
        obfuscations per CPU second of one search a query with the GloVe table:
        bench/results/privacy_bench_generator_a_query.md)."""
        return self._obfuscated(queries, n, epsilon, one_each(rngs, queries), one_stream=False)

    def _obfuscated(self, queries: Sequence[str], n: int, epsilon: float | None, rngs: list[np.random.Generator],
                    one_stream: bool) -> list[list[str]]:
        """Every in-vocabulary word of every query, n times (copy-major within each query), in one batch: drawn
        from ``rngs[i]`` for query i, as one stream where they are one generator (``one_stream``)."""
        if epsilon is None:
            raise ConfigError(f"{self.name}: epsilon (the privacy budget) is required")
        epsilon, n = check_epsilon(epsilon), check_count(n)
        if not queries:
            return []
        parsed = self.word_rows(queries)
        in_vocabulary = [np.array([r for r in items if not isinstance(r, str)], dtype=np.int64) for items in parsed]
        copies = [np.tile(rows, n) for rows in in_vocabulary]
        published = (self.mechanism.obfuscate_rows(np.concatenate(copies), epsilon, rngs[0]) if one_stream
                     else np.concatenate(self.mechanism.obfuscate_segments(copies, epsilon, rngs)))
        words = self.embeddings.words
        out, position = [], 0
        for items, rows, query_rng in zip(parsed, in_vocabulary, rngs):
            chosen = published[position:position + n * len(rows)].reshape(n, len(rows))
            position += n * len(rows)
            out.append([self._assemble(items, chosen[copy], query_rng, words) for copy in range(n)])
        return out

    def _assemble(self, items: list[int | str], chosen: np.ndarray, rng: np.random.Generator,
                  words: list[str]) -> str:
        """One obfuscated query: published words in query order, OOV words per the policy."""
        parts, next_word = [], iter(chosen.tolist())
        for item in items:
            if not isinstance(item, str):
                parts.append(words[next(next_word)])
            elif self.oov == "keep":
                parts.append(item)
            elif self.oov == "random":
                parts.append(words[int(rng.integers(len(words)))])
        return " ".join(parts)

    def describe(self) -> dict:
        return {**self.mechanism.describe(), "oov": self.oov, "vocabulary": len(self.embeddings),
                "embeddings": self.embeddings.source}
