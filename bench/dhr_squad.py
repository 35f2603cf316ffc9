"""DHR where it matters: SQuAD 2.0 dev articles (23-49 paragraphs each) mixed with the NQ passages as distractor
documents, every variant of the document score scored from one set of vectors.

The hierarchical index of the mixed corpus (MiniLM, passages "title, text", documents "title, lead") is built once
by the workspace under $SLEUTH_HOME (the same cache ``sleuth eval --corpus ... --distractors ...`` uses); query and
title vectors are cached beside it. Articles alternate between a train half (even positions in the file: defaults
are chosen there) and an evaluation half (odd positions: reported); all questions search the whole mixed corpus.

    SLEUTH_HOME=/work/cache-dhr python -m bench.dhr_squad [--out docs/dhr]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from sleuth.corpus.squad import read_squad_questions
from sleuth.index.dense import VectorSearch
from sleuth.paths import shared_data_dir
from sleuth.pipelines.mixed_source import MixedCorpusSource
from sleuth.pipelines.workspace import Workspace
from sleuth.systems.dhr.builders import hierarchical_index
from sleuth.systems.dhr.index import combine_scores
from sleuth.systems.dhr.scoring import document_scores_from_passages

KS = (1, 5, 20)
LAMBDAS = (0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 2.0)
SERIAL_LAMBDAS = (0.5, 1.0)
K1S = (5, 20, 100)


def split_articles(questions) -> tuple[set[str], set[str]]:
    """Train (even file positions) and evaluation (odd) articles."""
    articles = list(dict.fromkeys(q.metadata["article"] for q in questions))
    return set(articles[0::2]), set(articles[1::2])


def cached(path: Path, make) -> np.ndarray:
    if path.is_file():
        return np.load(path)
    value = make()
    np.save(path, value)
    return value


def recall(final: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    """R@k (= answer-free gold-paragraph recall) and nDCG@10 with one gold passage per query."""
    gold_scores = final[np.arange(len(gold)), gold]
    rank = (final >= gold_scores[:, None]).sum(axis=1)  # 1-based rank of the gold passage (ties: gold last)
    rank = np.where(np.isfinite(gold_scores), rank, np.iinfo(np.int64).max)  # serial: gold outside the top k1
    out = {f"R@{k}": float(np.mean(rank <= k)) for k in KS}
    out["nDCG@10"] = float(np.mean(np.where(rank <= 10, 1 / np.log2(rank + 1), 0.0)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/dhr"))
    parser.add_argument("--titles", action="store_true", help="Also score documents by their encoded titles alone.")
    args = parser.parse_args()
    data = shared_data_dir()
    squad, nq = data / "squad2" / "dev-v2.0.json", data / "nq" / "corpus.jsonl"
    ws = Workspace(MixedCorpusSource(squad, distractors=(nq,)), show_progress=False)
    index = hierarchical_index(ws, None, "minilm", "minilm", VectorSearch(), ", ", "auto")
    folder = ws.home / "dhr-squad"
    folder.mkdir(exist_ok=True)
    questions = list(read_squad_questions(squad))
    encoder = ws.encoder("minilm")
    queries = cached(folder / "queries.npy", lambda: encoder.encode_queries([q.text for q in questions]))
    row = {pid: i for i, pid in enumerate(index.passages.ids)}
    gold = np.array([row[q.metadata["gold_passage"]] for q in questions])
    train_articles, eval_articles = split_articles(questions)
    halves = {"train": np.array([q.metadata["article"] in train_articles for q in questions])}
    halves["eval"] = ~halves["train"]
    passage = queries @ np.asarray(index.passage_vectors).T
    owner = index.passage_document
    counts = np.diff(index.offsets)
    print(json.dumps({"passages": len(index), "documents": index.num_documents, "multi": int((counts > 1).sum()),
                      "train": sorted(train_articles), "eval": sorted(eval_articles)}))
    doc = {"title+lead": queries @ index.document_vectors.T,
           "mean": document_scores_from_passages(passage, index.offsets, "mean"),
           "max": document_scores_from_passages(passage, index.offsets, "max"),
           "centroid": queries @ index.centroids.T}
    if args.titles:
        titles = cached(folder / "titles.npy", lambda: encoder.encode_passages(list(index.documents.titles)))
        doc["title"] = queries @ titles.T
    results = []
    for half, mask in halves.items():
        p, g = passage[mask], gold[mask]
        results.append({"half": half, "variant": "flat (DHR-P)", "mode": "parallel", "lam": 0.0, **recall(p, g)})
        for rep, scores in doc.items():
            d = scores[mask][:, owner]
            for combine in ("add", "gate"):
                for lam in LAMBDAS:
                    final = combine_scores(p, d, lam, combine)
                    results.append({"half": half, "variant": f"{rep} {combine}", "mode": "parallel", "lam": lam,
                                    **recall(final, g)})
                    if lam in SERIAL_LAMBDAS:  # serial: only the passages of the top-k1 documents
                        doc_rank = np.argsort(np.argsort(-scores[mask], axis=1), axis=1)[:, owner]
                        for k1 in K1S:
                            results.append({"half": half, "variant": f"{rep} {combine}", "mode": f"serial k1={k1}",
                                             "lam": lam, **recall(np.where(doc_rank < k1, final, -np.inf), g)})
    for r in results:
        print(json.dumps(r))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "squad_variants.json").write_text(json.dumps(results, indent=1))
    plot(results, args.out / "lambda_curve.png")


def plot(results: list[dict], path: Path) -> None:
    """R@1 against lambda (parallel mode), one line per document score and combination, per half."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, half in zip(axes, ("train", "eval")):
        rows = [r for r in results if r["half"] == half and r["mode"] == "parallel"]
        flat = next(r["R@1"] for r in rows if r["variant"] == "flat (DHR-P)")
        for variant in dict.fromkeys(r["variant"] for r in rows if r["variant"] != "flat (DHR-P)"):
            points = sorted((r["lam"], r["R@1"]) for r in rows if r["variant"] == variant)
            ax.plot([0.0] + [x for x, _ in points], [flat] + [y for _, y in points], marker="o", label=variant)
        ax.axhline(flat, color="black", linestyle="--", linewidth=1, label="flat (lambda 0)")
        ax.set_title(f"{half} articles")
        ax.set_xlabel("lambda (weight of the document score)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("gold paragraph R@1")
    fig.suptitle("DHR parallel, SQuAD 2.0 dev + NQ distractors, all-MiniLM-L6-v2 zero-shot")
    axes[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
