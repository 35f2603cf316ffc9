"""What a search response holds and how large it may get: the hit ``fields`` asked for, passage title and text cut
to ``max_chars`` (such hits get ``"truncated": true``; strings in extras are cut alike), and a response size cap.
Every endpoint that answers passages, a system's included (QUEST's ``/quest/predict``), shapes them with
:class:`Shape` and writes its answer with :func:`encode` or :func:`json_response`, so one cut and one bound hold for
all."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sleuth.service.extras import hit_records
from sleuth.service.limits import Limits, RequestError, check_flag
from sleuth.stages.run import Hit

HIT_FIELDS = ("rank", "id", "doc_id", "score", "title", "text")
CUT = ("title", "text")


@dataclass(frozen=True)
class Shape:
    """How hits are written: ``fields`` (in :data:`HIT_FIELDS` order), ``max_chars`` and ``extras``."""

    max_chars: int
    fields: tuple[str, ...] = HIT_FIELDS
    extras: bool = False

    @classmethod
    def of(cls, limits: Limits, max_chars: Any = None, fields: Any = None, extras: Any = False) -> Shape:
        """The shape a request asks for, checked against ``limits`` (``fields``: a list or a comma-separated
        string of hit fields; default: all)."""
        chars = limits.text_chars if max_chars is None else limits.count(max_chars, "max_chars", limits.max_text_chars)
        return cls(chars, hit_fields(fields), check_flag(extras, "extras"))

    def hits(self, hits: Sequence[Hit]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """The hits' records in this shape, and the per-query extras lifted out of them (see ``hit_records``)."""
        records, per_query = hit_records(hits, self.extras)
        return [self.record(record) for record in records], per_query

    def record(self, record: dict[str, Any]) -> dict[str, Any]:
        shaped = {name: record[name] for name in self.fields}
        if "extras" in record:
            shaped["extras"] = record["extras"]
        return self.cut(shaped)

    def cut(self, record: dict[str, Any]) -> dict[str, Any]:
        """``record`` with its title and text (and strings in its ``extras``) cut to ``max_chars``, and
        ``"truncated": true`` when one was; every endpoint answering passages (a system's too) cuts them here."""
        shaped, cut = dict(record), False
        for name in CUT:
            value = shaped.get(name)
            if isinstance(value, str) and len(value) > self.max_chars:
                shaped[name], cut = value[:self.max_chars], True
        if "extras" in shaped:
            shaped["extras"], cut_extras = cut_strings(shaped["extras"], self.max_chars)
            cut = cut or cut_extras
        if cut:
            shaped["truncated"] = True
        return shaped


def hit_fields(fields: Any) -> tuple[str, ...]:
    """``fields`` checked: hit field names (a list, or one comma-separated string), in :data:`HIT_FIELDS` order."""
    if fields is None:
        return HIT_FIELDS
    if isinstance(fields, str):
        fields = [name.strip() for name in fields.split(",") if name.strip()]
    if not isinstance(fields, list) or not fields or not all(isinstance(name, str) for name in fields):
        raise RequestError(f"'fields' must be a non-empty list of hit fields ({', '.join(HIT_FIELDS)})")
    unknown = sorted(set(fields) - set(HIT_FIELDS))
    if unknown:
        raise RequestError(f"unknown hit field(s) {unknown} (known: {', '.join(HIT_FIELDS)})"[:300])
    return tuple(name for name in HIT_FIELDS if name in fields)


def cut_strings(value: Any, max_chars: int) -> tuple[Any, bool]:
    """``value`` (JSON-safe) with every string longer than ``max_chars`` cut, and whether one was."""
    if isinstance(value, str):
        return (value[:max_chars], True) if len(value) > max_chars else (value, False)
    if isinstance(value, list):
        parts = [cut_strings(item, max_chars) for item in value]
        return [item for item, _ in parts], any(cut for _, cut in parts)
    if isinstance(value, dict):
        cut_items = {key: cut_strings(item, max_chars) for key, item in value.items()}
        return {key: item for key, (item, _) in cut_items.items()}, any(cut for _, cut in cut_items.values())
    return value, False


def estimated_bytes(records: list[dict[str, Any]]) -> int:
    """A quick lower bound of the JSON size of hit records (their strings), to stop a batch early."""
    return sum(len(value) for record in records for value in record.values() if isinstance(value, str))


def encode(body: dict[str, Any], max_bytes: int) -> bytes:
    """``body`` as compact JSON bytes (as FastAPI writes it), or a 400 when larger than ``max_bytes``."""
    data = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
    if len(data) > max_bytes:
        raise too_large(len(data), max_bytes)
    return data


def json_response(body: dict[str, Any], max_bytes: int):
    """``body`` as a FastAPI JSON response, or a 400 when larger than ``max_bytes`` (see :func:`encode`)."""
    from fastapi.responses import Response

    return Response(content=encode(body, max_bytes), media_type="application/json")


def too_large(size: int, max_bytes: int) -> RequestError:
    return RequestError(f"the response would be larger than {max_bytes:,} bytes (at least {size:,}); ask for fewer queries, "
                        "a smaller k, fewer 'fields' or a smaller 'max_chars'")
