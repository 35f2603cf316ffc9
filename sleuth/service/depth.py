"""How many hits a served pipeline can give a query (its depth) and the config keys that set it, read from its
stages' :attr:`~sleuth.stages.base.Stage.hits_bound`: a request asking for a larger ``k`` is refused with a 400
naming the pipeline, the depth and the keys (``sleuth serve --set bm25.k=5000``), as a ``k`` above ``--max-k`` is,
rather than answered with fewer hits unsaid; a request that gives no ``k`` gets 10, or the depth where smaller.

A retriever gives its ``k`` hits (BM25, dense, DHR, a Chain-of-Skills chain, QUEST's dual encoder), rescoring
candidates gives no more than it gets (a retriever given candidates, a QUEST classifier), a cutoff its ``k`` and a
fusion the sum of its branches' depths, each cut to its ``depth``. Where a stage's depth cannot be told (a run file,
an evidence path's passages, a private search's pool) the pipeline has none and every ``k`` up to ``--max-k`` is
searched."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sleuth.service.limits import RequestError
from sleuth.stages.base import Sequential, Stage


@dataclass(frozen=True)
class Depth:
    """At most ``hits`` hits a query, set by the config ``keys`` (``bm25.k``; several where they bind together)."""

    hits: int
    keys: tuple[str, ...]


def depth(stage: Stage) -> Depth | None:
    """The depth of ``stage`` searched with no candidates (a pipeline), or None where it cannot be told."""
    from sleuth.stages.fusion import Fuse  # here: the service imports no index library before it serves one

    if isinstance(stage, Sequential):
        found = depth(stage.stages[0]) if stage.stages else None
        for later in stage.stages[1:]:
            bound = getattr(later, "hits_bound", None)
            if bound == "cut":
                found = least(found, own(later))
            elif bound == "k":
                found = own(later)
            elif bound not in ("retrieve", "rescore"):
                found = None
        return found
    if getattr(stage, "hits_bound", None) in ("k", "retrieve"):  # a duck-typed stage (search alone) has none
        return own(stage)
    if isinstance(stage, Fuse):
        cut = Depth(stage.depth, ("fuse.depth",))
        parts = [least(depth(branch), cut) or cut for branch in stage.branches]
        return Depth(sum(part.hits for part in parts), unique(key for part in parts for key in part.keys))
    return None


def own(stage: Stage) -> Depth | None:
    """The stage's own limit and the key that sets it (``dhr.k``), None where it has none."""
    hits = stage.hits_limit()
    return None if hits is None else Depth(hits, (f"{stage.config_stage or stage.name}.k",))


def least(first: Depth | None, second: Depth | None) -> Depth | None:
    """The smaller of two depths (None: unbounded), with the keys of both where they are equal."""
    if first is None or second is None:
        return first or second
    if first.hits != second.hits:
        return first if first.hits < second.hits else second
    return Depth(first.hits, unique((*first.keys, *second.keys)))


def unique(keys: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(keys))


def check_depth(name: str, stage: Stage, k: int) -> int:
    """``k``, or a 400 when pipeline ``name`` (``stage``) cannot give that many hits a query, naming its depth and
    the keys that raise it."""
    found = depth(stage)
    if found is not None and k > found.hits:
        keys = ", ".join(found.keys)
        raise RequestError(f"'k' is {k}, more than pipeline '{name}' retrieves: {found.hits} hits a query (its "
                           f"{keys}); ask for at most {found.hits}, or serve it deeper: sleuth serve "
                           + " ".join(f"--set {key}={k}" for key in found.keys))
    return k
