"""DHR where it matters: SQuAD 2.0 dev articles (23-49 paragraphs each) mixed with the NQ passages as distractor
documents; every document score and combination, zero-shot and trained, scored from one set of vectors.

The hierarchical index of the mixed corpus (MiniLM, passages "title, text", documents "title, lead") is built once
by the workspace under $SLEUTH_HOME (the cache ``sleuth eval --corpus ... --distractors ...`` uses); query vectors
are cached beside it. Articles are split as ``sleuth dhr train`` splits them (alternating in file order): lambda and
the variant are chosen on the train articles only, the evaluation articles are reported. The NQ questions search the
same mixed corpus: their gold passages are in one- or few-passage documents, so a document score that merely favours
long documents shows up there as a loss.

Trained encoders (bench/dhr_squad_heads.py) are linear heads over the frozen vectors, trained on train-article
questions at equal budget per objective; lambda for a trained setup is chosen by article-level cross-fitting within
the train articles (heads trained on one half of them, lambda scored on the other half, and back).

    SLEUTH_HOME=/work/cache-dhr python -m bench.dhr_squad [--steps 100 --batch 32 --lr 1e-4]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import RESULTS_DIR, portable
from bench.dhr_squad_heads import build_objectives, identity_setup, train_setups
from bench.dhr_squad_scores import (
    answer_accuracy,
    best_lambdas,
    context_scores,
    gold_ranks,
    recall_measures,
    variant_grid,
)
from sleuth.corpus.squad import read_squad_questions
from sleuth.eval.answers import answer_matcher
from sleuth.paths import shared_data_dir
from sleuth.pipelines.config import read_config
from sleuth.pipelines.mixed_source import MixedCorpusSource
from sleuth.pipelines.workspace import Workspace
from sleuth.systems.dhr.article_split import split_by_article
from sleuth.systems.dhr.builders import HierarchySource, corpus_groups, hierarchical_index
from sleuth.systems.dhr.index import unit_centroids
from sleuth.systems.dhr.training_data import DHRCorpus
from sleuth.train.contrastive import TrainConfig

HEADLINE = ("flat", "max add", "length prior", "lse T=0.1", "lse T=0.2", "summary add", "summary gate", "summary z",
            "summary softmax", "centroid add", "centroid z", "summary serial k1=100", "context add", "context gate",
            "title add", "title gate", "context bonus")


@dataclass
class SquadSetting:
    """The mixed corpus (SQuAD 2.0 dev + NQ distractors) and its hierarchical MiniLM index, the SQuAD and NQ questions
    (SQuAD first: a question's row in a query matrix), their gold passage rows and answer matchers, the article
    split of ``sleuth dhr train``."""

    ws: Workspace
    index: Any
    questions: list
    nq_questions: list[dict]
    gold: np.ndarray
    matchers: list
    train_qs: list
    eval_qs: list
    train_articles: list[str]

    @classmethod
    def load(cls, separator: str = ", ") -> SquadSetting:
        """The setting with the hierarchical index whose passages read ``title{separator}text``."""
        data = shared_data_dir()
        squad, nq = data / "squad2" / "dev-v2.0.json", data / "nq" / "corpus.jsonl"
        ws = Workspace(MixedCorpusSource(squad, distractors=(nq,)), show_progress=False)
        index = hierarchical_index(ws, HierarchySource(separator=separator))
        questions = list(read_squad_questions(squad))
        nq_questions = [json.loads(line) for line in (data / "nq" / "questions.jsonl").open(encoding="utf-8")]
        row_of = {pid: i for i, pid in enumerate(index.passages.ids)}
        gold = np.array([row_of[q.metadata["gold_passage"]] for q in questions]
                        + [row_of[q["gold_passage"]] for q in nq_questions])
        matchers = [answer_matcher(q.metadata["answers"]) if q.metadata["answers"] else None for q in questions]
        return cls(ws, index, questions, nq_questions, gold, matchers + [None] * len(nq_questions),
                   *split_by_article(questions))

    @cached_property
    def query_row(self) -> dict[str, int]:
        return {q.id: i for i, q in enumerate(self.questions)}

    def rows(self, questions) -> np.ndarray:
        """Query-matrix rows of SQuAD ``questions``."""
        row = self.query_row
        return np.array([row[q.id] for q in questions])

    @property
    def nq_rows(self) -> np.ndarray:
        return np.arange(len(self.questions), len(self.questions) + len(self.nq_questions))

    def minilm_vectors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The zero-shot MiniLM vectors of the SQuAD questions, the NQ questions and the document titles (encoded
        once, then cached under the workspace's ``dhr-squad`` folder)."""
        folder = self.ws.home / "dhr-squad"
        folder.mkdir(exist_ok=True)
        encoder = self.ws.encoder("minilm")
        return (cached(folder / "queries.npy", lambda: encoder.encode_queries([q.text for q in self.questions])),
                cached(folder / "nq_queries.npy",
                       lambda: encoder.encode_queries([q["question"] for q in self.nq_questions])),
                cached(folder / "titles.npy", lambda: encoder.encode_passages(list(self.index.documents.titles))))


def shipped_dhr_stage() -> dict[str, Any]:
    """The ``dhr`` stage parameters of the shipped ``dhr`` pipeline (its separator, length prior and gate)."""
    return dict(read_config("dhr")["stages"][0]["dhr"])


def cached(path: Path, make) -> np.ndarray:
    if path.is_file():
        return np.load(path)
    value = make()
    np.save(path, value)
    return value


class Bench:
    """The mixed corpus's vectors, the questions and their gold rows; scores a setup's variants on query rows."""

    def __init__(self, ws: Workspace, index, queries: np.ndarray, gold: np.ndarray, matchers: list,
                 titles: np.ndarray | None = None, document_queries: np.ndarray | None = None):
        self.ws, self.index, self.queries, self.gold, self.matchers = ws, index, queries, gold, matchers
        self.titles = titles  # document titles encoded alone (the "title" document score), if given
        self.document_queries = queries if document_queries is None else document_queries  # a 2nd encoder's
        self.passages, self.summaries = np.asarray(index.passage_vectors), np.asarray(index.document_vectors)
        self.offsets, self.owner = np.asarray(index.offsets), np.asarray(index.passage_document)
        self.texts = list(index.passages.texts)
        self.hits: dict[tuple[int, int], bool] = {}

    def grid(self, setup: dict, rows: np.ndarray):
        q = setup["passage"].apply(self.queries[rows])
        vectors = setup["passage"].apply(self.passages)
        passage = q @ vectors.T
        documents = {}
        if setup["document"] is not None:
            qd = setup["document"].apply(self.document_queries[rows])
            documents["summary"] = qd @ setup["document"].apply(self.summaries).T
            if self.titles is not None:
                documents["title"] = qd @ setup["document"].apply(self.titles).T
            # the centroid lives in the passage encoder's space, as in the dhr stage (document: centroid)
            documents["centroid"] = q @ unit_centroids(vectors, self.offsets).T
        context = context_scores(q, vectors, self.offsets, self.owner)
        return variant_grid(passage, documents, self.offsets, self.owner, context)

    def flat_r1(self, head, rows: np.ndarray) -> float:
        """R@1 of flat search through one head."""
        scores = head.apply(self.queries[rows]) @ head.apply(self.passages).T
        return float(np.mean(gold_ranks(scores, self.gold[rows]) <= 1))

    def r1(self, setup: dict, rows: np.ndarray) -> dict[tuple[str, float], float]:
        return {key: float(np.mean(gold_ranks(make(), self.gold[rows]) <= 1))
                for key, make in self.grid(setup, rows).items()}

    def measure(self, setup: dict, rows: np.ndarray, lambdas: dict[str, float], nq_rows: np.ndarray) -> dict:
        """Every variant at its chosen lambda on ``rows`` (R@k, nDCG@10, answers for headline variants), NQ R@1/20,
        and R@1 at every lambda (the curve)."""
        grid, nq_grid = self.grid(setup, rows), self.grid(setup, nq_rows)
        out: dict = {"chosen": {}, "curve": defaultdict(dict)}
        for (variant, lam), make in grid.items():
            final = make()
            rank = gold_ranks(final, self.gold[rows])
            out["curve"][variant][lam] = float(np.mean(rank <= 1))
            if lambdas.get(variant) != lam:
                continue
            row = {"lam": lam, **recall_measures(rank)}
            if variant in HEADLINE:
                row.update(self.answers(final, rows))
            nq_rank = gold_ranks(nq_grid[(variant, lam)](), self.gold[nq_rows])
            row.update({"NQ R@1": float(np.mean(nq_rank <= 1)), "NQ R@20": float(np.mean(nq_rank <= 20))})
            out["chosen"][variant] = row
        return out

    def answers(self, final: np.ndarray, rows: np.ndarray) -> dict[str, float]:
        """Top-k answer accuracy, memoising (query, passage) answer tests across variants."""
        def cached_matcher(i: int):
            matcher = self.matchers[i]
            if matcher is None:
                return None

            def test(text: str, i: int = i) -> bool:
                key = (i, hash(text))
                if key not in self.hits:
                    self.hits[key] = matcher(text)
                return self.hits[key]
            return test
        return answer_accuracy(final, [cached_matcher(int(i)) for i in rows], self.texts)

    def error_split(self, setup: dict, rows: np.ndarray, squad_documents: set[int]) -> dict[str, float]:
        """Where the top passage of flat search is wrong: another document (an NQ one, another article) or the gold
        article's other paragraphs. Only wrong-document errors can be fixed by a document score."""
        passage = setup["passage"].apply(self.queries[rows]) @ setup["passage"].apply(self.passages).T
        top, gold = passage.argmax(1), self.gold[rows]
        wrong_doc = self.owner[top] != self.owner[gold]
        nq = np.array([self.owner[t] not in squad_documents for t in top])
        return {"R@1": float(np.mean(top == gold)), "wrong document": float(np.mean(wrong_doc)),
                "wrong document: NQ": float(np.mean(wrong_doc & nq)),
                "wrong document: other article": float(np.mean(wrong_doc & ~nq)),
                "gold article, wrong paragraph": float(np.mean((top != gold) & ~wrong_doc))}


def bm25_row(ws: Workspace, bench: Bench, questions, rows: np.ndarray, nq_questions, nq_rows) -> dict:
    """BM25 over the same passages (title + text), gold rank within its top 100."""
    bm25 = ws.bm25()
    row_of = {pid: i for i, pid in enumerate(bench.index.passages.ids)}
    bm25_rows = np.array([row_of[pid] for pid in bm25.docstore.ids])

    def scores(texts: list[str]) -> np.ndarray:
        positions, values = bm25.search(texts, k=100)
        final = np.full((len(texts), len(row_of)), -np.inf, dtype=np.float32)
        np.put_along_axis(final, bm25_rows[positions], values.astype(np.float32), axis=1)
        return final

    final = scores([questions[i].text for i in rows])
    out = {"lam": 0.0, **recall_measures(gold_ranks(final, bench.gold[rows])), **bench.answers(final, rows)}
    nq_rank = gold_ranks(scores([q["question"] for q in nq_questions]), bench.gold[nq_rows])
    return {**out, "NQ R@1": float(np.mean(nq_rank <= 1)), "NQ R@20": float(np.mean(nq_rank <= 20))}


def budget_sweep(bench: Bench, train_qs, folds, query_row, corpus, index, vectors, batch: int) -> list[dict]:
    """How the flat head's budget (lr, steps) was chosen: trained on the first half of the train articles, R@1 on
    the second half (evaluation articles untouched)."""
    from sleuth.train.heads import LinearHead, VectorTask, train_linear_head

    fit = build_objectives([q for q in train_qs if q.metadata["article"] in folds[0]], query_row, corpus, index)
    rows = np.array([query_row[q.id] for q in train_qs if q.metadata["article"] in folds[1]])
    out = [{"lr": 0.0, "steps": 0, "held-out R@1": bench.flat_r1(LinearHead.identity(vectors.shape[1]), rows)}]
    for lr in (1e-4, 3e-4, 1e-3):
        for steps in (100, 300):
            trained = train_linear_head([VectorTask(vectors, np.asarray(index.passage_vectors), fit.passage)],
                                        TrainConfig(lr=lr, batch_size=batch, max_steps=steps, weight_decay=0.01,
                                                    show_progress=False))
            out.append({"lr": lr, "steps": steps, "held-out R@1": bench.flat_r1(trained.head, rows),
                        "last loss": float(np.mean(trained.losses[-20:]))})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/dhr"), help="Folder of the lambda curve plot.")
    parser.add_argument("--steps", type=int, default=100, help="Steps per objective (heads).")
    parser.add_argument("--batch", type=int, default=32, help="Questions per step.")
    parser.add_argument("--lr", type=float, default=1e-4)
    args = parser.parse_args()
    started = time.perf_counter()
    setting = SquadSetting.load()
    ws, index, questions, nq_questions = setting.ws, setting.index, setting.questions, setting.nq_questions
    squad_vectors, nq_vectors, titles = setting.minilm_vectors()
    bench = Bench(ws, index, np.vstack([squad_vectors, nq_vectors]), setting.gold, setting.matchers, titles)
    train_qs, eval_qs, train_articles = setting.train_qs, setting.eval_qs, setting.train_articles
    query_row, nq_rows = setting.query_row, setting.nq_rows
    rows = {"train": setting.rows(train_qs), "eval": setting.rows(eval_qs)}
    squad_documents = {int(bench.owner[g]) for g in setting.gold[:len(questions)]}
    dim = squad_vectors.shape[1]
    zero = {**identity_setup(dim)}
    result: dict = {"corpus": {"passages": len(index), "documents": index.num_documents,
                               "documents with >1 passage": int((np.diff(bench.offsets) > 1).sum())},
                    "split": {"train": train_articles, "evaluation": sorted({q.metadata["article"] for q in eval_qs}),
                              "train questions": len(train_qs), "evaluation questions": len(eval_qs),
                              "NQ questions": len(nq_questions)}}
    # zero-shot: lambda chosen on the train articles
    zero_lambdas = best_lambdas(bench.r1(zero, rows["train"]))
    result["zero-shot"] = bench.measure(zero, rows["eval"], zero_lambdas, nq_rows)
    result["zero-shot"]["train R@1 at chosen lambda"] = {
        v: r for (v, lam), r in bench.r1(zero, rows["train"]).items() if zero_lambdas[v] == lam}
    result["error split"] = {"zero-shot flat, eval": bench.error_split(zero, rows["eval"], squad_documents),
                             "zero-shot flat, train": bench.error_split(zero, rows["train"], squad_documents)}
    result["bm25"] = bm25_row(ws, bench, questions, rows["eval"], nq_questions, nq_rows)
    print(json.dumps({"zero-shot": result["zero-shot"]["chosen"], "errors": result["error split"]}), flush=True)
    # trained: heads at equal budget; lambda by article-level cross-fitting inside the train articles
    corpus = DHRCorpus(corpus_groups(ws, "auto"))
    config = TrainConfig(lr=args.lr, batch_size=args.batch, max_steps=args.steps, weight_decay=0.01,
                         show_progress=False)
    folds = (train_articles[0::2], train_articles[1::2])
    result["budget sweep"] = budget_sweep(bench, train_qs, folds, query_row, corpus, index, squad_vectors, args.batch)
    fold_r1: dict[str, dict] = defaultdict(lambda: defaultdict(float))
    for fit, score in (folds, folds[::-1]):
        fit_qs = [q for q in train_qs if q.metadata["article"] in fit]
        score_rows = np.array([query_row[q.id] for q in train_qs if q.metadata["article"] in score])
        setups = train_setups(build_objectives(fit_qs, query_row, corpus, index), squad_vectors, index, config)
        for name, setup in setups.items():
            for key, value in bench.r1(setup, score_rows).items():
                fold_r1[name][key] += value / 2
    objectives = build_objectives(train_qs, query_row, corpus, index)
    setups = train_setups(objectives, squad_vectors, index, config)
    result["trained"] = {"budget": {"steps per objective": args.steps, "batch": args.batch, "lr": args.lr,
                                    "passage negatives": "2 in-document + in-batch",
                                    "document negatives": "1 BM25 abstract + in-batch",
                                    "train examples": len(objectives.passage)}}
    for name, setup in setups.items():
        lambdas = best_lambdas(fold_r1[name])
        measured = bench.measure(setup, rows["eval"], lambdas, nq_rows)
        measured["cross-fit R@1 at chosen lambda"] = {v: r for (v, lam), r in fold_r1[name].items() if lambdas[v] == lam}
        measured["examples/s"] = setup["examples_per_second"]
        measured["loss first/last"] = setup["loss"]
        result["trained"][name] = measured
        print(json.dumps({name: measured["chosen"]}), flush=True)
    result["trained"]["error split"] = {"trained flat, eval": bench.error_split(setups["flat"], rows["eval"],
                                                                                squad_documents)}
    result["seconds"] = round(time.perf_counter() - started, 1)
    path = RESULTS_DIR / "dhr_squad.json"
    path.write_text(portable(json.dumps({"command": "python -m bench.dhr_squad " + " ".join(
        f"--{k} {v}" for k, v in vars(args).items() if k != "out"), **result}, indent=1)) + "\n")
    args.out.mkdir(parents=True, exist_ok=True)
    plot(result, args.out / "lambda_curve.png")
    print(f"wrote {path}")


def plot(result: dict, path: Path) -> None:
    """Eval-article R@1 against lambda: zero-shot and trained (two encoders), chosen variants, flat as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, (title, measured) in zip(axes, (("zero-shot", result["zero-shot"]),
                                            ("trained heads, two encoders", result["trained"]["two"]))):
        curve = measured["curve"]
        flat = curve["flat"][0.0]
        for variant in ("max add", "summary add", "summary gate", "summary z", "centroid z", "lse T=0.1",
                        "lse T=0.2", "length prior", "title add", "context bonus"):
            points = sorted(curve[variant].items())
            ax.plot([0.0] + [x for x, _ in points], [flat] + [y for _, y in points], marker="o", label=variant)
        ax.axhline(flat, color="black", linestyle="--", linewidth=1, label="flat (lambda 0)")
        ax.set_title(f"{title}, evaluation articles")
        ax.set_xlabel("lambda (beta for the length prior)")
        ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlim(left=0.0)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("gold paragraph R@1")
    fig.suptitle("DHR parallel, SQuAD 2.0 dev + NQ distractors, all-MiniLM-L6-v2 (+ linear heads)")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
