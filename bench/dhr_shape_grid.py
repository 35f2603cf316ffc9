"""The default ``dhr`` chosen on the train side of three corpus shapes (issue 32, docs/dhr "Three corpus shapes"):
every setting of the default score family against flat search, and the setting the documented rule picks.

Train side only. Questions: the train articles of ``squad2/dev-v2.0.json`` (the alternating split of
:mod:`sleuth.systems.dhr.article_split`), every question of ``squad2/train-v2.0-10articles.json``, and the NQ
questions at even positions (the guard). Corpora: each SQuAD file mixed with the NQ passages (as ``sleuth eval
--distractors`` and bench/dhr_squad.py mix them; the dev corpus is the whole file, its evaluation articles' paragraphs
included, their questions never asked) and alone; the guard searches dev + NQ and NQ alone.

Every corpus is the ``dhr`` stage's own hierarchical index (zero-shot MiniLM, passages "title text", which is what
``dense`` reads), built or loaded by a workspace under $SLEUTH_HOME; all workspaces share one encoder, which is told
the vectors of every index it loads, so each passage is encoded once; question vectors are cached under
``$SLEUTH_HOME/dhr-shape-grid``. Every setting is then scored from the vectors in numpy with the stage's own functions
(:meth:`HierarchicalIndex.document_scores`, :func:`combine_scores`, :func:`prior_applies`,
:meth:`HierarchicalIndex.length_prior`): flat search (lam 0, no prior: ``dense``) and the document's best passage
score added with lam 0 / 0.5 / 1 (always, or only for the questions under the gate), plus the length prior
``beta log n`` (0.015 / 0.02 / 0.03) for the questions whose best passage scores below the gate (0.50 / 0.52 /
0.54). Ranks count ties against the gold passage.

Rule: the highest R@1 of the train articles' questions on the two mixed corpora (pooled), among the settings never
below flat search at R@1 on the guard (both corpora) and within TOLERANCE of it at R@1, R@20 and nDCG@10 on every
shape; ties go to the first in grid order (smaller lam, prior, gate).

    SLEUTH_HOME=.cache/sleuth-dhr python -m bench.dhr_shape_grid [--quick | --every 20]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from bench.common import Report, ResultTable, add_size_option, base_parser, bench_main, progress
from bench.dhr_squad import cached
from bench.dhr_squad_scores import gold_ranks, recall_measures
from sleuth.corpus.jsonl import iter_jsonl
from sleuth.corpus.squad import read_squad_questions
from sleuth.models.passage_memo import content_key
from sleuth.paths import home_dir, shared_data_dir
from sleuth.pipelines.mixed_source import with_distractors
from sleuth.pipelines.sources import corpus_source
from sleuth.pipelines.workspace import CorpusSource, Workspace
from sleuth.systems.dhr.article_split import split_by_article
from sleuth.systems.dhr.builders import (
    DEFAULT_DHR_LAMBDA,
    DEFAULT_DHR_SEPARATOR,
    DEFAULT_LENGTH_PRIOR,
    DEFAULT_PRIOR_GATE,
    HierarchySource,
    hierarchical_index,
)
from sleuth.systems.dhr.index import HierarchicalIndex, combine_scores, passage_texts, prior_applies

NAME = "dhr_shape_grid"
ENCODER = "minilm"
LAMBDAS = (0.0, 0.5, 1.0)
PRIORS = (0.015, 0.02, 0.03)
GATES = (0.50, 0.52, 0.54)
TOLERANCE = 0.003  # what a setting may lose against flat search on any train shape, at R@1, R@20 and nDCG@10
MEASURES = ("R@1", "R@20", "nDCG@10")
CHUNK = 1000  # questions scored at once (bounds the questions x passages matrices)


@dataclass(frozen=True)
class Setting:
    """One setting of the default ``dhr`` score: ``lam`` times the document's best passage score added (for every
    question, or with ``lam_gated`` only for those under the gate) and ``length_prior * log n`` for the questions whose
    best passage scores below ``gate``."""

    lam: float
    length_prior: float
    gate: float
    lam_gated: bool = False

    @property
    def label(self) -> str:
        lam = f"lam {self.lam:g}" + (" only under the gate" if self.lam_gated else "")
        return f"{lam}, prior {self.length_prior:g}, gate {self.gate:.2f}"

    @property
    def stage_keys(self) -> dict[str, float]:
        """The ``dhr`` stage keys of this setting (a lam added only under the gate has none)."""
        if self.lam_gated:
            raise ValueError(f"{self.label}: the dhr stage adds lam for every question")
        return {"lam": self.lam, "length_prior": self.length_prior, "length_prior_below": self.gate}


def grid() -> list[Setting]:
    """Every setting, in grid order: lam, then prior, then gate; for lam > 0 always and only under the gate."""
    return [Setting(lam, prior, gate, gated) for lam in LAMBDAS for gated in ((False,) if lam == 0 else (False, True))
            for prior in PRIORS for gate in GATES]


DEFAULT = Setting(DEFAULT_DHR_LAMBDA, DEFAULT_LENGTH_PRIOR, DEFAULT_PRIOR_GATE)  # the shipped ``dhr`` pipeline's


class SettingScores:
    """Every passage's final score for some questions (vectors), per setting, as the ``dhr`` stage (parallel mode,
    document score "max", combination "add") computes them over ``index``; ``flat`` is the passage score alone."""

    def __init__(self, index: HierarchicalIndex, queries: np.ndarray):
        self.index = index
        self.queries = np.asarray(queries, dtype=np.float32)
        self.flat = self.queries @ np.asarray(index.passage_vectors, dtype=np.float32).T
        self.documents = index.document_scores(self.queries, "max")
        self.best = self.documents.max(axis=1)  # the question's best passage score: what the gate reads

    @cached_property
    def owner_documents(self) -> np.ndarray:
        """The document score of each passage's document (questions x passages)."""
        return self.documents[:, self.index.passage_document]

    def final(self, setting: Setting) -> np.ndarray:
        """Final scores (questions x passages) under ``setting``."""
        applies = prior_applies(self.best, setting.gate)
        final = self.flat
        if setting.lam:
            combined = combine_scores(self.flat, self.owner_documents, setting.lam, "add")
            final = np.where(applies[:, None], combined, self.flat) if setting.lam_gated else combined
        priors = applies.astype(np.float32)[:, None] * self.index.length_prior(setting.length_prior)[None, :]
        return final + priors[:, self.index.passage_document]


def gold_ranks_by_setting(index: HierarchicalIndex, queries: np.ndarray, gold: np.ndarray,
                          settings: Sequence[Setting]) -> tuple[np.ndarray, dict[Setting, np.ndarray]]:
    """The gold passage's rank under flat search and under every setting, CHUNK questions at a time."""
    flat: list[np.ndarray] = []
    ranks: dict[Setting, list[np.ndarray]] = {s: [] for s in settings}
    for start in range(0, len(queries), CHUNK):
        scores, chunk_gold = SettingScores(index, queries[start:start + CHUNK]), gold[start:start + CHUNK]
        flat.append(gold_ranks(scores.flat, chunk_gold))
        for setting in settings:
            ranks[setting].append(gold_ranks(scores.final(setting), chunk_gold))
    return np.concatenate(flat), {s: np.concatenate(r) for s, r in ranks.items()}


def shared_workspaces(sources: dict[str, CorpusSource], home: Path | None = None,
                      show_progress: bool = False) -> dict[str, Workspace]:
    """One workspace per corpus, all with the first one's encoder (one model loaded, one memo of passage vectors)."""
    workspaces = {name: Workspace(source, home=home or home_dir(), show_progress=show_progress)
                  for name, source in sources.items()}
    first = next(iter(workspaces.values()))
    encoder = first.encoder(ENCODER)
    for ws in workspaces.values():
        ws.memo(f"encoder:{ENCODER}", lambda: encoder)
    return workspaces


def dhr_index(ws: Workspace) -> HierarchicalIndex:
    """The ``dhr`` stage's hierarchical index of the workspace corpus (built or loaded), its vectors told to the
    shared encoder's memo, so that an index loaded from the cache spares the next one's build its passages."""
    separator = DEFAULT_DHR_SEPARATOR
    index = hierarchical_index(ws, HierarchySource(separator=separator))
    encoder = ws.encoder(ENCODER)
    if encoder.passage_memo is not None:
        texts = list(index.documents.texts) + passage_texts(index.passages, separator)
        vectors = np.concatenate([np.asarray(index.document_vectors), np.asarray(index.passage_vectors)])
        encoder.passage_memo.remember({content_key(encoder.passage_prefix + text): vector
                                       for text, vector in zip(texts, vectors)})
    return index


@dataclass
class Questions:
    """A question set: ids, texts and gold passage ids."""

    name: str
    ids: list[str]
    texts: list[str]
    gold: list[str]

    def every(self, step: int) -> Questions:
        return Questions(self.name, self.ids[::step], self.texts[::step], self.gold[::step])


def question_sets(data: Path) -> dict[str, Questions]:
    """The train side's questions: dev train articles, train-10, and the NQ guard (even positions)."""
    dev_train, _, _ = split_by_article(list(read_squad_questions(data / "squad2" / "dev-v2.0.json")))
    train10 = list(read_squad_questions(data / "squad2" / "train-v2.0-10articles.json"))
    nq = [question for _, question in iter_jsonl(data / "nq" / "questions.jsonl")][0::2]
    squad = {name: Questions(name, [q.id for q in qs], [q.text for q in qs], [q.metadata["gold_passage"] for q in qs])
             for name, qs in (("dev train", dev_train), ("train-10", train10))}
    return {**squad, "NQ guard": Questions("NQ guard", [q["id"] for q in nq], [q["question"] for q in nq],
                                           [q["gold_passage"] for q in nq])}


@dataclass(frozen=True)
class Shape:
    """A column of the table: a corpus, the questions searched on it, and whether they are guard questions."""

    name: str
    corpus: str
    questions: str
    guard: bool = False
    mixed: bool = False  # a train-article column of a mixed corpus (what the rule maximises)


SHAPES = (Shape("dev train articles + NQ", "dev + NQ", "dev train", mixed=True),
          Shape("train-10 + NQ", "train-10 + NQ", "train-10", mixed=True),
          Shape("NQ guard on SQuAD + NQ", "dev + NQ", "NQ guard", guard=True),
          Shape("dev articles alone", "dev", "dev train"),
          Shape("train-10 alone", "train-10", "train-10"),
          Shape("NQ guard on NQ alone", "NQ", "NQ guard", guard=True))


def corpus_sources(data: Path) -> dict[str, CorpusSource]:
    """The five corpora of the shapes, the largest first (its vectors then serve the others' builds)."""
    dev, train10 = data / "squad2" / "dev-v2.0.json", data / "squad2" / "train-v2.0-10articles.json"
    nq = data / "nq" / "corpus.jsonl"
    return {"dev + NQ": with_distractors(corpus_source(dev), (nq,)), "dev": corpus_source(dev),
            "NQ": corpus_source(nq), "train-10 + NQ": with_distractors(corpus_source(train10), (nq,)),
            "train-10": corpus_source(train10)}


def question_vectors(ws: Workspace, questions: Questions, step: int) -> np.ndarray:
    """The questions' MiniLM vectors, encoded once and cached under $SLEUTH_HOME/dhr-shape-grid."""
    folder = ws.home / NAME
    folder.mkdir(parents=True, exist_ok=True)
    slug = questions.name.replace(" ", "-")
    return cached(folder / f"{slug}-every{step}.npy", lambda: ws.encoder(ENCODER).encode_queries(questions.texts))


def signed(value: float) -> str:
    """A difference as the docs write it: ``+.036``, ``-.001``, ``0`` (exactly none)."""
    if value == 0:
        return "0"
    text = f"{value:+.3f}"
    return text[0] + text[2:] if text[1] == "0" else text


def differences(figures: dict[str, float], flat: dict[str, float]) -> dict[str, float]:
    return {m: figures[m] - flat[m] for m in MEASURES}


def choose(rows: dict[Setting, dict], shapes: Sequence[Shape]) -> tuple[Setting | None, dict[Setting, str]]:
    """The rule's pick, and why each setting was left out ("" when allowed)."""
    why: dict[Setting, str] = {}
    for setting, row in rows.items():
        reasons = [f"{shape.name} R@1 {signed(row['diff'][shape.name]['R@1'])}" for shape in shapes
                   if shape.guard and row["diff"][shape.name]["R@1"] < -1e-9]
        reasons += [f"{shape.name} {m} {signed(d)}" for shape in shapes for m, d in row["diff"][shape.name].items()
                    if d < -TOLERANCE - 1e-9 and not (shape.guard and m == "R@1")]  # guard R@1: stricter, above
        why[setting] = "; ".join(reasons)
    allowed = [s for s in rows if not why[s]]
    chosen = max(allowed, key=lambda s: rows[s]["mixed R@1"]) if allowed else None  # first of the best in grid order
    return chosen, why


def run(args: argparse.Namespace) -> Report:
    step = args.every or (20 if args.quick else 1)
    data = shared_data_dir()
    sets = {name: q.every(step) for name, q in question_sets(data).items()}
    progress(f"questions (every {step}): " + ", ".join(f"{name} {len(q.ids):,}" for name, q in sets.items()))
    workspaces = shared_workspaces(corpus_sources(data), show_progress=args.progress)
    settings = grid()
    measured: dict[str, dict] = {}
    for shape in SHAPES:
        ws = workspaces[shape.corpus]
        index = dhr_index(ws)
        questions = sets[shape.questions]
        row_of = {pid: i for i, pid in enumerate(index.passages.ids)}
        gold = np.array([row_of[pid] for pid in questions.gold])
        progress(f"{shape.name}: {len(questions.ids):,} questions, {len(index):,} passages in "
                 f"{index.num_documents:,} documents; {len(settings)} settings")
        flat, ranks = gold_ranks_by_setting(index, question_vectors(ws, questions, step), gold, settings)
        measured[shape.name] = {"questions": len(gold), "passages": len(index), "documents": index.num_documents,
                                "flat": recall_measures(flat),
                                "settings": {s: recall_measures(r) for s, r in ranks.items()}}
    rows: dict[Setting, dict] = {}
    for setting in settings:
        mixed = [s for s in SHAPES if s.mixed]
        pooled = sum(measured[s.name]["settings"][setting]["R@1"] * measured[s.name]["questions"] for s in mixed)
        rows[setting] = {"diff": {s.name: differences(measured[s.name]["settings"][setting], measured[s.name]["flat"])
                                  for s in SHAPES},
                         "mixed R@1": pooled / sum(measured[s.name]["questions"] for s in mixed)}
    chosen, why = choose(rows, SHAPES)
    return report(measured, rows, chosen, why, step)


def report(measured: dict, rows: dict[Setting, dict], chosen: Setting | None, why: dict[Setting, str],
           step: int) -> Report:
    """The tables (flat search; every setting's differences), the JSON data and the notes."""
    flat_table = ResultTable("Flat search (= dense): R@1 / R@20 / nDCG@10",
                             ["shape", "questions", "passages", "documents", "R@1 / R@20 / nDCG@10"])
    for shape in SHAPES:
        m = measured[shape.name]
        flat_table.add(shape.name, m["questions"], m["passages"], m["documents"],
                       " / ".join(f"{m['flat'][k]:.3f}" for k in MEASURES))
    grid_table = ResultTable("Difference to flat search, R@1 / R@20 / nDCG@10 (rule: chosen / left out because)",
                             ["setting", *(s.name for s in SHAPES), "mixed R@1", "rule"])
    for setting, row in rows.items():
        mark = "chosen" if setting == chosen else why[setting] or "allowed"
        grid_table.add(setting.label, *(" / ".join(signed(row["diff"][s.name][m]) for m in MEASURES) for s in SHAPES),
                       f"{row['mixed R@1']:.4f}", mark)
    data = {"every": step, "tolerance": TOLERANCE, "shapes": [asdict(s) for s in SHAPES],
            "flat": {name: {k: v for k, v in m.items() if k != "settings"} for name, m in measured.items()},
            "settings": [{**asdict(s), "label": s.label, "mixed R@1": row["mixed R@1"], "left out because": why[s],
                          "difference": row["diff"],
                          "figures": {name: measured[name]["settings"][s] for name in measured}}
                         for s, row in rows.items()],
            "chosen": None if chosen is None else asdict(chosen), "shipped default": asdict(DEFAULT),
            "chosen is the shipped default": chosen == DEFAULT}
    notes = [f"rule: highest pooled R@1 of the train articles' questions on the mixed corpora, among settings never "
             f"below flat at R@1 on the guard and within {TOLERANCE} of flat at R@1, R@20, nDCG@10 on every shape",
             f"allowed by the rule: {'; '.join(s.label for s in rows if not why[s]) or 'none'}",
             f"chosen: {chosen.label if chosen else 'none allowed'}; the shipped dhr default is {DEFAULT.label}"
             f" ({'the same' if chosen == DEFAULT else 'DIFFERENT'})"]
    if step > 1:
        notes.append(f"every {step}th question only (--quick / --every): too few for the rule; a check, not a choice")
    return Report([flat_table, grid_table], data, notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    add_size_option(parser, "--every", full=1, quick=20, what="every n-th question of each set")
    parser.add_argument("--progress", action="store_true", help="progress bars while indexes are built")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
