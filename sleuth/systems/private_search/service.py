"""Private search's endpoint in the search service: ``POST /obfuscate`` gives obfuscated versions of a query
(``{"query", "mechanism"?, "n"?, "epsilon"?, "seed"?}`` -> ``{"query", "mechanism", "epsilon", "obfuscated"}``),
so that a client can see what a private search would send to an engine. ``mechanism`` and ``epsilon`` are named and
default as in `sleuth privacy obfuscate` (``mechanisms.DEFAULT_MECHANISM``, ``DEFAULT_EPSILON``, ``n`` 20 or the
service's ``--max-obfuscations`` where lower); ``obfuscator`` is
the earlier name of ``mechanism``."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

from sleuth.service.limits import RequestError, safe_name
from sleuth.systems.private_search.mechanisms import DEFAULT_EPSILON, DEFAULT_MECHANISM
from sleuth.systems.private_search.obfuscator import QueryObfuscator
from sleuth.systems.private_search.registry import MECHANISMS, make_obfuscator

#: ``n`` when a request gives none: the CLI's and the paper's 20 (before: 10, where the docs promised the CLI's)
DEFAULT_OBFUSCATIONS = 20
FIELDS = {"query", "mechanism", "obfuscator", "n", "epsilon", "seed"}


class ObfuscateEndpoint:
    """Adds ``POST /obfuscate`` to a service app; obfuscators (``names``, made by ``factory``) load on first use."""

    def __init__(self, factory: Callable[[str], QueryObfuscator] = make_obfuscator,
                 names: tuple[str, ...] = MECHANISMS):
        self.factory, self.names = factory, names
        self._made: dict[str, QueryObfuscator] = {}
        self._lock = threading.Lock()

    def obfuscator(self, name: Any) -> QueryObfuscator:
        """The obfuscator called ``name``, made on first use."""
        name = safe_name(name, "mechanism")
        if name not in self.names:
            raise RequestError(f"unknown mechanism '{name}' (served: {', '.join(self.names)})")
        with self._lock:
            if name not in self._made:
                self._made[name] = self.factory(name)
            return self._made[name]

    def obfuscate(self, service, query: Any, obfuscator: Any = None, n: Any = None, epsilon: Any = None,
                  seed: Any = None) -> dict[str, Any]:
        """``n`` obfuscated versions of ``query`` (default: 20 or the service's limit), within its time limit."""
        query = service.limits.query(query)
        limit = service.limits.max_obfuscations
        n = service.limits.count(min(DEFAULT_OBFUSCATIONS, limit) if n is None else n, "n", limit)
        if epsilon is not None and (isinstance(epsilon, bool) or not isinstance(epsilon, (int, float))
                                    or not finite(epsilon) or epsilon <= 0):
            raise RequestError(f"'epsilon' must be a positive number, got {epsilon!r}"[:200])
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63):
            raise RequestError(f"'seed' must be a non-negative integer, got {seed!r}"[:200])
        default = DEFAULT_MECHANISM if DEFAULT_MECHANISM in self.names else self.names[0]
        name = default if obfuscator is None else obfuscator  # not `or`: "" and false are refused, not defaulted
        model = self.obfuscator(name)
        epsilon = (DEFAULT_EPSILON if epsilon is None else epsilon) if model.uses_epsilon else None
        texts = service.timed(lambda: model.obfuscate_one(query, n=n, epsilon=epsilon, seed=seed))
        from sleuth.systems.private_search.exposure import Exposure

        return {"query": query, "mechanism": name, "epsilon": epsilon, "obfuscated": texts,
                "privacy": Exposure.of(query, texts).to_dict(summary=False)}

    def __call__(self, app, service) -> None:
        from fastapi import Body

        from sleuth.service.limits import check_fields

        @app.post("/obfuscate")
        def obfuscate(body: Any = Body(...)) -> dict[str, Any]:
            """Obfuscated versions of a query: ``{"query", "mechanism"?, "n"?, "epsilon"?, "seed"?}`` (defaults as
            in `sleuth privacy obfuscate`)."""
            body = check_fields(body, FIELDS)
            if "mechanism" in body and "obfuscator" in body:
                raise RequestError("give 'mechanism' ('obfuscator' is its earlier name), not both")
            return self.obfuscate(service, body.get("query"), body.get("mechanism", body.get("obfuscator")),
                                  body.get("n"), body.get("epsilon"), body.get("seed"))


def finite(number: int | float) -> bool:
    """Whether ``number`` is finite as a float (an integer of 400 digits is not: ``math.isfinite`` overflows)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def endpoints() -> list[ObfuscateEndpoint]:
    """What private search adds to the service (:attr:`sleuth.plugins.System.service`)."""
    return [ObfuscateEndpoint()]
