"""Chain-of-Skills hop-2 reranking budget on HotpotQA: which candidates to rerank (``hop2_budget`` rules).

    .venv/bin/python -m bench.cos_budget --questions DEV.json [--questions MORE.json] [--part tune] [--limit N]
        [--int8] [--budget 30 [--budget 60]] [--rule path [--rule per-hop1]] [--weights 1.5,1 [--weights A,B]]
        [--name NAME]

At the paper's hop limits (200/5/30/50/2) the chain reranks only ``--budget`` of its ~1,500 hop-2 candidates, and
those alone become its paths. Per question, over one hop-1 search, this bench builds every hop-2 candidate once,
then for each selection rule (``--rule``, default every one of ``HOP2_SELECTIONS``) and each pair of selection
weights (``--weights A,B``: the rules pick by hop1 + A * hop1_rerank + B * hop2; default the chain's own, 1.5,1):

* pool recall: how often the gold pair is among the candidates the rule picks (at several budgets; "all" = no
  budget), the ceiling of the chain's own paths;
* at each ``--budget``, the chain's paths (the paper's order) and the shipped fused list (RRF with two rounds of
  retrieval): EM, R@5, R@20.

The candidates the rules pick at the budgets are reranked together in one call (their union), so each rule's
paths are what the chain with that rule and budget gives, up to int8's per-batch activation scales (``--int8``). Two rounds of
retrieval are measured on the same hop-1 search. Nothing is tuned here: the rule that reads these figures is in
docs/cos (run it on ``--part tune``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from bench.common import Report, ResultTable, base_parser, bench_main, progress
from sleuth.paths import shared_data_dir

NAME = "cos_budget"
POOL_BUDGETS = (30, 60, 100, None)


def add_chain_options(parser: argparse.ArgumentParser) -> None:
    """The options :func:`paper_chain` reads: --questions, --part, --limit, --int8."""
    parser.add_argument("--questions", action="append", default=[],
                        help="HotpotQA-format dev questions (repeatable; default hotpot_dev_distractor_100.json)")
    parser.add_argument("--part", default="tune", help="all | tune | report (sleuth.corpus.question_split)")
    parser.add_argument("--limit", type=int, default=None, help="first N questions only")
    parser.add_argument("--int8", action="store_true", help="the chain on the int8 encoder (as `sleuth cos eval`)")


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    add_chain_options(parser)
    parser.add_argument("--budget", type=int, action="append", default=[],
                        help="hop-2 reranking budget of the measured chains (repeatable; default 30)")
    parser.add_argument("--rule", action="append", default=[],
                        help="hop-2 selection rule measured (repeatable; default all of hop2_budget.HOP2_SELECTIONS)")
    parser.add_argument("--weights", action="append", default=[], type=weights_pair,
                        help="selection weights A,B of hop1_rerank and hop2 (repeatable; default the chain's 1.5,1)")
    parser.add_argument("--name", default=NAME, help=f"result file name (default {NAME})")
    return parser


def weights_pair(text: str) -> tuple[float, float]:
    """"A,B" -> (A, B) (``hop2_budget.parse_selection_weights``)."""
    from sleuth.errors import ConfigError
    from sleuth.systems.chain_of_skills.hop2_budget import parse_selection_weights

    try:
        return parse_selection_weights(text, "--weights")
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def path_metrics(ranked: Sequence[frozenset], wanted: frozenset) -> dict[str, float]:
    """EM, R@5 and R@20 of one question's ranked paths (pairs of passage ids = titles)."""
    return {"em": float(bool(ranked) and ranked[0] == wanted), "recall@5": float(any(wanted <= p for p in ranked[:5])),
            "recall@20": float(any(wanted <= p for p in ranked[:20]))}


def paper_chain(args: argparse.Namespace):
    """The tuning or report part's questions (``--questions``, ``--part``, ``--limit``), their paragraphs, and the
    shipped model's hotpotqa chain over them at the paper's limits (int8 with ``--int8``), keeping 1,000 paths."""
    from sleuth.systems.chain_of_skills.chain import ChainLimits, CosChain
    from sleuth.systems.chain_of_skills.eval_corpus import eval_passages, eval_skill_indexes
    from sleuth.systems.chain_of_skills.evaluation import LIMIT_SETS, eval_questions
    from sleuth.systems.chain_of_skills.model import load_model, model_path
    from sleuth.systems.chain_of_skills.span_head import model_span_head
    from sleuth.systems.chain_of_skills.stages import EntityLink, ExpandedRetrieve, Rerank, SingleRetrieve

    questions = eval_questions(args.questions, args.part, args.limit)
    passages = eval_passages("questions", args.questions, {q.id for q in questions})
    path = model_path(None)
    model = load_model(path).for_inference()
    head = model_span_head(path, model.dim)
    retrieval_index, link_index = eval_skill_indexes(passages, model, path, True, True)
    if args.int8:
        from sleuth.systems.chain_of_skills.quantise import quantise

        model = quantise(model)
    limits = ChainLimits(**LIMIT_SETS["paper"], k=1000)
    chain = CosChain("hotpotqa", SingleRetrieve(model, retrieval_index), EntityLink(model, head, link_index),
                     rerank=Rerank(model), expanded=ExpandedRetrieve(model, retrieval_index), limits=limits)
    return questions, passages, chain


def analyse(args: argparse.Namespace) -> dict:
    from sleuth.corpus.model import Query
    from sleuth.progress import progress as bar
    from sleuth.systems.chain_of_skills.chain import fuse_paths
    from sleuth.systems.chain_of_skills.hop2_budget import HOP2_SELECTIONS, select_hop2, selection_scores

    questions, passages, chain = paper_chain(args)
    limits = chain.limits
    rules = args.rule or list(HOP2_SELECTIONS)
    weights = args.weights or [(chain.rerank_weight, 1.0)]
    named = {f"{rule}{'' if w == weights[0] else f'[{w[0]:g},{w[1]:g}]'}": (rule, w) for w in weights for rule in
             (HOP2_SELECTIONS if w == weights[0] else rules)}  # pool recall of every rule, the first weights
    pool = {name: {str(b): 0.0 for b in POOL_BUDGETS} for name in named}
    measured_at = [(name, budget) for name, (rule, _) in named.items() if rule in rules for budget in args.budget]
    lists = ("two-round", *(f"{name}@{budget} {kind}" for name, budget in measured_at for kind in ("chain", "fused")))
    scores = {name: {"em": 0.0, "recall@5": 0.0, "recall@20": 0.0} for name in lists}
    reranked = 0
    with bar("questions", total=len(questions), unit="questions") as task:
        for q in questions:
            query = Query(id=q.id, text=q.text)
            wanted = frozenset(q.metadata["supporting_titles"])
            retrieved, hop1 = chain.first_hop([q.text])[0]
            vectors: dict = {}
            candidates = chain.hop2_candidates(query, hop1, vectors)
            two_round = chain.retrieval_paths(query, retrieved[:limits.k_hop1], vectors)
            groups, terms = chain.hop1_ranks(candidates), chain.selection_terms(candidates)
            partial = {w: selection_scores(terms, w) for w in weights}
            gold_at = {i for i, (a, b) in enumerate(candidates) if frozenset((a.id, b.id)) == wanted}
            for name, (rule, w) in named.items():
                for budget in POOL_BUDGETS:
                    pool[name][str(budget)] += bool(gold_at & set(select_hop2(partial[w], groups, budget, rule)))
            chosen = {f"{name}@{budget}": select_hop2(partial[named[name][1]], groups, budget, named[name][0])
                      for name, budget in measured_at}
            union = sorted(set().union(*chosen.values()))
            reranked += len(union)
            values = dict(zip(union, chain.hop2_rerank_values(query, [candidates[i] for i in union])))
            measured = {"two-round": two_round}
            for key, picked in chosen.items():
                own = chain.scored_paths([candidates[i] for i in picked], [values[i] for i in picked])
                measured[f"{key} chain"] = own
                measured[f"{key} fused"] = fuse_paths(own, two_round)
            for name, hits in measured.items():
                for key, value in path_metrics([frozenset(h.id.split("||")) for h in hits], wanted).items():
                    scores[name][key] += value
            task.advance()
    n = len(questions)
    return {"questions": n, "passages": len(passages), "budgets": args.budget, "rules": rules, "weights": weights,
            "pool": {r: {b: v / n for b, v in by.items()} for r, by in pool.items()},
            "lists": {name: {k: v / n for k, v in s.items()} for name, s in scores.items()},
            "reranked per question": reranked / n}


def run(args: argparse.Namespace) -> Report:
    args.questions = args.questions or [str(shared_data_dir() / "hotpotqa" / "hotpot_dev_distractor_100.json")]
    args.budget = args.budget or [30]
    if args.quick:
        args.limit = args.limit or 5
    progress(f"{args.part} part, budgets {args.budget}{', int8' if args.int8 else ''}")
    result = analyse(args)
    where = (f"{' + '.join(q.split('/')[-1] for q in args.questions)}, part {args.part}, {result['questions']} "
             f"questions, {result['passages']} passages, paper limits{', int8' if args.int8 else ''}")
    pool = ResultTable(f"pool recall: the gold pair among the hop-2 candidates a rule picks ({where})",
                       ["rule", *(f"budget {b}" if b else "all" for b in POOL_BUDGETS)])
    for rule, by in result["pool"].items():
        pool.add(rule, *by.values())
    lists = ResultTable(f"paths per rule@budget: EM / R@5 / R@20 ({where})", ["list", "EM", "R@5", "R@20"])
    for name, s in result["lists"].items():
        lists.add(name, s["em"], s["recall@5"], s["recall@20"])
    notes = [f"hop-2 candidates reranked per question (the rules' union): {result['reranked per question']:.1f}"]
    return Report([pool, lists], result, notes)


if __name__ == "__main__":
    bench_main(build_parser().parse_known_args()[0].name, build_parser(), run)
