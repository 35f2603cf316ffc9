"""Partial results from shard actors, asked for explicitly: within :func:`partial_results` (this thread or task), a
search over shard actors merges the rankings of the shards that answered instead of failing on a shard that is
down, and the :class:`ShardReport` it yields says which shards answered and which are down (and why).

Outside it, a shard that stays down is a :class:`~sleuth.errors.ShardUnavailableError` (HTTP 503): a ranking is
never silently missing a shard. Only searches are partial; rescoring given rows (``score``, ``vectors``) and id
lookups still need every shard they touch. A search that no shard answers is an error in both modes.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ShardReport:
    """The shards a search asked, by description (``shard 2 of 3 (path)``): the ones that answered and the ones
    that are down with the reason; a shard down once in the block counts as down."""

    answered: list[str] = field(default_factory=list)
    down: dict[str, str] = field(default_factory=dict)

    def ok(self, shard: str) -> None:
        if shard not in self.answered and shard not in self.down:
            self.answered.append(shard)

    def failed(self, shard: str, reason: str) -> None:
        if shard in self.answered:
            self.answered.remove(shard)
        self.down[shard] = reason

    @property
    def complete(self) -> bool:
        """Whether every shard asked answered."""
        return not self.down

    def to_dict(self) -> dict[str, Any]:
        """``{"complete", "answered": [...], "down": [{"shard", "error"}]}`` (the service's ``shards`` field)."""
        return {"complete": self.complete, "answered": list(self.answered),
                "down": [{"shard": shard, "error": reason} for shard, reason in self.down.items()]}


_REPORT: contextvars.ContextVar[ShardReport | None] = contextvars.ContextVar("sleuth_shard_report", default=None)


@contextlib.contextmanager
def partial_results(enabled: bool = True) -> Iterator[ShardReport]:
    """Searches over shard actors in this block answer from the shards that are up (``enabled``; else, as outside
    the block, a shard down is an error); the yielded report lists the shards that answered and those down."""
    report = ShardReport()
    token = _REPORT.set(report if enabled else None)
    try:
        yield report
    finally:
        _REPORT.reset(token)


def current_report() -> ShardReport | None:
    """The report of the enclosing :func:`partial_results` block, or None (every shard must answer)."""
    return _REPORT.get()
