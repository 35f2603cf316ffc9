"""The Chain-of-Skills routing table: skill name -> (query expert id, context expert id).

Default (Ma et al., ACL 2023, Figure 3, fine-tuning configuration, 6 experts): single retrieval query 0 /
context 1; expanded query ("question [SEP] hop-1 passage") 4 / context 1 (context expert shared with single
retrieval); entity linking mention 2 / entity description 3; reranking 4 (merged with expanded queries); span
proposal 5. Cross-encoder skills (reranking, span proposal) read one input, so both sides name the same expert.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sleuth.errors import ConfigError

SIDES = ("query", "context")

DEFAULT_ROUTES: dict[str, tuple[int, int]] = {
    "retrieval": (0, 1),
    "expanded": (4, 1),
    "linking": (2, 3),
    "reranking": (4, 4),
    "span": (5, 5),
}


@dataclass(frozen=True)
class SkillRouting:
    """A hard routing table (no learned gate); ``expert(skill, side)`` is the expert id an input goes through."""

    routes: Mapping[str, tuple[int, int]] = field(default_factory=lambda: dict(DEFAULT_ROUTES))

    def __post_init__(self) -> None:
        if not self.routes:
            raise ConfigError("routing table: no skills")
        clean: dict[str, tuple[int, int]] = {}
        for skill, pair in self.routes.items():
            if not isinstance(skill, str) or not skill:
                raise ConfigError(f"routing table: skill names must be non-empty strings, got {skill!r}")
            if (not isinstance(pair, (tuple, list)) or len(pair) != 2
                    or not all(isinstance(e, int) and not isinstance(e, bool) and e >= 0 for e in pair)):
                raise ConfigError(f"routing table: skill '{skill}' needs two expert ids >= 0 (query, context), "
                                  f"got {pair!r}")
            clean[skill] = (pair[0], pair[1])
        object.__setattr__(self, "routes", clean)

    @property
    def skills(self) -> list[str]:
        return list(self.routes)

    @property
    def max_expert(self) -> int:
        """The largest expert id the table uses."""
        return max(max(pair) for pair in self.routes.values())

    def expert(self, skill: str, side: str = "query") -> int:
        """The expert id for ``skill`` on ``side`` ("query" or "context")."""
        if skill not in self.routes:
            raise ConfigError(f"unknown skill '{skill}': use one of {', '.join(self.routes)}")
        if side not in SIDES:
            raise ConfigError(f"unknown side '{side}': use 'query' or 'context'")
        return self.routes[skill][SIDES.index(side)]

    def check(self, num_experts: int) -> None:
        """Raise a one-line ConfigError when an expert id is not below ``num_experts``."""
        for skill, pair in self.routes.items():
            if max(pair) >= num_experts:
                raise ConfigError(f"routing table: skill '{skill}' uses expert {max(pair)} but the model has "
                                  f"only {num_experts} experts")

    def to_dict(self) -> dict[str, dict[str, int]]:
        """JSON form: ``{skill: {"query": id, "context": id}}``."""
        return {skill: {"query": q, "context": c} for skill, (q, c) in self.routes.items()}

    @classmethod
    def from_dict(cls, data: Any) -> SkillRouting:
        """Inverse of :meth:`to_dict`; bad shapes raise a one-line ConfigError."""
        if not isinstance(data, dict):
            raise ConfigError(f"routing table: expected an object of skills, got {type(data).__name__}")
        routes: dict[str, tuple[int, int]] = {}
        for skill, sides in data.items():
            if not isinstance(sides, dict) or set(sides) != set(SIDES):
                raise ConfigError(f"routing table: skill '{skill}' needs exactly the keys 'query' and 'context'")
            routes[skill] = (sides["query"], sides["context"])
        return cls(routes)
