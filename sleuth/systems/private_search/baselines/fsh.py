"""FSH: query obfuscation with keyqueries (Froebe, Schmidt & Hagen, WI-IAT 2021), as adapted by the authors of
Faggioli & Ferro (ECIR 2024), over a local BM25 index.

The user's query retrieves its top ``target_k`` documents from a *local* corpus. Candidate queries are sets of 1 to
``max_terms`` words taken from windows of ``window`` consecutive content words of those documents, leaving out the
query's words, their stems and (with WordNet) their synonyms, hypernyms and hyponyms. A candidate is a keyquery when
it matches more than ``min_matches`` local documents; keyqueries are ranked by how well they retrieve the target
documents (nDCG of their BM25 ranking with the targets as the relevant set) and the best ``n`` are returned.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import numpy as np

from sleuth.errors import ConfigError, QueryError
from sleuth.index.bm25 import BM25Index
from sleuth.systems.private_search.baselines.aed import english_stopwords
from sleuth.systems.private_search.obfuscator import QueryObfuscator, Seed, check_count, tokenize

#: the authors' constants: top documents targeted, window width, words per keyquery, and the minimum match count
TARGET_K = 10
WINDOW = 16
MAX_TERMS = 2
MIN_MATCHES = 100
MIN_WORD_LENGTH = 3
CONTENT_WORD = re.compile(r"[^\W\d_]+")


def ndcg_of_targets(scores: np.ndarray, targets: np.ndarray) -> float:
    """nDCG (no cut-off, binary gains) of the ranking by ``scores`` for the ``targets`` rows; unmatched rows
    (score 0) are not retrieved."""
    gains = 0.0
    for target in targets:
        score = scores[target]
        if score > 0:
            gains += 1.0 / np.log2(int(np.count_nonzero(scores > score)) + 2)
    ideal = float(np.sum(1.0 / np.log2(np.arange(len(targets)) + 2)))
    return gains / ideal if ideal else 0.0


class FSH(QueryObfuscator):
    """Keyqueries from a local BM25 index (``index``); ``wordnet=True`` also filters synonyms, hypernyms and
    hyponyms of the query words (needs the optional WordNet baseline extra)."""

    name = "fsh"

    def __init__(self, index: BM25Index | None = None, target_k: int = TARGET_K, window: int = WINDOW,
                 max_terms: int = MAX_TERMS, min_matches: int = MIN_MATCHES, wordnet: bool = True,
                 wordnet_path: str | None = None):
        if index is None:
            raise ConfigError("fsh: needs a local corpus to search for keyqueries (give index= or --corpus)")
        self.index, self.target_k, self.window = index, target_k, window
        self.max_terms, self.min_matches = max_terms, min_matches
        self.stopwords = english_stopwords()
        self.wordnet = None
        if wordnet:
            from sleuth.systems.private_search.baselines.wordnet import load_wordnet

            self.wordnet = load_wordnet(wordnet_path)
        self._columns: dict[int, np.ndarray] = {}
        self._stems: dict[str, str | None] = {}

    # --- vocabulary helpers -------------------------------------------------------------------------------------
    def stem(self, word: str) -> str | None:
        """The index token of a word (the analyser's stem), or None for a stopword."""
        if word not in self._stems:
            tokens = self.index.analyzer.tokenize([word])[0]
            self._stems[word] = tokens[0] if tokens else None
        return self._stems[word]

    def forbidden(self, query_words: list[str]) -> set[str]:
        """Index tokens a keyquery must not contain: the query words and, with WordNet, their relatives."""
        words = set(query_words)
        if self.wordnet is not None:
            for word in query_words:
                lemma = self.wordnet.morphy(word)
                if lemma is None:
                    continue
                words.add(lemma)
                synsets = self.wordnet.synsets(lemma)
                words.update(name for s in synsets for name in s.lemma_names())
                if synsets:
                    chosen = next((s for s in synsets if s.name().split(".")[0] == lemma), synsets[0])
                    related = chosen.hypernyms() + chosen.hyponyms()
                    words.update(name for s in related for name in s.lemma_names())
        tokens = set()
        for word in words:
            for part in word.lower().replace("_", " ").split():
                token = self.stem(part)
                if token:
                    tokens.add(token)
        return tokens

    def column(self, token_id: int) -> np.ndarray:
        """BM25 scores of every local document for one index token (cached)."""
        if token_id not in self._columns:
            self._columns[token_id] = self.index.model.get_scores_from_ids([token_id])
        return self._columns[token_id]

    # --- keyqueries ---------------------------------------------------------------------------------------------
    def candidate_sets(self, targets: np.ndarray, forbidden: set[str]) -> dict[tuple[str, ...], tuple[int, ...]]:
        """Word sets from windows of the target documents -> their index token ids."""
        vocab = self.index.model.vocab_dict
        contents = self.index.docstore.contents()
        found: dict[tuple[str, ...], tuple[int, ...]] = {}
        for row in targets:
            kept = []
            for word in CONTENT_WORD.findall(contents[row].lower()):
                if len(word) < MIN_WORD_LENGTH or word in self.stopwords:
                    continue
                token = self.stem(word)
                if token and token not in forbidden and token in vocab:
                    kept.append((word, vocab[token]))
            for start in range(0, len(kept), self.window):
                window = kept[start:start + self.window]
                for size in range(1, self.max_terms + 1):
                    for combo in itertools.combinations(window, size):
                        words = tuple(sorted({w for w, _ in combo}))
                        ids = tuple(sorted({t for _, t in combo}))
                        if len(words) == size and len(ids) == size:
                            found.setdefault(words, ids)
        return found

    def keyqueries(self, query: str) -> list[tuple[str, float]]:
        """Every keyquery of ``query`` with its nDCG of the target documents, best first."""
        words = tokenize(query)
        if not words:
            raise QueryError("empty query")
        positions, scores = self.index.search([query], k=self.target_k)
        targets = np.asarray([p for p, s in zip(positions[0], scores[0]) if s > 0], dtype=np.int64)
        if targets.size == 0:
            return []
        scored = []
        for candidate, ids in self.candidate_sets(targets, self.forbidden(words)).items():
            total = self.column(ids[0]) if len(ids) == 1 else np.sum([self.column(i) for i in ids], axis=0)
            if int(np.count_nonzero(total)) > self.min_matches:
                scored.append((" ".join(candidate), ndcg_of_targets(total, targets)))
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored

    def obfuscate(self, queries: Sequence[str], n: int = 20, epsilon: float | None = None,
                  seed: Seed = None) -> list[list[str]]:
        n = check_count(n)
        out = []
        for query in queries:
            out.append([text for text, _ in self.keyqueries(query)[:n]])
            self._columns.clear()
        return out

    def describe(self) -> dict:
        return {"obfuscator": self.name, "local_documents": len(self.index), "target_k": self.target_k,
                "window": self.window, "max_terms": self.max_terms, "min_matches": self.min_matches,
                "wordnet": self.wordnet is not None}
