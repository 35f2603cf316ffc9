"""Printing ranked results and evidence for people (rich) and programs (JSON)."""

from __future__ import annotations

import json
from typing import Sequence

from rich.table import Table

from sleuth.stages.run import Hit


def snippet(text: str | None, width: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def hits_table(query: str, hits: Sequence[Hit]) -> Table:
    """A table of ranked hits: rank, id, score, title and the start of the text."""
    table = Table(title=f"[bold]{query}[/bold]", title_justify="left", show_lines=False)
    for column, style in (("#", "dim"), ("id", "cyan"), ("score", "magenta"), ("title / text", "")):
        table.add_column(column, style=style, overflow="fold")
    for rank, hit in enumerate(hits, start=1):
        body = f"[bold]{snippet(hit.title, 80)}[/bold]\n{snippet(hit.text)}" if hit.title else snippet(hit.text)
        table.add_row(str(rank), hit.id, f"{hit.score:.4f}", body)
    return table


def hits_json(query: str, hits: Sequence[Hit]) -> str:
    """The hits as one JSON document (stage extras included, non-JSON values as strings)."""
    return json.dumps({"query": query, "hits": [h.record(r, with_extras=True) for r, h in enumerate(hits, start=1)]},
                      default=str)
