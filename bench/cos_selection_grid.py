"""Chain-of-Skills hop-2 budget: the selection weights (a, b) that put the gold pair among the reranked candidates.

    .venv/bin/python -m bench.cos_selection_grid --questions DEV.json [--questions MORE.json] [--part tune]
        [--limit N] [--int8] [--budget 30 [--budget 60]] [--terms FILE [--terms FILE]] [--name NAME]

At the paper's limits the chain reranks only ``k_hop2_rerank`` of its ~1,500 hop-2 candidates, picked by
hop1 + a * hop1_rerank + b * hop2 (``hop2_budget.selection_scores``; the path score's own weights are a = 1.5, b = 1).
Per question, this bench builds every hop-2 candidate once (no hop-2 reranking) and writes their three terms with
the question's gold pair to a JSON-lines file (default ``bench/results/<name>-terms[-i-of-n].jsonl``, not kept in
git); given files (``--terms``, e.g. written by several processes over ``--shard i/n``), it reads them instead. Then, for every
pair of the grid and every ``--budget``, the share of questions whose gold pair is among the selected candidates
(pool recall, the ceiling of the chain's own paths), and the pick: the best pair, ties to the nearest of
(1.5, 1). Nothing else is measured; ``bench.cos_budget --weights`` measures a pick's paths.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from bench.common import RESULTS_DIR, Report, ResultTable, base_parser, bench_main, progress
from bench.cos_budget import add_chain_options, paper_chain
from sleuth.paths import shared_data_dir
from sleuth.systems.chain_of_skills.hop2_budget import best_by_partial, selection_scores

NAME = "cos_selection_grid"
HOP1_RERANK_WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
HOP2_WEIGHTS = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
PATH_WEIGHTS = (1.5, 1.0)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    add_chain_options(parser)
    parser.add_argument("--shard", default=None, help="i/n: write the terms of every n-th question from the i-th")
    parser.add_argument("--budget", type=int, action="append", default=[], help="budgets (repeatable; default 30)")
    parser.add_argument("--terms", type=Path, action="append", default=[],
                        help="terms files to read (repeatable); default: build them here")
    parser.add_argument("--name", default=NAME, help=f"result file name (default {NAME})")
    return parser


def write_sharded(items: Sequence, shard: str | None, line_of, out: Path) -> None:
    """``line_of(item)`` for every item of ``shard`` ("i/n": every n-th item from the i-th; None: all), with a
    progress bar, written to ``out`` as JSON lines in one atomic write."""
    from sleuth.io import atomic_write_text
    from sleuth.progress import progress as bar
    from sleuth.systems.chain_of_skills.evaluation import parse_shard

    if shard:
        index, count = parse_shard(shard)
        items = items[index::count]
    lines = []
    with bar("questions", total=len(items), unit="questions") as task:
        for item in items:
            lines.append(json.dumps(line_of(item)))
            task.advance()
    atomic_write_text(out, "\n".join(lines) + "\n")


def write_terms(args: argparse.Namespace, out: Path) -> None:
    """One line per question: id, gold titles, and each hop-2 candidate's [hop-1 id, hop-2 id, hop1, hop1_rerank,
    hop2, hop-1 rank]."""
    from sleuth.corpus.model import Query

    questions, _, chain = paper_chain(args)  # the corpus = every question of the part, whatever the shard

    def terms_of(q) -> dict:
        _, hop1 = chain.first_hop([q.text])[0]
        candidates = chain.hop2_candidates(Query(id=q.id, text=q.text), hop1, {})
        rows = [[a.id, b.id, *(round(t, 5) for t in terms), a.extras["hop1_rank"]]
                for (a, b), terms in zip(candidates, chain.selection_terms(candidates))]
        return {"id": q.id, "wanted": q.metadata["supporting_titles"], "rows": rows}

    write_sharded(questions, args.shard, terms_of, out)


def read_terms(files: Sequence[Path]) -> list[tuple[list[tuple[float, float, float]], set[int]]]:
    """Per question: its candidates' (hop1, hop1_rerank, hop2) terms and the indices of the gold pair's candidates."""
    out = []
    for file in files:
        for line in file.read_text().splitlines():
            question = json.loads(line)
            wanted = frozenset(question["wanted"])
            rows = question["rows"]
            out.append(([(row[2], row[3], row[4]) for row in rows],
                        {i for i, row in enumerate(rows) if frozenset(row[:2]) == wanted}))
    return out


def pool_recall(questions: Sequence[tuple[Sequence[tuple[float, float, float]], set[int]]],
                weights: tuple[float, float], budget: int) -> float:
    """Share of questions whose gold pair is among the ``budget`` candidates the chain's ``path`` rule would rerank
    under ``weights`` (``hop2_budget.selection_scores`` and ``best_by_partial``)."""
    hits = sum(bool(gold & set(best_by_partial(selection_scores(terms, weights), budget)))
               for terms, gold in questions)
    return hits / max(len(questions), 1)


def pick(table: dict[tuple[float, float], float]) -> tuple[float, float]:
    """The pair with the highest pool recall; ties: the nearest to the path score's own weights."""
    best = max(table.values())
    return min((w for w, v in table.items() if v == best),
               key=lambda w: (w[0] - PATH_WEIGHTS[0]) ** 2 + (w[1] - PATH_WEIGHTS[1]) ** 2)


def run(args: argparse.Namespace) -> Report:
    args.questions = args.questions or [str(shared_data_dir() / "hotpotqa" / "hotpot_dev_distractor_100.json")]
    args.budget = args.budget or [30]
    if args.quick:
        args.limit = args.limit or 5
    files = args.terms
    if not files:
        shard = f"-{args.shard.replace('/', '-of-')}" if args.shard else ""
        files = [RESULTS_DIR / f"{Path(args.name).name}-terms{shard}.jsonl"]
        progress(f"{args.part} part: building every hop-2 candidate{', int8' if args.int8 else ''} -> {files[0]}")
        write_terms(args, files[0])
    questions = read_terms(files)
    tables, result = [], {"questions": len(questions), "terms": [f.name for f in files],
                          "pool at no budget": sum(bool(gold) for _, gold in questions) / max(len(questions), 1), "budgets": {}}
    for budget in args.budget:
        grid = {(a, b): pool_recall(questions, (a, b), budget) for a in HOP1_RERANK_WEIGHTS for b in HOP2_WEIGHTS}
        chosen = pick(grid)
        table = ResultTable(f"pool recall at budget {budget}, {len(questions)} questions: rows a (hop1_rerank), "
                            f"columns b (hop2); pick {chosen}, the path score's (1.5, 1): {grid[PATH_WEIGHTS]:.3f}",
                            ["a \\ b", *map(str, HOP2_WEIGHTS)])
        for a in HOP1_RERANK_WEIGHTS:
            table.add(str(a), *(grid[(a, b)] for b in HOP2_WEIGHTS))
        tables.append(table)
        result["budgets"][str(budget)] = {"pick": list(chosen), "pick pool": grid[chosen],
                                          "path pool": grid[PATH_WEIGHTS],
                                          "grid": {f"{a},{b}": v for (a, b), v in grid.items()}}
    notes = [f"pool recall with no budget (every candidate): {result['pool at no budget']:.3f}"]
    return Report(tables, result, notes)


if __name__ == "__main__":
    bench_main(build_parser().parse_known_args()[0].name, build_parser(), run)
