"""Tables of the private-search evaluation: Table 1 (similarity per mechanism and epsilon, the paper's numbers
beside ours) and the effectiveness table (obfuscation, pooled recall, nDCG@10), as rich tables and Markdown."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from sleuth.systems.private_search.evaluation import SystemResult, matching_epsilon
from sleuth.systems.private_search.registry import PAPER_NAMES


def epsilon_label(epsilon: float | None) -> str:
    return "no DP" if epsilon is None else f"{epsilon:g}"


def table1_rows(ours: dict[str, dict[float | None, float]], paper: dict[str, dict[float | None, float]],
                epsilons: Sequence[float]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per system, cells 'ours (paper)' per epsilon and for the non-DP column."""
    header = ["system", *(f"eps {e:g}" for e in epsilons), "no DP"]
    rows = []
    for name, values in ours.items():
        reference = paper.get(name, {})
        cells = [PAPER_NAMES.get(name, name)]
        for key in (*epsilons, None):
            if key in values:
                theirs = f" ({reference[key]:.3f})" if key in reference else ""
                cells.append(f"{values[key]:.3f}{theirs}")
            else:
                cells.append("")
        rows.append(cells)
    return header, rows


def equivalence_rows(ours: dict[str, dict[float | None, float]], paper: dict[str, dict[float | None, float]],
                     epsilons: Sequence[float]) -> tuple[list[str], list[list[str]]]:
    """For each mechanism and paper epsilon: our epsilon giving the paper's similarity (and the ratio ours/paper)."""
    header = ["system", *(f"paper eps {e:g}" for e in epsilons)]
    rows = []
    for name, values in ours.items():
        if name not in paper or None in values:
            continue
        cells = [PAPER_NAMES.get(name, name)]
        for eps in epsilons:
            ours_eps = matching_epsilon(values, paper[name][eps]) if eps in paper[name] else None
            cells.append("" if ours_eps is None else f"{ours_eps:.1f} (x{ours_eps / eps:.2f})")
        rows.append(cells)
    return header, rows


def effectiveness_rows(results: Sequence[SystemResult]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the effectiveness table."""
    header = ["system", "epsilon", "obfuscation", "pooled recall@100", "nDCG@10 (local rerank)", "queries sent",
              "identical to original"]
    rows = [[PAPER_NAMES.get(r.system, r.system), epsilon_label(r.epsilon), f"{r.obfuscation:.3f}",
             f"{r.pooled_recall:.3f}", f"{r.ndcg10:.3f}", f"{r.sent_per_query:.1f}", f"{r.identical_fraction:.3f}"]
            for r in results]
    return header, rows


def rich_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], caption: str | None = None) -> Table:
    table = Table(title=title, caption=caption, title_justify="left")
    for i, column in enumerate(header):
        table.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def markdown_table(title: str, header: Sequence[str], rows: Sequence[Sequence[str]], note: str = "") -> str:
    lines = [f"### {title}", "", "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + (f"\n\n{note}\n" if note else "\n")
