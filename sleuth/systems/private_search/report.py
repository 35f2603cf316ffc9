"""Reports of the private-search evaluation: Table 1 (similarity per mechanism and epsilon, the paper's numbers
beside ours) and the effectiveness table (obfuscation, pooled recall, nDCG@10), as rich tables and Markdown
(:class:`ReportOutput`), with their JSON parts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sleuth.models.encoder import Encoder
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


class ReportOutput:
    """Tables for people (rich, on ``console`` unless it is None) and for the report file (Markdown)."""

    def __init__(self, console: Console | None = None):
        self.console = console
        self.markdown: list[str] = []

    @property
    def quiet(self) -> bool:
        return self.console is None

    def table(self, title: str, header: list[str], rows: list[list[str]], note: str = "") -> None:
        self.markdown.append(markdown_table(title, header, rows, note))
        if self.console is not None:
            self.console.print(rich_table(title, header, rows, note or None))

    def bullets(self, heading: str, items: list[str]) -> None:
        self.markdown.append(f"{heading}\n\n" + "".join(f"- {item}\n" for item in items))
        if self.console is not None:
            self.console.print("\n".join([heading, *(f"  {item}" for item in items)]))


def epsilon_key(epsilon: float | None) -> str:
    """An epsilon as a JSON key: ``no_dp`` for the systems without one."""
    return "no_dp" if epsilon is None else f"{epsilon:g}"


def table1_report(output: ReportOutput, queries: list[str], obfuscators: dict, epsilons: list[float],
                  encoder: Encoder, n: int, seed: int, paper: str) -> dict:
    """Table 1 (ours beside the paper's), the paper's orderings, and the epsilon matching the paper's similarity."""
    from sleuth.systems.private_search.evaluation import orderings, similarity_table
    from sleuth.systems.private_search.paper_table import paper_table1

    ours = similarity_table(queries, obfuscators, epsilons, encoder, n=n, seed=seed, show_progress=not output.quiet)
    reference = paper_table1(paper) if paper != "none" else {}
    checks = orderings(ours, epsilons)
    output.table(f"Table 1: mean MiniLM similarity of {n} obfuscations ({len(queries)} queries)",
                 *table1_rows(ours, reference, epsilons), note=f"ours (paper {paper}, GloVe 300-d)" if reference else "")
    if checks:  # before: an empty heading where no ordering could be checked (one mechanism, one epsilon)
        output.bullets("Orderings of the paper:", [f"{'holds' if ok else 'FAILS'}: {c}" for c, ok in checks.items()])
    dims = {o.embeddings.dim for o in obfuscators.values() if o.uses_epsilon}
    if reference and dims:
        output.table(f"Our epsilon (GloVe {dims.pop()}-d) reaching the paper's similarity at its epsilon (GloVe "
                     "300-d), ratio ours/paper", *equivalence_rows(ours, reference, epsilons))
    return {"ours": {k: {epsilon_key(e): v for e, v in row.items()} for k, row in ours.items()}, "paper": paper,
            "orderings": checks}


def effectiveness_report(output: ReportOutput, results: list[SystemResult], corpus: Path, reranker: str,
                         out_dir: Path | None) -> dict:
    """The effectiveness table and, with ``out_dir``, the radar plot (PNG and SVG)."""
    collection = corpus.parent.name if corpus.is_file() else corpus.name
    output.table(f"Private search on {collection}: engine BM25, local rerank {reranker} "
                 f"({results[0].queries if results else 0} queries)", *effectiveness_rows(results))
    part: dict = {"effectiveness": [r.to_dict() for r in results]}
    if out_dir is not None:
        from sleuth.systems.private_search.radar import radar_plot

        plotted = {f"{PAPER_NAMES.get(r.system, r.system)} {epsilon_label(r.epsilon)}"
                   .replace(" no DP", ""): {"ndcg10": r.ndcg10, "obfuscation": r.obfuscation,
                                            "pooled_recall": r.pooled_recall} for r in results}
        paths = radar_plot(plotted, out_dir / f"radar_{collection}",
                           title=f"{collection}: engine BM25, local rerank {reranker}")
        part["plots"] = [str(p) for p in paths]
    return part
