"""Evidence-path metrics for multi-hop retrieval (Ma et al., ACL 2023): path recall@k and passage exact match."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

PATH_RECALL_KS = (1, 5, 10, 20, 50, 100)


def path_recall_at_k(paths: Sequence[Collection[str]], gold: Collection[str], k: int) -> float:
    """1.0 when one of the top ``k`` paths holds every gold passage, else 0.0 (an empty gold set is an error)."""
    if not gold:
        raise ValueError("path recall needs a non-empty gold set")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    wanted = set(gold)
    return float(any(wanted <= set(path) for path in paths[:k]))


def passage_em(path: Collection[str] | None, gold: Collection[str]) -> float:
    """1.0 when the (top) predicted path is exactly the gold passage set, else 0.0."""
    if not gold:
        raise ValueError("passage EM needs a non-empty gold set")
    return float(path is not None and set(path) == set(gold))


def mean(values: Iterable[float]) -> float:
    """Average over queries (0.0 for none)."""
    values = list(values)
    return sum(values) / len(values) if values else 0.0
