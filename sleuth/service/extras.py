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


def hit_records(hits: Sequence[Hit], with_extras: bool) -> tuple[list[dict[str, Any]], list[str] | None]:
    """The hits' JSON records (ranked from 1) and, when ``with_extras``, the first ``per_query`` extra the hits
    carry (the obfuscated queries a private search sent; None when none does); with extras, each record gets a
    JSON-safe ``extras`` (possibly empty) without the per-query keys."""
    records = [hit.record(rank) for rank, hit in enumerate(hits, start=1)]
    if not with_extras:
        return records, None
    per_query, sent = keys_shown_as("per_query"), None
    for record, hit in zip(records, hits):
        extras = dict(hit.extras)
        for key in per_query:
            lifted = extras.pop(key, None)
            if sent is None and lifted is not None:
                sent = [str(text) for text in lifted]
        record["extras"] = jsonable(extras)
    return records, sent
