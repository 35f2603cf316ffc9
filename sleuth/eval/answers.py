"""DPR-style answer accuracy: does a retrieved passage contain an answer, and is one in the top k?

String mode follows DPR's ``has_answer`` with its SimpleTokenizer: NFD-normalise, split into tokens
(runs of letters/digits/marks, or any other single non-space character), lowercase, and look for the answer's
tokens as a contiguous run of the passage's tokens ("1945" matches "in 1945," but "194" does not).
Regex mode searches each answer as a case-insensitive regular expression in the NFD-normalised text.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence

import regex

from sleuth.errors import ConfigError, InputError
from sleuth.eval.measures import mean
from sleuth.stages.paths import evidence_path
from sleuth.stages.run import Hit, Run

FLAGS = regex.IGNORECASE | regex.UNICODE | regex.MULTILINE  # as DPR compiles its tokenizer and answer patterns
TOKEN = regex.compile(r"[\p{L}\p{N}\p{M}]+|[^\p{Z}\p{C}]", flags=FLAGS)
MODES = ("string", "regex")
DEFAULT_KS = (1, 5, 20, 100)

Texts = Mapping[str, str] | Callable[[str], str] | None


def normalize(text: str) -> str:
    """Unicode NFD normalisation, as DPR applies to passages and answers."""
    return unicodedata.normalize("NFD", text)


def tokenize(text: str) -> list[str]:
    """DPR SimpleTokenizer words, NFD-normalised and lowercased."""
    return [token.lower() for token in TOKEN.findall(normalize(text))]


def contains(tokens: Sequence[str], part: Sequence[str]) -> bool:
    """Whether ``part`` (non-empty) occurs as a contiguous run of ``tokens``."""
    n = len(part)
    return n > 0 and any(tokens[i:i + n] == part for i in range(len(tokens) - n + 1))


def answer_matcher(answers: Iterable[str], mode: str = "string") -> Callable[[str], bool]:
    """A predicate ``text -> bool`` true when ``text`` holds one of ``answers`` (answers are prepared once)."""
    answers = [answers] if isinstance(answers, str) else list(answers)
    if check_mode(mode) == "string":
        token_answers = [tokens for tokens in map(tokenize, answers) if tokens]
        return lambda text: any(contains(tokenize(text), tokens) for tokens in token_answers)
    patterns = []
    for answer in answers:
        try:
            patterns.append(regex.compile(normalize(answer), flags=FLAGS))
        except regex.error as error:
            raise ConfigError(f"answer '{answer}' is not a valid regular expression: {error}") from None
    return lambda text: any(p.search(normalize(text)) for p in patterns)


def check_mode(mode: str) -> str:
    """``mode`` itself when it is a known answer match mode, else a ConfigError."""
    if mode not in MODES:
        raise ConfigError(f"unknown answer match mode '{mode}'; expected one of {', '.join(MODES)}")
    return mode


def has_answer(text: str, answers: Iterable[str], mode: str = "string") -> bool:
    """Whether ``text`` contains one of ``answers`` (``mode`` "string" or "regex", see the module docstring)."""
    return answer_matcher(answers, mode)(text)


def hit_text(hit: Hit, texts: Texts) -> str:
    """A hit's own text when present; an evidence path's (``extras["path"]``, Chain-of-Skills') its passages' texts
    one per line, so an answer in any of them counts; else ``texts[hit.id]`` (mapping) or ``texts(hit.id)``
    (callable)."""
    if hit.text is not None:
        return hit.text
    path = evidence_path(hit)
    if path is not None:
        return "\n".join(hit_text(part, texts) for part in path)  # before: "no text for passage 'a+b'"
    if texts is None:
        raise InputError(f"hit '{hit.id}' carries no text and no passage texts were given")
    if callable(texts):
        return texts(hit.id)
    try:
        return texts[hit.id]
    except KeyError:
        raise InputError(f"no text for passage '{hit.id}'") from None


def answer_hits(run: Run, texts: Texts, answers: Mapping[str, Iterable[str]], mode: str = "string",
                depth: int | None = None) -> dict[str, int | None]:
    """``{qid: 1-based rank of the first answer-bearing hit, or None}`` for every query of ``answers``.

    Only the first ``depth`` hits are read when given; a query the run lacks is a miss (None).
    """
    ranks: dict[str, int | None] = {}
    for qid, query_answers in answers.items():
        matches = answer_matcher(query_answers, mode)
        hits = run.get(qid, [])[:depth]
        ranks[qid] = next((rank for rank, hit in enumerate(hits, start=1) if matches(hit_text(hit, texts))), None)
    return ranks


def top_k_name(k: int) -> str:
    """The metric name of top-k accuracy: "Top-5"."""
    return f"Top-{k}"


def top_k_per_query(ranks: Mapping[str, int | None], ks: Iterable[int] = DEFAULT_KS) -> dict[str, dict[str, float]]:
    """``{"Top-k": {qid: 1.0 if an answer is within the first k hits else 0.0}}`` from :func:`answer_hits` ranks."""
    return {top_k_name(k): {qid: float(rank is not None and rank <= k) for qid, rank in ranks.items()}
            for k in check_ks(ks)}


def check_ks(ks: Iterable[int]) -> list[int]:
    """The cut-offs, sorted and unique; anything but a non-empty list of positive integers (one int alone, a bool:
    before, ``[True]`` was measured as "Top-True"; an empty list failed in ``max()``) raises a ConfigError."""
    given = list(ks) if isinstance(ks, Iterable) and not isinstance(ks, (str, bytes)) else None
    if not given or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in given):
        raise ConfigError(f"top-k cut-offs must be a list of positive integers, got {ks!r}"[:200])
    return sorted(set(given))


def top_k_accuracy(run: Run, texts: Texts, answers: Mapping[str, Iterable[str]], ks: Iterable[int] = DEFAULT_KS,
                   mode: str = "string") -> dict[str, float]:
    """``{"Top-1": ..., "Top-5": ...}``: the share of ``answers``' queries with an answer in the first k hits."""
    ks = check_ks(ks)
    ranks = answer_hits(run, texts, answers, mode, depth=max(ks, default=0))
    return {name: mean(by_query.values()) for name, by_query in top_k_per_query(ranks, ks).items()}
