"""DHR on SQuAD 2.0 dev + NQ distractors with fully fine-tuned encoders: the run of ``sleuth dhr train`` (its
document and passage encoders, trained on the train articles only) scored like the zero-shot MiniLM in
``bench.dhr_squad``, from one set of vectors per encoder.

Equal budget: flat dense is the run's passage encoder alone (the passage objective), DHR is the same passage encoder
plus the run's document encoder (the document objective); both saw the same train-article questions for the same
steps. A ``--shared-encoder`` run (one model for both roles) is scored the same way. Lambda: the fine-tuned encoders
were trained on the train articles, so lambda is not chosen there; every variant is reported at the lambda the
zero-shot model chose on the train articles (``zero-shot lambda``) and at the best lambda on the evaluation articles
themselves (``oracle``, an upper bound that is not a fair result). The default ``dhr`` score (``p + 1.0 * max_doc p +
beta log n``, the prior only below the gate; beta, gate and passage text as shipped in the ``dhr`` pipeline, chosen
zero-shot by ``bench.dhr_squad_prior``) is scored with the fine-tuned passage encoder too, with its curve over the
gates. Passages are encoded as the shipped pipeline writes them (``--separator`` for another), so flat dense is the
``dense`` pipeline's text. The shipped gate is on the zero-shot encoder's cosine scale; ``matched gate`` carries it
to the fine-tuned encoder without its training questions: the gate that gates the same share of the NQ guard
questions (even positions, as in ``bench.dhr_squad_prior``) as the shipped gate does zero-shot, reported on the
evaluation articles and the other NQ half. The NQ questions search the same corpus (column NQ), as in ``bench.dhr_squad``. Vectors are
cached under $SLEUTH_HOME/dhr-squad/<run name>.

    SLEUTH_HOME=/work/cache-dhr python -m bench.dhr_squad_finetuned --run RUN_DIR [--round 1]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from bench.common import RESULTS_DIR, portable
from bench.dhr_squad import Bench, SquadSetting, cached, shipped_dhr_stage
from bench.dhr_squad_heads import identity_setup
from bench.dhr_squad_prior import GATES, Scores, prior_scores
from bench.dhr_squad_scores import gold_ranks, recall_measures
from sleuth.models.registry import load_encoder
from sleuth.systems.dhr.index import passage_texts, prior_applies

ROWS = ("flat", "max add", "summary add", "summary gate", "summary z", "centroid add", "centroid gate", "title add",
        "title gate", "context add", "context gate", "context bonus", "lse T=0.2", "length prior")


def encoded(folder: Path, run: Path, index, questions, nq_questions, separator: str) -> dict[str, np.ndarray]:
    """Query, passage (``title{separator}text``), document and title vectors of the run's two encoders, or of its one
    shared encoder (cached in ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    texts = [q.text for q in questions] + [q["question"] for q in nq_questions]
    if (run / "encoder").is_dir():  # a --shared-encoder run: one model in both roles
        passage = document = load_encoder(str(run / "encoder"))
    else:
        passage = load_encoder(str(run / "passage-encoder"))
        document = load_encoder(str(run / "document-encoder"))
    return {
        "queries": cached(folder / "queries.npy", lambda: passage.encode_queries(texts)),
        "passages": cached(folder / ("passages.npy" if separator == ", " else "passages_title_text.npy"),
                           lambda: passage.encode_passages(passage_texts(index.passages, separator))),
        "document queries": cached(folder / "document_queries.npy", lambda: document.encode_queries(texts)),
        "summaries": cached(folder / "summaries.npy", lambda: document.encode_passages(list(index.documents.texts))),
        "titles": cached(folder / "titles.npy", lambda: document.encode_passages(list(index.documents.titles))),
    }


def matched_gate(setting: SquadSetting, tuned: Scores, beta: float, below: float) -> dict:
    """The shipped gate carried to ``tuned`` (the fine-tuned encoder's scores): the quantile of its NQ guard
    questions' best passage scores at the share of them the shipped gate leaves below it zero-shot."""
    squad, nq, titles = setting.minilm_vectors()
    zero_shot = Scores(setting, np.vstack([squad, nq]), titles)  # setting's index: the zero-shot passage vectors
    guard, reported = setting.nq_rows[0::2], setting.nq_rows[1::2]
    share = float(np.mean(prior_applies(zero_shot.passage(guard).max(axis=1), below)))
    gate = float(np.quantile(tuned.passage(guard).max(axis=1), share))
    sets = {"eval": setting.rows(setting.eval_qs), "NQ guard": guard, "NQ reported": reported}
    return {"zero-shot share of guard questions gated": share, "gate": round(gate, 4),
            "flat R@1": {name: float(np.mean(gold_ranks(tuned.passage(rows), setting.gold[rows]) <= 1))
                         for name, rows in sets.items()},
            "gated share": {name: float(np.mean(prior_applies(tuned.passage(rows).max(axis=1), gate)))
                            for name, rows in sets.items()},
            "measures": {name: recall_measures(gold_ranks(prior_scores(tuned, rows, beta, True, gate),
                                                          setting.gold[rows])) for name, rows in sets.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True, help="The --out folder of sleuth dhr train.")
    parser.add_argument("--round", type=int, default=1)
    parser.add_argument("--name", default="dhr_squad_finetuned", help="Result file name under bench/results.")
    parser.add_argument("--separator", default=None, help="Passage text 'title{separator}text' (default: the shipped "
                                                          "dhr pipeline's).")
    args = parser.parse_args()
    started = time.perf_counter()
    shipped = shipped_dhr_stage()
    separator = args.separator if args.separator is not None else shipped.get("separator", ", ")
    setting = SquadSetting.load(separator)  # its zero-shot vectors read the passages as the fine-tuned ones do
    index = setting.index
    run = args.run / f"round{args.round}"
    vectors = encoded(setting.ws.home / "dhr-squad" / args.run.name, run, index, setting.questions,
                      setting.nq_questions, separator)
    view = SimpleNamespace(passage_vectors=vectors["passages"], document_vectors=vectors["summaries"],
                           offsets=index.offsets, passage_document=index.passage_document, passages=index.passages)
    bench = Bench(setting.ws, view, vectors["queries"], setting.gold, setting.matchers, vectors["titles"],
                  vectors["document queries"])
    eval_rows, nq_rows = setting.rows(setting.eval_qs), setting.nq_rows
    setup = identity_setup(vectors["queries"].shape[1])
    zero_shot = json.loads((RESULTS_DIR / "dhr_squad.json").read_text())["zero-shot"]["chosen"]
    chosen = {v: row["lam"] for v, row in zero_shot.items()}  # the same grid of variants as here
    measured = bench.measure(setup, eval_rows, chosen, nq_rows)
    oracle = {v: max(curve.items(), key=lambda kv: kv[1]) for v, curve in measured["curve"].items()}
    scores = Scores(setting, vectors["queries"], vectors["titles"], vectors["passages"], vectors["summaries"])
    beta, below = float(shipped.get("length_prior", 0.0)), shipped.get("length_prior_below")
    default_dhr = {name: recall_measures(gold_ranks(prior_scores(scores, rows, beta, True, below), setting.gold[rows]))
                   for name, rows in (("eval", eval_rows), ("NQ", nq_rows))}
    gate_curve = {str(gate): {name: float(np.mean(gold_ranks(prior_scores(scores, rows, beta, True, gate),
                                                             setting.gold[rows]) <= 1))
                              for name, rows in (("eval R@1", eval_rows), ("NQ R@1", nq_rows))}
                  for gate in GATES}
    matched = matched_gate(setting, scores, beta, below) if below is not None else None
    report = json.loads((args.run / "report.json").read_text())
    options = "".join([f" --name {args.name}" if args.name != "dhr_squad_finetuned" else "",
                       f" --separator '{args.separator}'" if args.separator is not None else ""])
    result = {"command": f"python -m bench.dhr_squad_finetuned --run {args.run.name} --round {args.round}{options}",
              "training": {"config": report.get("config"), "train questions": report.get("train_questions"),
                           "round": report["rounds"][args.round - 1] if report.get("rounds") else None},
              "train articles": setting.train_articles, "zero-shot lambda": measured["chosen"],
              "oracle": {v: {"lam": lam, "R@1": r1} for v, (lam, r1) in oracle.items()},
              "passage text separator": separator,
              f"default dhr score (length prior {beta}, gate {below})": default_dhr,
              f"gate curve at length prior {beta} (oracle: on the evaluation articles)": gate_curve,
              "matched gate (the shipped gate's share of NQ guard questions)": matched,
              "curve": measured["curve"], "seconds": round(time.perf_counter() - started, 1)}
    path = RESULTS_DIR / f"{args.name}.json"
    text = json.dumps(result, indent=1).replace(str(args.run.resolve()), args.run.name)  # the run by its name
    path.write_text(portable(text) + "\n")
    flat = measured["chosen"]["flat"]["R@1"]
    for variant in ROWS:
        row = measured["chosen"].get(variant)
        if row:
            print(f"{variant:16s} lam {row['lam']:<5} R@1 {row['R@1']:.3f} ({row['R@1'] - flat:+.3f}) "
                  f"R@20 {row['R@20']:.3f} NQ R@1 {row['NQ R@1']:.3f}  oracle lam {oracle[variant][0]} "
                  f"R@1 {oracle[variant][1]:.3f}")
    print(f"default dhr score (max add, lam 1, length prior {beta}, gate {below}): R@1 {default_dhr['eval']['R@1']:.3f} "
          f"({default_dhr['eval']['R@1'] - flat:+.3f}) R@20 {default_dhr['eval']['R@20']:.3f} "
          f"NQ R@1 {default_dhr['NQ']['R@1']:.3f}")
    if matched is not None:
        print(f"matched gate {matched['gate']} (gates {matched['zero-shot share of guard questions gated']:.3f} of "
              f"the NQ guard zero-shot): eval R@1 {matched['measures']['eval']['R@1']:.3f} "
              f"({matched['measures']['eval']['R@1'] - flat:+.3f}), NQ reported half R@1 "
              f"{matched['measures']['NQ reported']['R@1']:.3f} (flat {matched['flat R@1']['NQ reported']:.3f}), "
              f"guard {matched['measures']['NQ guard']['R@1']:.3f} (flat {matched['flat R@1']['NQ guard']:.3f})")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
