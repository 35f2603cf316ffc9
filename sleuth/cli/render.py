"""Printing ranked results and evidence for people (rich) and programs (JSON). Ids, titles and texts are rich
``Text``, never read as markup (rich's ``escape`` doubles a trailing backslash that no tag follows)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from sleuth.pipelines.extras import keys_shown_as
from sleuth.stages.run import Hit


def snippet(text: str | None, width: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[: width - 1] + "…"


def evidence_path(hit: Hit) -> list[Hit] | None:
    """The hops of an evidence-path hit (its declared ``evidence_path`` extra, a list of Hits), or None for an
    ordinary hit."""
    for key in keys_shown_as("evidence_path"):
        path = hit.extras.get(key)
        if isinstance(path, (list, tuple)) and path and all(isinstance(hop, Hit) for hop in path):
            return list(path)
    return None


def hop_scores(hop: Hit) -> str:
    """A hop's declared ``hop_score`` extras as "merged 3.2100, retrieval 3.2100, rerank 1.0500", then its
    ``hop_label`` extras (e.g. mention 'Pete Doherty')."""
    parts = [f"{name} {hop.extras[name]:.4f}" for name in keys_shown_as("hop_score")
             if isinstance(hop.extras.get(name), (int, float))]
    parts += [f"{name} '{hop.extras[name]}'" for name in keys_shown_as("hop_label") if hop.extras.get(name)]
    return ", ".join(parts) or f"score {hop.score:.4f}"


def path_cell(path: Sequence[Hit]) -> Text:
    """An evidence path: "title1 -> title2" (bold), then one line per hop with its scores."""
    cell = Text(" -> ".join(snippet(hop.title or hop.id, 60) for hop in path), style="bold")
    for number, hop in enumerate(path, start=1):
        cell.append(f"\nhop {number}:", style="dim")
        cell.append(f" {snippet(hop.title or hop.id, 60)} ({hop_scores(hop)})")
    return cell


def hits_table(query: str, hits: Sequence[Hit]) -> Table:
    """A table of ranked hits: rank, id, score, title and the start of the text; an evidence-path hit shows its
    path "title1 -> title2" with each hop's scores instead."""
    paths = [evidence_path(hit) for hit in hits]
    table = Table(title=Text(query, style="bold"), title_justify="left", show_lines=False)
    heading = "evidence path / per-hop scores" if any(paths) else "title / text"
    for column, style in (("#", "dim"), ("id", "cyan"), ("score", "magenta"), (heading, "")):
        table.add_column(column, style=style, overflow="fold")
    for rank, (hit, path) in enumerate(zip(hits, paths), start=1):
        if path is not None:
            body = path_cell(path)
        elif hit.title:
            body = Text.assemble((snippet(hit.title, 80), "bold"), "\n", snippet(hit.text))
        else:
            body = Text(snippet(hit.text))
        table.add_row(str(rank), Text(hit.id), f"{hit.score:.4f}", body)
    return table


def hits_json(query: str, hits: Sequence[Hit]) -> str:
    """The hits as one JSON document (stage extras included and JSON-safe: evidence-path hops as hit records)."""
    records = [hit.record(rank, with_extras=True) for rank, hit in enumerate(hits, start=1)]
    return json.dumps({"query": query, "hits": records}, default=str)
