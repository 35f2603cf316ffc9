"""Obfuscators by name: the four DP mechanisms of Faggioli & Ferro (ECIR 2024) and the non-DP baselines AED and FSH
(FSH with its local BM25 index), sharing one embedding table restricted to a vocabulary."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError
from sleuth.systems.private_search.embeddings import WordEmbeddings
from sleuth.systems.private_search.mechanisms import CMP, DEFAULT_LAMBDA, Mahalanobis, Mechanism
from sleuth.systems.private_search.obfuscator import DEFAULT_OOV, DPObfuscator, QueryObfuscator, tokenize
from sleuth.systems.private_search.vickrey import DEFAULT_T, Vickrey

MECHANISMS = ("cmp", "mahalanobis", "vickrey-cmp", "vickrey-mahalanobis")
BASELINES = ("aed", "fsh")
OBFUSCATORS = MECHANISMS + BASELINES
#: the names the paper's tables use
PAPER_NAMES = {"cmp": "CMP", "mahalanobis": "Mhl", "vickrey-cmp": "VkrCMP", "vickrey-mahalanobis": "VkrMhl",
               "aed": "AED", "fsh": "FSH"}
SAMPLE_PREFIX = "sample:"  # FSH's local corpus as a seeded fraction of the evaluation corpus


def make_mechanism(name: str, embeddings: WordEmbeddings, lam: float = DEFAULT_LAMBDA,
                   t: float = DEFAULT_T) -> Mechanism:
    """A DP mechanism of :data:`MECHANISMS` over ``embeddings`` (``lam``: Mahalanobis lambda, ``t``: Vickrey t)."""
    if name not in MECHANISMS:
        raise ConfigError(f"unknown mechanism '{name}' (known: {', '.join(MECHANISMS)})")
    base = name.removeprefix("vickrey-")
    mechanism: Mechanism = CMP(embeddings) if base == "cmp" else Mahalanobis(embeddings, lam)
    return Vickrey(mechanism, t) if name.startswith("vickrey-") else mechanism


def load_vocabulary_table(embeddings: str = "glove-6b-50d", vocabulary: Iterable[str] | None = None,
                          alphabetic: bool = True) -> WordEmbeddings:
    """The embedding table restricted as the paper does: alphabetic words, optionally within a collection's words."""
    from sleuth.systems.private_search.embedding_readers import load_embeddings

    return load_embeddings(embeddings).restrict(alphabetic=alphabetic, vocabulary=vocabulary)


def make_obfuscator(name: str, embeddings: WordEmbeddings | None = None, oov: str | None = None,
                    **params: Any) -> QueryObfuscator:
    """An obfuscator by name. DP mechanisms need ``embeddings`` (default: the packaged GloVe, alphabetic words);
    ``params`` go to the mechanism (lam, t) or to the baseline's constructor (e.g. FSH's ``corpus``). ``oov``:
    the out-of-vocabulary policy of a DP mechanism (default drop) or of AED (default keep)."""
    if name in MECHANISMS:
        table = embeddings if embeddings is not None else load_vocabulary_table()
        return DPObfuscator(make_mechanism(name, table, **params), oov=DEFAULT_OOV if oov is None else oov)
    if name == "aed":
        from sleuth.systems.private_search.baselines.aed import AED

        return AED(oov=oov, **params)
    if name == "fsh":
        from sleuth.systems.private_search.baselines.fsh import FSH

        return FSH(**params)
    raise ConfigError(f"unknown obfuscator '{name}' (known: {', '.join(OBFUSCATORS)})")


def corpus_words(path: Path, fmt: str | None = None, fields: Mapping[str, str] | None = None) -> set[str]:
    """The lower-cased words of a corpus (titles and texts; read as ``fmt`` with ``fields``, the JSONL keys), for
    restricting the vocabulary to a collection."""
    from sleuth.corpus.formats import read_documents

    words: set[str] = set()
    for doc in read_documents(path, fmt, fields):
        words.update(tokenize(f"{doc.title} {doc.full_text()}"))
    return words


def sample_fraction(spec: str, option: str = "--fsh-corpus") -> float | None:
    """The fraction F of FSH's ``sample:F`` (0 < F <= 1), or None when ``spec`` is a path; ConfigError otherwise
    (before: sample:-1 and sample:nan ended in 'the corpus has no passages', sample:2 took the whole corpus)."""
    if not spec.startswith(SAMPLE_PREFIX):
        return None
    try:
        fraction = float(spec[len(SAMPLE_PREFIX):])
    except ValueError:
        raise ConfigError(f"{option}: '{spec}' is not sample:FRACTION") from None
    if not 0 < fraction <= 1:
        raise ConfigError(f"{option} {spec}: the fraction of the corpus sampled must be above 0 and at most 1")
    return fraction


def local_bm25(spec: str, corpus: Path | None, fmt: str | None, seed: int, option: str = "--fsh-corpus",
               fields: Mapping[str, str] | None = None):
    """FSH's local index: a corpus path (read as ``fmt`` with ``fields`` where ``corpus`` is None, as
    ``privacy obfuscate --corpus`` gives it), or ``sample:F`` = a seeded fraction F of the evaluation corpus."""
    import numpy as np

    from sleuth.index.bm25 import BM25Index
    from sleuth.pipelines.workspace import CorpusSource, Workspace

    fraction = sample_fraction(spec, option)
    if fraction is not None:
        if corpus is None:
            raise ConfigError(f"{option} {spec} samples the evaluation corpus of privacy eval (--corpus), and "
                              "there is none")
        passages = list(CorpusSource(corpus, fmt).passages())
        keep = np.random.default_rng(seed).random(len(passages)) < fraction
        if not keep.any():
            raise ConfigError(f"{option} {spec}: the sample holds none of the {len(passages):,} passages of "
                              f"{corpus}; sample a larger fraction")
        return BM25Index.build([p for p, k in zip(passages, keep) if k], show_progress=False)
    path = Path(spec)
    if not path.exists():
        raise ConfigError(f"{option}: {path} not found")
    source = CorpusSource(path, fmt, dict(fields) if fields else None) if corpus is None else CorpusSource(path)
    source.check()
    return Workspace(source, show_progress=False).bm25()


#: the DP mechanisms each mechanism parameter shapes (Mahalanobis' lambda, Vickrey's t)
PARAMETER_USERS = {"lam": ("mahalanobis", "vickrey-mahalanobis"), "t": ("vickrey-cmp", "vickrey-mahalanobis")}


def mechanism_params(lam: float | None, t: float | None) -> dict[str, float]:
    """The mechanism parameters given (``lam``, ``t``; None: each mechanism's default), as
    :func:`make_obfuscator` and :func:`build_obfuscators` take them."""
    return {key: value for key, value in (("lam", lam), ("t", t)) if value is not None}


def build_obfuscators(names: list[str], embeddings: str, vocabulary: set[str] | None, oov: str | None,
                      fsh_index=None, **params: float) -> dict:
    """Obfuscators by name, sharing one restricted embedding table; ``oov`` (None: each one's default) goes to the
    DP mechanisms and AED; ``params`` (``lam``, ``t``) to the mechanisms they shape (:data:`PARAMETER_USERS`)."""
    table = load_vocabulary_table(embeddings, vocabulary) if any(n in MECHANISMS for n in names) else None
    built = {}
    for name in names:
        if name in MECHANISMS:
            own = {key: value for key, value in params.items() if name in PARAMETER_USERS[key]}
            built[name] = make_obfuscator(name, embeddings=table, oov=oov, **own)
        elif name == "fsh":
            built[name] = make_obfuscator(name, index=fsh_index)
        else:
            built[name] = make_obfuscator(name, oov=oov)
    return built
