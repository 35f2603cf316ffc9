"""AED: query obfuscation by WordNet generalisation (Arampatzis, Efraimidis & Drosatos, ECIR 2011), as adapted
by Faggioli & Ferro (ECIR 2024).

Each noun or verb of the query becomes a WordNet synset; its obfuscation set is the synset and its hypernyms up to
``levels`` steps (``levels + 1`` when the candidates would be fewer than ``min_candidates``). Candidate queries are
the combinations of one member per set. Each candidate's similarity to the query is the mean, over the query's
synsets, of the best Wu-Palmer similarity to a candidate synset; the ``n`` candidates closest to the median
similarity are returned (the authors' selection). Other words (stopwords, words WordNet lacks) are kept, unless
``oov="error"``: then a query holding a word that is neither a stopword nor in WordNet is refused (QueryError naming
the word) rather than sent unchanged.

Deviation: no part-of-speech tagger is available offline, so a word counts as a noun when WordNet has noun senses
for it, else as a verb when it has verb senses.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from sleuth.errors import ConfigError, QueryError
from sleuth.systems.private_search.obfuscator import QueryObfuscator, Seed, check_count, make_rng, tokenize

#: hypernym steps of the obfuscation sets, and the candidate count below which one more step is taken
DEFAULT_LEVELS = 2
MIN_CANDIDATES = 300
#: at most this many candidate combinations are scored (sampled uniformly when there are more)
MAX_CANDIDATES = 5000
#: what AED does with a word WordNet lacks: keep it (the authors' AED, the default) or refuse the query
AED_OOV_POLICIES = ("keep", "error")


def english_stopwords() -> frozenset[str]:
    """The NLTK English stopword list (179 words, as shipped by bm25s)."""
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS)


class AED(QueryObfuscator):
    """WordNet hypernym generalisation; needs nltk and a local WordNet 3.0 (optional extra ``privacy``)."""

    name = "aed"

    def __init__(self, levels: int = DEFAULT_LEVELS, min_candidates: int = MIN_CANDIDATES,
                 max_candidates: int = MAX_CANDIDATES, wordnet_path: str | None = None, oov: str | None = None):
        from sleuth.systems.private_search.baselines.wordnet import load_wordnet

        self.oov = "keep" if oov is None else oov
        if self.oov not in AED_OOV_POLICIES:  # before: every policy was ignored and such words sent
            raise ConfigError(f"aed: out-of-vocabulary policy '{self.oov}' does not apply: aed sends the words "
                              f"WordNet lacks unchanged (keep, the default) or refuses them (error)")
        self.wordnet = load_wordnet(wordnet_path)
        self.levels, self.min_candidates, self.max_candidates = levels, min_candidates, max_candidates
        self.stopwords = english_stopwords()
        self._wup: dict[tuple, float] = {}

    def synset(self, word: str):
        """The word's synset (noun first, then verb), or None: the sense named after its lemma, else the first."""
        if word in self.stopwords:
            return None
        for pos in ("n", "v"):
            synsets = self.wordnet.synsets(word, pos)
            if synsets:
                lemma = self.wordnet.morphy(word, pos) or word
                return next((s for s in synsets if s.name().split(".")[0] == lemma), synsets[0])
        return None

    def generalisations(self, synset, levels: int) -> list:
        """The synset and its hypernyms up to ``levels`` steps up, without repeats."""
        found, frontier = [synset], [synset]
        for _ in range(levels):
            frontier = [h for s in frontier for h in s.hypernyms()]
            found.extend(frontier)
        return list(dict.fromkeys(found))

    def wup(self, a, b) -> float:
        key = (a.name(), b.name())
        if key not in self._wup:
            self._wup[key] = a.wup_similarity(b) or 0.0
        return self._wup[key]

    def similarity(self, original: list, candidate: tuple) -> float:
        """Mean over the query's synsets of the best Wu-Palmer similarity to the candidate's synsets."""
        synsets = [c for c in candidate if not isinstance(c, str)]
        parts = [max((self.wup(o, c) for c in synsets), default=0.0) for o in original if not isinstance(o, str)]
        return float(np.mean(parts)) if parts else 1.0

    def candidates(self, items: list) -> list[list]:
        """Obfuscation sets per word, widened by one level when they combine into too few candidates."""
        for levels in (self.levels, self.levels + 1):
            sets = [[i] if isinstance(i, str) else self.generalisations(i, levels) for i in items]
            if int(np.prod([len(s) for s in sets])) >= self.min_candidates:
                break
        return sets

    def obfuscate(self, queries: Sequence[str], n: int = 20, epsilon: float | None = None,
                  seed: Seed = None) -> list[list[str]]:
        n, rng = check_count(n), make_rng(seed)
        if self.oov == "error":
            for i, query in enumerate(queries, start=1):
                unknown = [w for w in tokenize(query) if w not in self.stopwords and not self.wordnet.synsets(w)]
                if unknown:
                    raise QueryError(f"query {i}: '{unknown[0]}' is not in WordNet, so aed would send it unchanged")
        return [self._obfuscate_one(query, n, rng) for query in queries]

    def _obfuscate_one(self, query: str, n: int, rng: np.random.Generator) -> list[str]:
        words = tokenize(query)
        if not words:
            raise QueryError("empty query")
        items = [self.synset(w) or w for w in words]
        sets = self.candidates(items)
        total = int(np.prod([len(s) for s in sets]))
        if total <= self.max_candidates:
            combos = list(itertools.product(*sets))
        else:
            combos = [tuple(s[int(rng.integers(len(s)))] for s in sets) for _ in range(self.max_candidates)]
        original = " ".join(words)
        scored = {}
        for combo in combos:
            text = " ".join(c if isinstance(c, str) else c.name().split(".")[0].replace("_", " ") for c in combo)
            if text != original and text not in scored:
                scored[text] = self.similarity(items, combo)
        if not scored:
            return []
        median = float(np.median(list(scored.values())))
        ranked = sorted(scored, key=lambda t: (abs(scored[t] - median), t))
        return ranked[:n]

    def describe(self) -> dict:
        return {"obfuscator": self.name, "levels": self.levels, "min_candidates": self.min_candidates,
                "oov": self.oov}
