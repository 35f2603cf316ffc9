"""Stage extras as JSON: hits in evidence paths become records, numpy values plain numbers, non-finite floats null.

Extras are what a stage passes on beside the score (component scores, a DHR passage's document score, a
Chain-of-Skills evidence path ``extras["path"]`` of hop hits, the obfuscated queries a private search sent). The
service returns them when a request asks for ``extras``; the private search's ``obfuscated_queries`` (the same
for every hit of a query) are lifted to the response instead of being repeated in each hit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sleuth.stages.run import Hit, jsonable

LIFTED = "obfuscated_queries"


def hit_records(hits: Sequence[Hit], with_extras: bool) -> tuple[list[dict[str, Any]], list[str] | None]:
    """The hits' JSON records (ranked from 1) and, when ``with_extras``, the obfuscated queries a private search
    sent (None when no hit carries them); with extras, each record gets a JSON-safe ``extras`` (possibly empty)."""
    records = [hit.record(rank) for rank, hit in enumerate(hits, start=1)]
    if not with_extras:
        return records, None
    sent = None
    for record, hit in zip(records, hits):
        extras = dict(hit.extras)
        lifted = extras.pop(LIFTED, None)
        if sent is None and lifted is not None:
            sent = [str(text) for text in lifted]
        record["extras"] = jsonable(extras)
    return records, sent
