"""Chain-of-Skills at the paper's limits: which lists make the final path ranking under a hop-2 budget.

    .venv/bin/python -m bench.cos_path_lists --terms FILE [--terms FILE] --questions DEV.json [--questions MORE.json]
        --part tune [--limit N] [--int8] [--shard i/n] [--name NAME]      # rerank, two rounds, then the grid
    .venv/bin/python -m bench.cos_path_lists --scores FILE [--scores FILE] [--name NAME]   # the grid only

Reads the hop-2 candidates' terms that ``bench.cos_selection_grid`` wrote (same questions, part and ``--int8``).
Per question, it reranks with the hop-2 reranker the union of the best ``RERANKED`` candidates under each selection
weighting of ``SELECTIONS`` and builds two rounds of retrieval over the same hop-1 search, and writes them
(``bench/results/<name>-terms-scores[-i-of-n].jsonl``, not kept in git). Then, on those values, every configuration
of the final list (:func:`final_list`): selection weights x budget x lists x the chain's weight in the fusion, each
with its EM, R@5 and R@20, and the best by the mean of EM and R@20 (docs/cos, session 22, holds the rule that reads
it). The shipped configuration is ``SHIPPED``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from bench.common import RESULTS_DIR, Report, ResultTable, base_parser, bench_main, progress
from bench.cos_budget import add_chain_options, paper_chain, path_metrics
from bench.cos_selection_grid import write_sharded
from sleuth.paths import shared_data_dir
from sleuth.stages.fusion import reciprocal_rank_fusion
from sleuth.systems.chain_of_skills.chain_scores import (
    FUSION_CHAIN_WEIGHT,
    FUSION_RRF_K,
    HOP1_RERANK_WEIGHT,
    distinct_paths,
    path_score,
)
from sleuth.systems.chain_of_skills.hop2_budget import best_by_partial, selection_scores

NAME = "cos_path_lists"
SELECTIONS = ((1.5, 1.0), (0.5, 1.0))
BUDGETS = (30, 60)
RERANKED = max(BUDGETS)
#: the lists fused with the chain's reranked paths: two rounds of retrieval (shipped); the chain's paths followed by
#: the candidates the budget skipped, then two rounds; every candidate by its selection score as a third list; that
#: list instead of two rounds
LISTS = ("two-round", "tail+two-round", "all+two-round", "all")
CHAIN_WEIGHTS = (1.0, 2.0, 3.0)
SHIPPED = ((HOP1_RERANK_WEIGHT, 1.0), 30, "two-round", FUSION_CHAIN_WEIGHT)
Pair = frozenset


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    add_chain_options(parser)
    parser.add_argument("--terms", type=Path, action="append", default=[],
                        help="terms files of bench.cos_selection_grid (repeatable)")
    parser.add_argument("--shard", default=None, help="i/n: rerank every n-th question of the terms from the i-th")
    parser.add_argument("--scores", type=Path, action="append", default=[],
                        help="scores files to read (repeatable); default: build them from --terms here")
    parser.add_argument("--name", default=NAME, help=f"result file name (default {NAME})")
    return parser


def write_scores(args: argparse.Namespace, out: Path) -> None:
    """One line per question of the terms files: its terms rows, the hop-2 rerank value of the reranked rows (by
    row index) and two rounds of retrieval's paths (pairs of ids, best first)."""
    from sleuth.corpus.model import Query
    from sleuth.stages.run import Hit

    questions, passages, chain = paper_chain(args)
    by_id = {q.id: q for q in questions}
    hits = {p.id: Hit(p.id, 0.0, p.doc_id, p.title, p.text) for p in passages}

    def scores_of(record: dict) -> dict:
        question = by_id[record["id"]]  # a terms file of other questions or another part is refused here
        query, rows = Query(id=question.id, text=question.text), record["rows"]
        terms = [(row[2], row[3], row[4]) for row in rows]
        union = sorted({i for w in SELECTIONS for i in best_by_partial(selection_scores(terms, w), RERANKED)})
        values = chain.hop2_rerank_values(query, [(hits[rows[i][0]], hits[rows[i][1]]) for i in union])
        retrieved = chain.retrieve.retrieve([question.text], chain.limits.k_retrieval)[0]
        two_round = chain.retrieval_paths(query, retrieved[:chain.limits.k_hop1])[:200]
        return {**record, "r2": {str(i): round(v, 5) for i, v in zip(union, values)},
                "two_round": [h.id.split("||") for h in two_round]}

    records = [json.loads(line) for file in args.terms for line in file.read_text().splitlines()]
    write_sharded(records, args.shard, scores_of, out)


def distinct(scored: Sequence[tuple[str, str, float]]) -> list[Pair]:
    """(id1, id2, score) rows as distinct unordered pairs, best first (``chain_scores.distinct_paths``; ids are titles)."""
    return [Pair((a, b)) for a, _, b, _, _ in distinct_paths([(a, a, b, b, s) for a, b, s in scored])]


def fuse(rankings: Sequence[Sequence[Pair]], weights: Sequence[float], k: int = FUSION_RRF_K) -> list[Pair]:
    """Reciprocal rank fusion of pair rankings (``stages.fusion.reciprocal_rank_fusion``, as ``chain.fuse_paths``),
    best first; ties keep first-seen order (the first list's first)."""
    from sleuth.stages.run import Hit
    from sleuth.systems.chain_of_skills.chain import PATH_SEPARATOR

    def key(pair: Pair) -> str:
        return PATH_SEPARATOR.join(sorted(pair))

    pairs = {key(pair): pair for ranking in rankings for pair in ranking}
    fused = reciprocal_rank_fusion([[Hit(key(pair), 0.0) for pair in ranking] for ranking in rankings], weights, k)
    return [pairs[i] for i in sorted(fused, key=lambda i: -fused[i])]


def final_list(record: dict, weights: tuple[float, float], budget: int, lists: str, chain_weight: float) -> list[Pair]:
    """One question's final path ranking under a configuration (:data:`LISTS`): the chain reranks the ``budget``
    best candidates by ``hop2_budget.selection_scores`` under ``weights`` and scores them by ``path_score``."""
    rows, values = record["rows"], {int(i): v for i, v in record["r2"].items()}
    partial = selection_scores([(row[2], row[3], row[4]) for row in rows], weights)
    chosen = best_by_partial(partial, budget)
    chain = distinct([(rows[i][0], rows[i][1], path_score(rows[i][2], rows[i][3], rows[i][4], values[i]))
                      for i in chosen])
    every = distinct([(row[0], row[1], score) for row, score in zip(rows, partial)])
    two_round = [Pair(pair) for pair in record["two_round"]]
    if lists == "two-round":
        return fuse([chain, two_round], [chain_weight, 1.0])
    if lists == "tail+two-round":
        kept = set(chain)
        return fuse([chain + [p for p in every if p not in kept], two_round], [chain_weight, 1.0])
    if lists == "all+two-round":
        return fuse([chain, every, two_round], [chain_weight, 1.0, 1.0])
    if lists == "all":
        return fuse([chain, every], [chain_weight, 1.0])
    raise ValueError(f"unknown lists '{lists}' (use one of {', '.join(LISTS)})")


def configurations() -> list[tuple[tuple[float, float], int, str, float]]:
    """Every configuration of the grid, the shipped one first."""
    grid = [(w, b, lists, c) for w in SELECTIONS for b in BUDGETS for lists in LISTS for c in CHAIN_WEIGHTS]
    return [SHIPPED, *(config for config in grid if config != SHIPPED)]


def label(config: tuple[tuple[float, float], int, str, float]) -> str:
    (a, b), budget, lists, chain_weight = config
    return f"({a:g},{b:g}) b{budget} {lists} c{chain_weight:g}"


def grid(records: Sequence[dict]) -> dict[str, dict[str, float]]:
    """Every configuration's mean EM, R@5 and R@20 over ``records``, the shipped one first."""
    out = {}
    for config in configurations():
        totals = {"em": 0.0, "recall@5": 0.0, "recall@20": 0.0}
        for record in records:
            ranked = final_list(record, *config)
            for key, value in path_metrics(ranked, Pair(record["wanted"])).items():
                totals[key] += value
        out[label(config)] = {key: value / max(len(records), 1) for key, value in totals.items()}
    return out


def pick(table: dict[str, dict[str, float]]) -> str:
    """The configuration with the best mean of EM and R@20; ties: the first (the shipped one, then in grid order)."""
    return max(table, key=lambda name: (table[name]["em"] + table[name]["recall@20"]) / 2)


def run(args: argparse.Namespace) -> Report:
    args.questions = args.questions or [str(shared_data_dir() / "hotpotqa" / "hotpot_dev_distractor_100.json")]
    files = args.scores
    if not files:
        if not args.terms:
            raise SystemExit("bench.cos_path_lists: give --terms (from bench.cos_selection_grid) or --scores")
        shard = f"-{args.shard.replace('/', '-of-')}" if args.shard else ""
        files = [RESULTS_DIR / f"{Path(args.name).name}-terms-scores{shard}.jsonl"]
        progress(f"reranking the top {RERANKED} per selection and two rounds of retrieval -> {files[0]}")
        write_scores(args, files[0])
    records = [json.loads(line) for file in files for line in file.read_text().splitlines()]
    table = grid(records)
    chosen, shipped = pick(table), label(SHIPPED)
    mean = {name: (s["em"] + s["recall@20"]) / 2 for name, s in table.items()}
    out = ResultTable(f"final path list per configuration, {len(records)} questions: EM / R@5 / R@20 and their "
                      f"mean of EM + R@20; pick {chosen} ({mean[chosen] - mean[shipped]:+.4f} on the shipped one)",
                      ["configuration", "EM", "R@5", "R@20", "mean EM, R@20"])
    for name, s in table.items():
        out.add(name, s["em"], s["recall@5"], s["recall@20"], mean[name])
    result = {"questions": len(records), "scores": [f.name for f in files], "pick": chosen, "shipped": shipped,
              "pick - shipped": mean[chosen] - mean[shipped], "table": table}
    return Report([out], result, [f"pick {chosen}; shipped {shipped}"])


if __name__ == "__main__":
    bench_main(build_parser().parse_known_args()[0].name, build_parser(), run)
