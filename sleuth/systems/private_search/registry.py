"""Obfuscators by name: the four DP mechanisms of Faggioli & Ferro (ECIR 2024) and the non-DP baselines AED and FSH."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sleuth.errors import ConfigError
from sleuth.systems.private_search.embeddings import WordEmbeddings
from sleuth.systems.private_search.mechanisms import CMP, DEFAULT_LAMBDA, Mahalanobis, Mechanism
from sleuth.systems.private_search.obfuscator import DEFAULT_OOV, DPObfuscator, QueryObfuscator
from sleuth.systems.private_search.vickrey import DEFAULT_T, Vickrey

MECHANISMS = ("cmp", "mahalanobis", "vickrey-cmp", "vickrey-mahalanobis")
BASELINES = ("aed", "fsh")
OBFUSCATORS = MECHANISMS + BASELINES
#: the names the paper's tables use
PAPER_NAMES = {"cmp": "CMP", "mahalanobis": "Mhl", "vickrey-cmp": "VkrCMP", "vickrey-mahalanobis": "VkrMhl",
               "aed": "AED", "fsh": "FSH"}


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


def make_obfuscator(name: str, embeddings: WordEmbeddings | None = None, oov: str = DEFAULT_OOV,
                    **params: Any) -> QueryObfuscator:
    """An obfuscator by name. DP mechanisms need ``embeddings`` (default: the packaged GloVe, alphabetic words);
    ``params`` go to the mechanism (lam, t) or to the baseline's constructor (e.g. FSH's ``corpus``)."""
    if name in MECHANISMS:
        table = embeddings if embeddings is not None else load_vocabulary_table()
        return DPObfuscator(make_mechanism(name, table, **params), oov=oov)
    if name == "aed":
        from sleuth.systems.private_search.baselines.aed import AED

        return AED(**params)
    if name == "fsh":
        from sleuth.systems.private_search.baselines.fsh import FSH

        return FSH(**params)
    raise ConfigError(f"unknown obfuscator '{name}' (known: {', '.join(OBFUSCATORS)})")
