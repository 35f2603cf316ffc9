"""Stage extras as JSON: hits in evidence paths become records, numpy values plain numbers, non-finite floats null.

Extras are what a stage passes on beside the score (declared in :mod:`sleuth.pipelines.extras`). The service
returns them when a request asks for ``extras``; a ``per_query`` key (the same for every hit of a query, e.g. the
queries a private search sent) is lifted to the response instead of being repeated in each hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sleuth.pipelines.extras import keys_shown_as
from sleuth.stages.run import Hit, jsonable


def hit_records(hits: Sequence[Hit], with_extras: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The hits' JSON records (ranked from 1) and, when ``with_extras``, the declared ``per_query`` extras the hits
    carry, by key (the first hit's value of each; empty when none does); with extras, each record gets a JSON-safe
    ``extras`` (possibly empty) without the per-query keys."""
    records = [hit.record(rank) for rank, hit in enumerate(hits, start=1)]
    lifted: dict[str, Any] = {}
    if not with_extras:
        return records, lifted
    per_query = keys_shown_as("per_query")
    for record, hit in zip(records, hits):
        extras = dict(hit.extras)
        for key in per_query:
            value = extras.pop(key, None)
            if value is not None:
                lifted.setdefault(key, jsonable(value))
        record["extras"] = jsonable(extras)
    return records, lifted
