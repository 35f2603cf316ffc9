"""The QUEST systems built from sleuth's stages: a retriever (BM25 or dense) alone, followed by the relevance
classifier, or followed by set-operation-aware scoring with the classifier; and their threshold tuning."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, InputError
from sleuth.paths import home_dir
from sleuth.pipelines.index_stage import bm25_retrieve, dense_retrieve
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.stages.base import Stage
from sleuth.stages.run import Run, rank_hits
from sleuth.systems.quest.classifier_training import Documents
from sleuth.systems.quest.classify import Classify
from sleuth.systems.quest.cut import GAPS, THRESHOLDS, SetCut, best_cut, cut_sweep
from sleuth.systems.quest.set_ops import SetOperations
from sleuth.systems.quest.templates import ParsedQuery

RETRIEVERS = ("bm25", "dense")
CANDIDATES = 100  # the classifier reads the retriever's top 100 (Malaviya et al., ACL 2023, section 4.3)
W = TypeVar("W")  # a tuned weight: a number, or a tuple of them
TOP_K_GRID = (1, 2, 3, 5, 10, 15, 20, 30, 50, 100)  # predicted-set sizes tried for a retriever alone


def default_classifier_dir() -> Path:
    """Where ``sleuth quest train`` writes and the QUEST pipelines read the classifier by default."""
    return home_dir() / "models" / "quest-classifier"


def shipped_classifier_dir() -> Path:
    """The trained classifier shipped in the package (a LoRA adapter over the packaged MiniLM, with its model card
    and tuned set rules): the default model of the QUEST classify and setops pipelines."""
    return Path(__file__).parent / "weights" / "quest-classifier"


def shipped_dual_encoder_dir() -> Path:
    """QUEST's trained dual encoder shipped in the package (a LoRA adapter over the packaged MiniLM, trained by
    ``sleuth quest train-dense``; see its README.md): the default encoder of the ``dual_encoder`` stage."""
    return Path(__file__).parent / "weights" / "quest-dual-encoder"


def quest_workspace(documents: str | Path, device: str = "cpu", show_progress: bool = True) -> Workspace:
    """A workspace over a QUEST documents.jsonl (``{title, text}``; the title is the document id)."""
    path = Path(documents)
    if not path.exists():
        raise ConfigError(f"QUEST corpus not found: {path}")
    source = CorpusSource(path, "quest")
    try:
        next(iter(source.documents()), None)  # its first record, read now
    except InputError as exc:  # before: the JSONL reader's hint, "name it with --field id=KEY", an option no quest
        reason = str(exc).split(": ", 1)[-1].split("; name it with")[0]  # command has
        raise InputError(f"not a QUEST documents.jsonl (one {{\"title\", \"text\"}} object a line, as `sleuth quest "
                         f"corpus` writes): {reason}", path=path) from None
    return Workspace(corpus=source, device=device, show_progress=show_progress)


def retriever(ws: Workspace, kind: str, k: int, encoder: str = "minilm") -> Stage:
    """BM25 (sleuth's defaults) or dense retrieval (``encoder``: a registered name or a trained encoder's path) over
    the workspace corpus."""
    if kind == "bm25":
        return bm25_retrieve(ws, k)
    if kind == "dense":
        return dense_retrieve(ws, k, encoder=encoder)
    raise ConfigError(f"unknown QUEST retriever '{kind}' (known: {', '.join(RETRIEVERS)})")


def corpus_documents(ws: Workspace) -> Documents:
    """Titles and texts of the workspace corpus by id (from the BM25 index's document store)."""
    store = ws.bm25().docstore
    return Documents(dict(zip(store.ids, store.titles)), dict(zip(store.ids, store.texts)))


def set_operations(classify: Classify, t_norm: str = "min", threshold: float | SetCut | None = None,
                   expand: Stage | None = None, expand_depth: int = 0, anchor: bool = False,
                   not_weight: float = 1.0) -> SetOperations:
    """Set-operation-aware scoring of candidates with the classifier as constraint scorer; with ``expand`` each
    positive constraint's own top ``expand_depth`` documents join the candidates (per-constraint retrieval)."""
    return SetOperations(classify, t_norm=t_norm, normalise="none", threshold=threshold, expand=expand,
                         expand_depth=expand_depth, anchor=anchor, not_weight=not_weight, name="setops")


NOT_WEIGHTS = (1.0, 0.85, 0.7, 0.5, 0.3)  # softness of the subtraction tried by tune_anchored
CONSTRAINT_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # shares of the set operation tried by tune_anchored (0: classify)


def anchored_run(classified: Run, constraints: Run, parsed: Mapping[str, ParsedQuery], not_weight: float,
                 t_norm: str = "min", constraint_weight: float = 1.0) -> Run:
    """What an anchored setops stage (no expansion) scores, from two scored runs over the same candidates: the
    whole-query run ``classified`` and a setops run carrying each hit's ``constraint_scores``; with
    ``constraint_weight`` c < 1 the score is ``(1 - c) * whole + c * anchored``."""
    from sleuth.systems.quest.fuzzy import combine_anchored

    run = Run()
    for qid, hits in classified.items():
        by_id = {h.id: h.extras.get("constraint_scores") for h in constraints.get(qid, [])}
        structure = parsed[qid]
        kept = [h for h in hits if by_id.get(h.id) is not None and len(by_id[h.id]) == len(structure.constraints)]
        if not kept:
            run[qid] = []
            continue
        memberships = [np.array([by_id[h.id][i] for h in kept]) for i in range(len(structure.constraints))]
        whole = np.array([h.score for h in kept])
        scores = combine_anchored(structure, memberships, whole, t_norm, not_weight, constraint_weight)
        run[qid] = rank_hits(h.with_score(float(s)) for h, s in zip(kept, scores))
    return run


def voted_anchored_run(classified: Run, constraints: Run, parsed: Mapping[str, ParsedQuery], not_weight: float,
                       retrieved: Run, vote_weight: float, constraint_weight: float = 1.0,
                       t_norm: str = "min") -> Run:
    """The anchored setops run voting with the retriever as classify does: ``(1 - vote_weight) * anchored score +
    vote_weight * min-max retriever score`` (an atomic or union query then scores as ``classify`` + vote)."""
    return fused_run(anchored_run(classified, constraints, parsed, not_weight, t_norm, constraint_weight),
                     retrieved, vote_weight)


def tune_anchored(classified: Run, constraints: Run, parsed: Mapping[str, ParsedQuery],
                  gold: Mapping[str, Sequence[str]], weights: Sequence[float] = NOT_WEIGHTS,
                  retrieved: Run | None = None, vote_weight: float = 0.0,
                  constraint_weights: Sequence[float] = (1.0,)) -> tuple[tuple[float, float], SetCut, float]:
    """The ``(constraint_weight, not_weight)`` and set rule of best average F1 for the anchored setops (ties: the
    first constraint weight tried, then the larger not weight); with ``retrieved`` the setops scores vote with the
    retriever's at ``vote_weight``."""
    def scored(pair: tuple[float, float]) -> Run:
        share, weight = pair
        if retrieved is not None and vote_weight:
            return voted_anchored_run(classified, constraints, parsed, weight, retrieved, vote_weight, share)
        return anchored_run(classified, constraints, parsed, weight, constraint_weight=share)

    return best_weight(scored, gold, [(share, weight) for share in constraint_weights for weight in weights])


def set_operation_ids(parsed: Mapping[str, ParsedQuery]) -> list[str]:
    """The queries parsed as intersections or differences (the ones an anchored setops rescores)."""
    return [qid for qid, structure in parsed.items() if structure.is_set_operation]


def routed_sets(run: Run, parsed: Mapping[str, ParsedQuery], cut: SetCut, set_cut: SetCut) -> dict[str, list[str]]:
    """Each query's set under ``set_cut`` when it is parsed as an intersection or difference, else ``cut``: what a
    setops stage with a ``set_threshold`` predicts."""
    return {qid: [h.id for h in (set_cut if parsed[qid].is_set_operation else cut).members(hits)]
            for qid, hits in run.items()}


def tune_cut(run: Run, gold: Mapping[str, Sequence[str]], thresholds: Sequence[float] = THRESHOLDS,
             gaps: Sequence[float | None] = GAPS, keep_top: Sequence[bool] = (False, True)) -> tuple[SetCut, list]:
    """The best-F1 set rule of a probability-scored run (threshold, score gap, keep-top), and the whole sweep."""
    sweep = cut_sweep(run, gold, thresholds, gaps, keep_top)
    return best_cut(sweep), sweep


WEIGHTS = tuple(round(0.1 * i, 1) for i in range(11))  # retriever weights tried by tune_fusion


def fused_run(classified: Run, retrieved: Run, weight: float) -> Run:
    """A classified run re-scored as ``(1 - weight) * probability + weight * min-max retriever score``."""
    from sleuth.systems.quest.classify import fused

    run = Run()
    for qid, hits in classified.items():
        by_id = {h.id: h.score for h in retrieved.get(qid, [])}
        pool = list(by_id.values()) or [0.0]
        low = min(pool)
        inputs = [by_id.get(h.id, low) for h in hits]
        scores = fused(np.array([h.score for h in hits]), np.array(inputs), weight) if hits else np.zeros(0)
        run[qid] = rank_hits(h.with_score(float(s)) for h, s in zip(hits, scores))
    return run


def tune_fusion(classified: Run, retrieved: Run, gold: Mapping[str, Sequence[str]],
                weights: Sequence[float] = WEIGHTS) -> tuple[float, SetCut, float]:
    """The retriever weight and set rule of best average F1 (ties: the smaller weight), and that F1."""
    return best_weight(lambda weight: fused_run(classified, retrieved, weight), gold, weights)


def best_weight(scored: Callable[[W], Run], gold: Mapping[str, Sequence[str]], weights: Sequence[W]
                ) -> tuple[W, SetCut, float]:
    """The weight (of those tried, in order: ties keep the first) whose run ``scored(weight)`` reaches the best
    average F1 under its best set rule; with that rule and F1."""
    best: tuple[W, SetCut, float] | None = None
    for weight in weights:
        cut, sweep = tune_cut(scored(weight), gold)
        f1 = max(row["F1"] for row in sweep)
        if best is None or f1 > best[2] + 1e-12:
            best = (weight, cut, f1)
    if best is None:
        raise ConfigError("tuning a weight needs at least one weight to try")
    return best


def top_k_sets(run: Run, k: int) -> dict[str, list[str]]:
    """A retriever alone: each query's first ``k`` hits are its predicted set."""
    return {qid: [h.id for h in hits[:k]] for qid, hits in run.items()}


def tune_top_k(run: Run, gold: Mapping[str, Sequence[str]], grid: Sequence[int] = TOP_K_GRID) -> tuple[int, list]:
    """The predicted-set size of best average F1 for a retriever alone, and the whole sweep."""
    from sleuth.systems.quest.set_metrics import average, set_per_query

    sweep = [{"k": k, **average(set_per_query(top_k_sets(run, k), gold))} for k in grid]
    best = max(sweep, key=lambda row: (row["F1"], -row["k"]))
    return int(best["k"]), sweep


def restrict(run: Run, queries: Sequence[Query]) -> Run:
    """The rankings of ``queries`` only."""
    return Run({q.id: run.get(q.id, []) for q in queries})
