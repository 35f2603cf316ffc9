"""The lexical analyser shared by BM25 indexing and querying (lowercase, regex split, stopwords, Snowball stem)."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

import bm25s

from sleuth.errors import ConfigError


def stopwords_problem(stopwords: Any) -> str | None:
    """What is wrong with a stopwords setting (a language bm25s does not know, a list of non-words), or None."""
    if stopwords is None or (isinstance(stopwords, list | tuple) and all(isinstance(w, str) for w in stopwords)):
        return None
    if isinstance(stopwords, str) and stopwords.casefold() == "none":  # as `sleuth index --stopwords none`
        return None
    if not isinstance(stopwords, str):
        return f"stopwords must be a language, a list of words or none, got {stopwords!r}"
    try:
        bm25s.tokenization._infer_stopwords(stopwords)  # bm25s' own table of languages
    except ValueError:
        return (f"unknown stopword language '{stopwords}' (known: en, de, nl, fr, es, pt, it, ru, sv, no, zh, tr, ko, "
                "da, their English names, or none)")
    return None


@dataclass(frozen=True)
class Analyzer:
    r"""Token settings recorded in the index manifest so queries are analysed exactly like documents.

    ``stopwords``: "en"/"english", None (or "none"), or a list of words. ``stemmer``: a PyStemmer language
    ("english") or None (or "none").
    ``pattern``: the token regex; the default (bm25s' and scikit-learn's) keeps words of two or more characters, so
    one-letter words are dropped: "vitamin d" searches for "vitamin" only. An index built with ``(?u)\b\w+\b``
    (``sleuth index --token-pattern``) keeps them; queries always use the pattern the index was built with.
    """

    stopwords: str | tuple[str, ...] | None = "en"
    stemmer: str | None = "english"
    lower: bool = True
    pattern: str = r"(?u)\b\w\w+\b"

    def __post_init__(self) -> None:
        if isinstance(self.stopwords, list):
            object.__setattr__(self, "stopwords", tuple(self.stopwords))
        for key in ("stopwords", "stemmer"):  # "none" (a YAML config's, --set's) as the CLI's --stopwords none
            if isinstance(getattr(self, key), str) and getattr(self, key).casefold() == "none":
                object.__setattr__(self, key, None)
        try:
            compiled = re.compile(self.pattern)
        except (re.error, TypeError) as exc:
            raise ConfigError(f"bm25: invalid token pattern {self.pattern!r} ({exc})") from None
        if any(not m.group() for m in compiled.finditer("A word, 42 x.")):  # '', 'a*', '\\b': empty tokens
            raise ConfigError(f"bm25: token pattern {self.pattern!r} matches the empty string; a token pattern "
                              "must match at least one character (e.g. '(?u)\\b\\w+\\b')")
        problem = stopwords_problem(self.stopwords)
        if problem is not None:
            raise ConfigError(f"bm25: {problem}")

    @cached_property
    def _stem(self) -> Callable[[list[str]], list[str]] | None:
        """Stem a list of words with this thread's own stemmer (PyStemmer objects are not thread-safe)."""
        if self.stemmer is None:
            return None
        import Stemmer

        try:
            Stemmer.Stemmer(self.stemmer)
        except KeyError:
            raise ConfigError(f"bm25: unknown stemmer language '{self.stemmer}' "
                              f"(known: {', '.join(Stemmer.algorithms())})") from None
        local, language = threading.local(), self.stemmer

        def stem_words(words: list[str]) -> list[str]:
            if not hasattr(local, "stemmer"):
                local.stemmer = Stemmer.Stemmer(language)
            return local.stemmer.stemWords(words)

        return stem_words

    def tokenize(self, texts: list[str], show_progress: bool = False) -> list[list[str]]:
        """Token strings of every text (queries are analysed this way)."""
        return self._run(texts, show_progress, return_ids=False)

    def tokenize_ids(self, texts: list[str], show_progress: bool = False) -> bm25s.tokenization.Tokenized:
        """Token ids and vocabulary of a corpus, ready for ``bm25s.BM25.index`` without a round trip via strings."""
        return self._run(texts, show_progress, return_ids=True)

    def _run(self, texts: list[str], show_progress: bool, return_ids: bool):
        stopwords = list(self.stopwords) if isinstance(self.stopwords, tuple) else self.stopwords
        return bm25s.tokenize(texts, lower=self.lower, token_pattern=self.pattern, stopwords=stopwords,
                              stemmer=self._stem, return_ids=return_ids, show_progress=show_progress)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if isinstance(data["stopwords"], tuple):
            data["stopwords"] = list(data["stopwords"])
        return data
