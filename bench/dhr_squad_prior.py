"""DHR on SQuAD + NQ distractors: the document-length prior, chosen under an NQ guard, and whether learned document
features add anything beyond it.

Question sets (zero-shot MiniLM, the mixed corpus of bench/dhr_squad.py): SQuAD *train* articles (choose), SQuAD
*evaluation* articles (report), and the 1,000 NQ questions split in two halves: even positions are the *guard* (used
when choosing: the chosen setting may lose at most GUARD_TOLERANCE of R@1 there against flat search), odd positions are
reported. Three families, each chosen by the same rule (highest train-article R@1 among the settings within the guard
tolerance):

- ``flat + prior``: ``p + beta log n`` (n = the document's passage count);
- ``dhr default + prior``: the default ``dhr`` pipeline's score ``p + 1.0 * max_doc p + beta log n``;
- ``learned``: a linear listwise model over the flat top-100 passages (softmax cross-entropy, L-BFGS), fitted on
  train-article + guard questions with the guard questions weighted w; features: the passage score and document
  features (encoded summary and title scores, the centroid score, soft-maximum bonuses at three temperatures, the gap
  to the document's best passage) with or without ``log n``. The weight w is chosen by the same rule.

A fourth family, ``gated``, is chosen by a stricter rule, *never worse on the guard*: the highest train-article R@1
among the settings whose guard R@1 is at least flat search's. It is the default ``dhr`` score with the prior added only
for questions whose best passage score is below a gate (``length_prior_below``), every beta x gate, for both passage
texts of the hierarchical index: "title, text" (the paper's) and "title text" (the ``dense`` pipeline's, where flat
search is ``dense`` itself).

    SLEUTH_HOME=/work/cache-dhr python -m bench.dhr_squad_prior
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from bench.common import RESULTS_DIR
from bench.dhr_squad import SquadSetting
from bench.dhr_squad_scores import gold_ranks, lse_bonus, recall_measures
from sleuth.systems.dhr.index import document_length_prior, prior_applies, unit_centroids

BETAS = (0.0, 0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05)
GUARD_WEIGHTS = (1.0, 3.0, 10.0, 20.0, 30.0, 60.0, 100.0)
GUARD_TOLERANCE = 0.01  # R@1 the chosen setting may lose on the guard questions against flat search
GATED_BETAS = tuple(round(0.005 * i, 3) for i in range(1, 13))  # 0.005 .. 0.06
GATES = (*(round(0.4 + 0.02 * i, 2) for i in range(16)), None)  # 0.40 .. 0.70, and no gate
SEPARATORS = {"title, text": ", ", "title text": " "}
DOCS_PLOT = Path(__file__).resolve().parent.parent / "docs" / "dhr" / "prior_gate.png"
DEPTH = 100  # flat candidates the learned model re-ranks
DOCUMENT_FEATURES = ("summary", "title", "centroid", "lse 0.05", "lse 0.1", "lse 0.2", "gap")


class Scores:
    """Per question set: the flat passage scores and every feature, over all passages (queries x passages)."""

    def __init__(self, setting: SquadSetting, queries: np.ndarray, titles: np.ndarray,
                 passages: np.ndarray | None = None, summaries: np.ndarray | None = None):
        index = setting.index  # its vectors unless other ``passages`` / ``summaries`` (another encoder's) are given
        self.passages = np.asarray(index.passage_vectors if passages is None else passages)
        self.summaries = np.asarray(index.document_vectors if summaries is None else summaries)
        self.titles = titles
        self.offsets, self.owner = np.asarray(index.offsets), np.asarray(index.passage_document)
        self.centroids = unit_centroids(self.passages, self.offsets)
        self.logn = document_length_prior(np.diff(self.offsets), 1.0)[self.owner]
        self.queries, self.gold = queries, setting.gold

    def passage(self, rows: np.ndarray) -> np.ndarray:
        return self.queries[rows] @ self.passages.T

    def features(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Features of each question's flat top-DEPTH passages (questions x DEPTH x features, names in
        ``("p", "log n") + DOCUMENT_FEATURES`` order), the candidates' rows and whether each is the gold passage."""
        q, p = self.queries[rows], self.passage(rows)
        best = np.maximum.reduceat(p, self.offsets[:-1], axis=1)[:, self.owner]
        full = {"p": p, "log n": np.broadcast_to(self.logn, p.shape), "summary": (q @ self.summaries.T)[:, self.owner],
                "title": (q @ self.titles.T)[:, self.owner], "centroid": (q @ self.centroids.T)[:, self.owner],
                **{f"lse {t}": lse_bonus(p, self.offsets, self.owner, t)[:, self.owner] for t in (0.05, 0.1, 0.2)},
                "gap": p - best}
        top = np.argpartition(-p, DEPTH, axis=1)[:, :DEPTH]
        x = np.stack([np.take_along_axis(full[name], top, axis=1) for name in ("p", "log n") + DOCUMENT_FEATURES], -1)
        return x.astype(np.float32), top, top == self.gold[rows][:, None]


def fit_listwise(x: np.ndarray, gold: np.ndarray, weight: np.ndarray, l2: float = 1e-3) -> np.ndarray:
    """Linear weights maximising the weighted softmax likelihood of the gold candidate (questions whose gold passage
    is not among the candidates are left out); features standardised for the fit, weights returned in raw units."""
    import torch

    keep = gold.any(1)
    xs, target, w = torch.tensor(x[keep]), torch.tensor(gold[keep].argmax(1)), torch.tensor(weight[keep])
    flat = xs.reshape(-1, xs.shape[-1])
    mean, sd = flat.mean(0), flat.std(0) + 1e-6
    xs = (xs - mean) / sd
    theta = torch.zeros(xs.shape[-1], requires_grad=True)
    optimiser = torch.optim.LBFGS([theta], max_iter=300, line_search_fn="strong_wolfe")

    def closure():
        optimiser.zero_grad()
        losses = torch.nn.functional.cross_entropy(xs @ theta * 10, target, reduction="none")
        loss = (losses * w).sum() / w.sum() + l2 * (theta ** 2).sum()
        loss.backward()
        return loss

    optimiser.step(closure)
    return (theta.detach() / sd).numpy()


def r1_of(x: np.ndarray, gold: np.ndarray, theta: np.ndarray) -> float:
    """R@1 of the candidates re-ranked by ``x @ theta``."""
    pick = (x @ theta).argmax(1)
    return float(gold[np.arange(len(gold)), pick].mean())


def choose(rows: list[dict]) -> dict:
    """The setting with the highest train R@1 among those within GUARD_TOLERANCE of flat on the guard questions."""
    allowed = [r for r in rows if r["guard R@1"] >= rows[0]["flat guard R@1"] - GUARD_TOLERANCE - 1e-9]
    return max(allowed, key=lambda r: r["train R@1"])


def prior_scores(scores: Scores, rows: np.ndarray, beta: float, with_max: bool,
                 below: float | None = None) -> np.ndarray:
    """``p (+ 1.0 * max_doc p) + beta log n`` for the questions ``rows`` (with_max: the default ``dhr`` score); with
    ``below``, the prior only for the questions whose best passage score is below it (the stage's gate)."""
    p = scores.passage(rows)
    base = p + np.maximum.reduceat(p, scores.offsets[:-1], axis=1)[:, scores.owner] if with_max else p
    return gated_prior(base, p.max(axis=1), scores.logn, beta, below)


def gated_prior(base: np.ndarray, best: np.ndarray, logn: np.ndarray, beta: float,
                below: float | None) -> np.ndarray:
    """``base + beta log n`` for the questions whose best passage score is below ``below`` (all when None)."""
    return base + np.float32(beta) * prior_applies(best, below)[:, None] * logn


def prior_family(scores: Scores, sets: dict[str, np.ndarray], with_max: bool) -> dict:
    """``p (+ max_doc p) + beta log n`` for every beta: R@1 per set, the chosen beta and its full measures."""
    def r1(rows: np.ndarray, beta: float) -> float:
        return float(np.mean(gold_ranks(prior_scores(scores, rows, beta, with_max), scores.gold[rows]) <= 1))

    flat_guard = r1(sets["guard"], 0.0)
    grid = [{"beta": b, "train R@1": r1(sets["train"], b), "guard R@1": r1(sets["guard"], b),
             "flat guard R@1": flat_guard} for b in BETAS]
    chosen = choose(grid)
    report = {name: recall_measures(gold_ranks(prior_scores(scores, sets[name], chosen["beta"], with_max),
                                               scores.gold[sets[name]]))
              for name in ("eval", "NQ reported", "NQ all")}
    curve = {b["beta"]: {"eval R@1": r1(sets["eval"], b["beta"]), "NQ reported R@1": r1(sets["NQ reported"], b["beta"])}
             for b in grid}
    return {"grid": grid, "chosen beta": chosen["beta"], "chosen": report, "curve": curve}


def gated_family(scores: Scores, sets: dict[str, np.ndarray]) -> dict:
    """The default ``dhr`` score with a gated prior, every beta x gate, chosen by the never-worse rule: the highest
    train R@1 among the settings whose guard R@1 is at least flat search's (ties: the first, smallest beta and gate)."""
    names = ("train", "guard", "eval", "NQ reported")
    base, best = {}, {}
    for name in names:  # the default score without a prior and the best passage score, once per question set
        p = scores.passage(sets[name])
        base[name] = p + np.maximum.reduceat(p, scores.offsets[:-1], axis=1)[:, scores.owner]
        best[name] = p.max(axis=1)

    def r1(name: str, beta: float, below: float | None) -> float:
        final = gated_prior(base[name], best[name], scores.logn, beta, below)
        return float(np.mean(gold_ranks(final, scores.gold[sets[name]]) <= 1))

    flat = {name: float(np.mean(gold_ranks(scores.passage(sets[name]), scores.gold[sets[name]]) <= 1))
            for name in names}
    grid = [{"beta": b, "gate": g, **{f"{name} R@1": r1(name, b, g) for name in ("train", "guard")}}
            for b in GATED_BETAS for g in GATES]
    allowed = [row for row in grid if row["guard R@1"] >= flat["guard"] - 1e-9]
    chosen = max(allowed, key=lambda row: row["train R@1"])
    report = {name: recall_measures(gold_ranks(prior_scores(scores, sets[name], chosen["beta"], True, chosen["gate"]),
                                               scores.gold[sets[name]]))
              for name in ("eval", "NQ reported", "NQ all")}
    flat_report = {name: recall_measures(gold_ranks(prior_scores(scores, sets[name], 0.0, True),
                                                    scores.gold[sets[name]]))
                   for name in ("eval", "NQ reported", "NQ all")}
    beta = chosen["beta"]  # the chosen beta's gate curve on the reported sets
    curve = {str(g): {f"{name} R@1": r1(name, beta, g) for name in names} for g in GATES}
    return {"flat R@1": flat, "grid": grid, "chosen beta": beta, "chosen gate": chosen["gate"],
            "chosen": report, "max add without prior": flat_report, "gate curve at the chosen beta": curve,
            "gated share": {name: float(np.mean(prior_applies(best[name], chosen["gate"]))) for name in names}}


def plot_gates(gated: dict, path: Path) -> None:
    """R@1 against the gate at the chosen beta, per passage text: evaluation articles and the reported NQ half, each
    against its flat search (dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, (name, label) in zip(axes, (("eval", "SQuAD evaluation articles (3,250 questions)"),
                                        ("NQ reported", "NQ questions, odd half (500)"))):
        for (text, family), colour in zip(gated.items(), ("tab:blue", "tab:orange")):
            curve = family["gate curve at the chosen beta"]
            gates = [g for g in curve if g != "None"]
            ax.plot([float(g) for g in gates], [curve[g][f"{name} R@1"] for g in gates], "o-", color=colour,
                    label=f'"{text}", beta {family["chosen beta"]}')
            ax.axhline(curve["None"][f"{name} R@1"], color=colour, linestyle=":", linewidth=1)
            ax.axhline(family["flat R@1"][name], color=colour, linestyle="--", linewidth=1)
            ax.axvline(family["chosen gate"], color=colour, linewidth=0.8, alpha=0.5)
        ax.set_title(label)
        ax.set_xlabel("gate length_prior_below (prior only where the best passage scores below it)", fontsize=8)
        ax.set_ylabel("R@1")
    axes[0].legend(title="dashed: flat search; dotted: no gate", fontsize=8, title_fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def learned_family(scores: Scores, sets: dict[str, np.ndarray], flat_guard: float) -> dict:
    """The listwise model with and without ``log n``, the guard weight chosen by the rule against ``flat_guard``
    (flat search's R@1 on the guard questions)."""
    data = {name: scores.features(sets[name]) for name in ("train", "guard", "eval", "NQ reported")}
    names = ("p", "log n") + DOCUMENT_FEATURES
    out = {}
    for label, columns in (("document features", [0, *range(2, len(names))]), ("log n only", [0, 1]),
                           ("document features + log n", list(range(len(names))))):
        x = np.concatenate([data["train"][0], data["guard"][0]])[..., columns]
        gold = np.concatenate([data["train"][2], data["guard"][2]])
        rows = []
        for w in GUARD_WEIGHTS:
            weight = np.concatenate([np.ones(len(data["train"][2])), np.full(len(data["guard"][2]), w)])
            theta = fit_listwise(x, gold, weight.astype(np.float32))
            rows.append({"guard weight": w, "weights": dict(zip([names[c] for c in columns], theta.round(4).tolist())),
                         "flat guard R@1": flat_guard,
                         **{f"{name} R@1": r1_of(data[name][0][..., columns], data[name][2], theta)
                            for name in ("train", "guard", "eval", "NQ reported")}})
        out[label] = {"grid": rows, "chosen": choose(rows)}
    return out


def main() -> None:
    started = time.perf_counter()
    setting = SquadSetting.load()
    squad, nq, titles = setting.minilm_vectors()
    scores = Scores(setting, np.vstack([squad, nq]), titles)
    nq_rows = setting.nq_rows
    sets = {"train": setting.rows(setting.train_qs), "eval": setting.rows(setting.eval_qs),
            "guard": nq_rows[0::2], "NQ reported": nq_rows[1::2], "NQ all": nq_rows}
    flat = {name: recall_measures(gold_ranks(scores.passage(rows), scores.gold[rows])) for name, rows in sets.items()}
    result = {"command": "python -m bench.dhr_squad_prior", "guard tolerance": GUARD_TOLERANCE,
              "questions": {name: len(rows) for name, rows in sets.items()}, "flat": flat,
              "flat + prior": prior_family(scores, sets, with_max=False),
              "dhr default + prior": prior_family(scores, sets, with_max=True)}
    print(json.dumps({k: result[k]["chosen"] for k in ("flat + prior", "dhr default + prior")}), flush=True)
    result["gated"] = {}
    for label, separator in SEPARATORS.items():
        passages = setting if separator == ", " else SquadSetting.load(separator)
        family = gated_family(Scores(passages, scores.queries, titles), sets)
        result["gated"][label] = family
        print(label, "gated: beta", family["chosen beta"], "gate", family["chosen gate"], "flat",
              json.dumps(family["flat R@1"]), "chosen", json.dumps(family["chosen"]), flush=True)
    plot_gates(result["gated"], DOCS_PLOT)
    result["learned"] = learned_family(scores, sets, flat["guard"]["R@1"])
    result["seconds"] = round(time.perf_counter() - started, 1)
    path = RESULTS_DIR / "dhr_squad_prior.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    for label, family in result["learned"].items():
        print(label, json.dumps(family["chosen"]))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
