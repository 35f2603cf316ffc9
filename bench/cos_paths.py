"""Chain-of-Skills path analysis on HotpotQA: the chains' path recall and EM, and why the chain's top path wins or
loses against two rounds of retrieval.

    .venv/bin/python -m bench.cos_paths --model minilm --model default --questions DEV.json [--questions MORE.json]
        [--part tune] [--limit 100] [--limits paper --int8 --k-hop2-rerank 30]

Per model: ``sleuth cos eval``'s rows (retrieval, retrieval-2hop, and hotpotqa in the paper's order, without the
fusion the shipped chain adds: its column "rrf k=10, chain x2" below); the hotpotqa chain's own candidate
paths re-sorted by other path scores (the paper's hop1 + 1.5 hop1_rerank + hop2 + hop2_rerank, retrieval scores
only, reranking scores only, ...), which separates the candidates the chain finds from the order it puts them in,
and a grid of the two reranking weights (hop 1, hop 2) over the same candidates, to choose them on the tuning part
(``--part tune``; with a hop-2 reranking budget the candidates themselves were picked with the shipped weights);
how often the kept hop-1 passages hold a gold passage (one / both); the mean and spread of each score component;
and span proposal against the questions' gold mentions (the supporting titles they name). "default" is the model
shipped with sleuth, "minilm" the untrained one. Nothing here is tuned: it reads the chains' runs.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

from bench.common import Report, ResultTable, base_parser, bench_main, progress
from sleuth.paths import shared_data_dir

NAME = "cos_paths"
Components = dict[str, float]
FORMULAS: dict[str, Callable[[Components], float]] = {
    "paper: h1 + 1.5 r1 + h2 + r2": lambda c: c["h1"] + 1.5 * c["r1"] + c["h2"] + c["r2"],
    "retrieval only: h1 + h2": lambda c: c["h1"] + c["h2"],
    "reranking only: r1 + r2": lambda c: c["r1"] + c["r2"],
    "hop-2 reranking only: r2": lambda c: c["r2"],
}
#: the reranking weights searched (hop-1 rerank weight w1, hop-2 rerank weight w2): score h1 + w1 r1 + h2 + w2 r2
GRID_W1 = (0.0, 0.5, 1.0, 1.5, 3.0, 5.0, 10.0, 20.0)
GRID_W2 = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 20.0)
#: rank fusions of the hotpotqa chain's paths with two rounds of retrieval's: name -> (RRF k, weight of the chain)
FUSIONS = {"rrf k=60": (60, 1.0), "rrf k=60, chain x2": (60, 2.0), "rrf k=10": (10, 1.0), "rrf k=10, chain x2": (10, 2.0)}


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", default=[], help="model: default | minilm | DIR (repeatable)")
    parser.add_argument("--questions", action="append", default=[],
                        help="HotpotQA-format dev questions (repeatable; default hotpot_dev_distractor_100.json)")
    parser.add_argument("--part", default="all", help="all | tune | report (sleuth.corpus.question_split)")
    parser.add_argument("--limits", default="reduced", help="reduced | paper")
    parser.add_argument("--limit", type=int, default=None, help="first N questions only")
    parser.add_argument("--int8", action="store_true", help="chains on the int8 encoder (as `sleuth cos eval --int8`)")
    parser.add_argument("--k-hop2-rerank", type=int, default=None, help="hop-2 reranking budget (default: all)")
    parser.add_argument("--name", default=NAME, help=f"result file name (default {NAME})")
    return parser


def components(hit) -> Components:
    first, second = hit.extras["path"]
    return {"h1": first.extras.get("merged", first.score), "r1": first.extras.get("rerank", 0.0),
            "h2": second.extras.get("merged", second.score), "r2": second.extras.get("rerank", 0.0)}


def analyse(model: str | None, args: argparse.Namespace) -> dict:
    from sleuth.systems.chain_of_skills.chain import ChainLimits, fuse_paths
    from sleuth.systems.chain_of_skills.evaluation import (
        LIMIT_SETS,
        eval_questions,
        evaluate_chains,
        question_spans,
        span_quality,
    )
    from sleuth.systems.chain_of_skills.model import load_model, model_path
    from sleuth.systems.chain_of_skills.span_head import model_span_head

    runs: dict = {}
    limits = ChainLimits(**LIMIT_SETS[args.limits], k=1000, k_hop2_rerank=args.k_hop2_rerank)  # every candidate path
    rows = [s.row() for s in evaluate_chains(model, args.questions, ["retrieval", "retrieval-2hop", "hotpotqa"],
                                             args.limit, limits, runs=runs, int8=args.int8, part=args.part,
                                             show_progress=True, ablate=["fusion"])]  # the chain's own paths
    questions = eval_questions(args.questions, args.part, args.limit)
    gold = {q.id: set(q.metadata["supporting_titles"]) for q in questions if q.id in runs["hotpotqa"]}
    chain = runs["hotpotqa"]

    def titles(hits) -> list[frozenset]:
        return [frozenset(h.id.split("||")) for h in hits]

    def measure(ranked: Callable[[str], list[frozenset]]) -> dict[str, float]:
        """EM, R@5 and R@20 of the paths ``ranked(question id)`` puts first."""
        em = r5 = r20 = 0
        for qid, wanted in gold.items():
            paths = ranked(qid)
            em += bool(paths) and paths[0] == wanted
            r5 += any(wanted <= p for p in paths[:5])
            r20 += any(wanted <= p for p in paths[:20])
        return {"em": em / len(gold), "recall@5": r5 / len(gold), "recall@20": r20 / len(gold)}

    def resort(score: Callable[[Components], float]) -> dict[str, float]:
        return measure(lambda qid: titles(sorted(chain.get(qid, []), key=lambda h: -score(components(h)))))

    resorted = {name: resort(score) for name, score in FORMULAS.items()}

    two_round = runs["retrieval-2hop"]
    fusions = {name: measure(lambda qid, k=k, w=w: titles(fuse_paths(chain.get(qid, []), two_round.get(qid, []), k, w)))
               for name, (k, w) in FUSIONS.items()}
    grid = {f"{w1:g}/{w2:g}": resort(lambda c, w1=w1, w2=w2: c["h1"] + w1 * c["r1"] + c["h2"] + w2 * c["r2"])
            for w1 in GRID_W1 for w2 in GRID_W2}
    values: dict[str, list[float]] = {"h1": [], "r1": [], "h2": [], "r2": []}
    for hits in chain.values():
        for hit in hits:
            for key, value in components(hit).items():
                values[key].append(value)
    spread = {k: {"mean": statistics.mean(v), "stdev": statistics.pstdev(v)} for k, v in values.items() if v}
    hop1 = {}
    for name in ("retrieval-2hop", "hotpotqa"):
        firsts = {qid: {h.extras["path"][0].id for h in runs[name].get(qid, [])} for qid in gold}
        hop1[name] = {"one gold": sum(bool(firsts[q] & g) for q, g in gold.items()) / len(gold),
                      "both gold": sum(g <= firsts[q] for q, g in gold.items()) / len(gold),
                      "paths per question": statistics.mean(len(runs[name].get(q, [])) for q in gold)}
    # where the hotpotqa chain loses a question: no gold kept at hop 1, a gold kept but the other one never reached
    # from it at hop 2, or found; and which skill brought the hop-2 passage of the found gold paths
    failures = {"no gold at hop 1": 0, "gold at hop 1, the other not reached at hop 2": 0, "gold path found": 0}
    brought = {"expanded only": 0, "link only": 0, "both": 0}
    for qid, wanted in gold.items():
        hits = chain.get(qid, [])
        firsts = {h.extras["path"][0].id for h in hits}
        found = [h for h in hits if set(h.id.split("||")) == wanted]
        if found:
            failures["gold path found"] += 1
            second = found[0].extras["path"][1].extras
            brought["both" if "expanded" in second and "link" in second else
                    "link only" if "link" in second else "expanded only"] += 1
        elif firsts & wanted:
            failures["gold at hop 1, the other not reached at hop 2"] += 1
        else:
            failures["no gold at hop 1"] += 1
    path = model_path(model)
    encoder = load_model(path)
    head = model_span_head(path, encoder.dim)
    spans = span_quality(encoder, head, question_spans(questions)).row()
    return {"rows": rows, "resorted": resorted, "fusions": fusions, "grid": grid, "components": spread, "hop1": hop1, "spans": spans,
            "failures": {k: v / len(gold) for k, v in failures.items()}, "hop2_source": brought}


def run(args: argparse.Namespace) -> Report:
    models = args.model or ["minilm", "default"]
    args.questions = args.questions or [str(shared_data_dir() / "hotpotqa" / "hotpot_dev_distractor_100.json")]
    if args.quick:
        args.limit = args.limit or 5
    results = {}
    where = f"{' + '.join(q.split('/')[-1] for q in args.questions)}, part {args.part}"
    limits = f"{args.limits} hop limits{', int8' if args.int8 else ''}" + (
        f", hop-2 rerank budget {args.k_hop2_rerank}" if args.k_hop2_rerank else "")
    chains = ResultTable(f"chains on {where} ({limits}): path recall@1/5/10/20, passage EM",
                         ["model", "chain", "R@1", "R@5", "R@10", "R@20", "EM"])
    paths = ResultTable("the hotpotqa chain's own paths re-sorted by other path scores: EM / R@20",
                        ["model", *FORMULAS])
    fusions = ResultTable("the hotpotqa chain's paths fused with two rounds of retrieval's (reciprocal rank): "
                          "EM / R@5 / R@20", ["model", *FUSIONS])
    grid = ResultTable("reranking weights over the chain's candidate paths (h1 + w1 r1 + h2 + w2 r2; shipped 1.5/1): "
                       "EM, R@5, R@20, best EM + R@20 first", ["model", "w1/w2", "EM", "R@5", "R@20"])
    hop1 = ResultTable("hop 1: kept passages holding a gold passage (one / both), paths per question",
                       ["model", "chain", "one gold", "both gold", "paths"])
    spans = ResultTable("span proposal on the questions' gold mentions (supporting titles named in the question)",
                        ["model", "questions", "precision", "recall", "F1", "overlap recall", "spans per question"])
    outcomes = ResultTable("the hotpotqa chain per question (any rank), and the skill that brought the hop-2 passage "
                           "of the gold paths found", ["model", "no gold at hop 1", "other gold not reached",
                                                       "gold path found", "hop 2 by expanded only", "by link only",
                                                       "by both"])
    for name in models:
        progress(f"model {name}")
        result = analyse(None if name == "default" else name, args)
        results[name] = result
        for row in result["rows"]:
            chains.add(name, row["chain"], *[row[f"path_recall@{k}"] for k in (1, 5, 10, 20)], row["passage_em"])
        paths.add(name, *[f"{v['em']:.3f} / {v['recall@20']:.3f}" for v in result["resorted"].values()])
        fusions.add(name, *[f"{v['em']:.3f} / {v['recall@5']:.3f} / {v['recall@20']:.3f}"
                            for v in result["fusions"].values()])
        ranked = sorted(result["grid"].items(), key=lambda kv: (-(kv[1]["em"] + kv[1]["recall@20"]), kv[0] != "1.5/1"))
        for weights, v in ranked[:8] + [kv for kv in ranked[8:] if kv[0] == "1.5/1"]:
            grid.add(name, weights, v["em"], v["recall@5"], v["recall@20"])
        for chain, values in result["hop1"].items():
            hop1.add(name, chain, values["one gold"], values["both gold"], values["paths per question"])
        f, b = result["failures"], result["hop2_source"]
        outcomes.add(name, *f.values(), *b.values())
        s = result["spans"]
        spans.add(name, s["texts"], s["precision"], s["recall"], s["f1"], s["overlap_recall"], s["spans_per_text"])
    notes = [f"{name}: score components mean (stdev): " + ", ".join(
        f"{k} {v['mean']:.2f} ({v['stdev']:.2f})" for k, v in r["components"].items()) for name, r in results.items()]
    return Report([chains, paths, fusions, grid, hop1, outcomes, spans], results, notes)


if __name__ == "__main__":
    bench_main(build_parser().parse_known_args()[0].name, build_parser(), run)
