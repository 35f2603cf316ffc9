"""Stage extras as JSON: hits in evidence paths become records, numpy values plain numbers, non-finite floats null.

Extras are what a stage passes on beside the score (component scores, a DHR passage's document score, a
Chain-of-Skills evidence path ``extras["path"]`` of hop hits, the obfuscated queries a private search sent). The
service returns them when a request asks for ``extras``; the private search's ``obfuscated_queries`` (the same
for every hit of a query) are lifted to the response instead of being repeated in each hit.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from sleuth.stages.run import Hit

MAX_DEPTH = 8
MAX_ITEMS = 1000
LIFTED = "obfuscated_queries"


def jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` made JSON-safe: Hits -> ``{id, doc_id, score, title, text, extras?}``, numpy scalars and arrays ->
    Python numbers and lists, NaN and infinities -> None, other objects -> their ``str``; lists are cut at
    ``MAX_ITEMS`` items and nesting at ``MAX_DEPTH`` levels."""
    if depth > MAX_DEPTH:
        return None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Hit):
        record = {"id": value.id, "doc_id": value.doc_id, "score": jsonable(value.score), "title": value.title,
                  "text": value.text}
        if value.extras:
            record["extras"] = jsonable(value.extras, depth + 1)
        return record
    if isinstance(value, dict):
        return {str(key): jsonable(item, depth + 1) for key, item in list(value.items())[:MAX_ITEMS]}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(item, depth + 1) for item in list(value)[:MAX_ITEMS]]
    if hasattr(value, "tolist"):  # numpy scalars and arrays
        return jsonable(value.tolist(), depth)
    return str(value)


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
