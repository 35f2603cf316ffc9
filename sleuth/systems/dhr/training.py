"""DHR training rounds: fine-tune the document and passage encoders, index the corpus, mine, train again.

Round 1 trains each encoder from its base model on BM25 (and In-Doc/In-Sec) negatives; round r > 1 continues from
round r-1's checkpoints with negatives mined by round r-1's index added (section 3.4, ANCE-style). With
``mine_base`` round 1 adds negatives mined by the base models' index too: base models that are trained encoders
(e.g. an earlier run's round-1 adapters) go on ANCE-style without repeating their first round. After each round
the corpus is indexed with the new encoders (``out/round<r>/index``, reusable by ``sleuth dhr compare``) and DHR is
evaluated on the dev questions. Everything a run did is written to ``out/report.json``; nothing is written to
``out`` before round 1's encoders are trained, so a run that fails on its input leaves no half-written folder, and an
earlier run in ``out`` is set aside until this one has finished (put back if it fails or is stopped: ``earlier_run``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from sleuth.corpus.model import Query
from sleuth.corpus.question_split import split_questions
from sleuth.errors import ConfigError
from sleuth.io import atomic_write_text
from sleuth.models.registry import load_encoder
from sleuth.systems.dhr.accuracy import hierarchical_accuracy
from sleuth.systems.dhr.earlier_run import replacing_earlier_run
from sleuth.systems.dhr.index import HierarchicalIndex
from sleuth.systems.dhr.stages import DEFAULT_K1, DEFAULT_LAMBDA, dhr
from sleuth.systems.dhr.structure import DEFAULT_SEPARATOR, DocumentPassages
from sleuth.systems.dhr.training_data import (
    DOCUMENT_NEGATIVE_KINDS,
    NEGATIVE_DEPTH,
    PASSAGE_NEGATIVE_KINDS,
    POSITIVE_DEPTH,
    DHRCorpus,
    LabelledQuestion,
    document_examples,
    label_questions,
    mine_with_ranking,
    passage_examples,
    rankings_from_run,
)
from sleuth.train.contrastive import TrainConfig, train_contrastive

DOCUMENT_ENCODER_DIR = "document-encoder"
PASSAGE_ENCODER_DIR = "passage-encoder"
SHARED_ENCODER_DIR = "encoder"


@dataclass
class DHRTrainingSettings:
    """What to train and how (defaults follow the paper's training setup: 1 BM25 + 1 In-Doc passage negative, abstract negatives)."""

    document_model: str = "minilm"
    passage_model: str = "minilm"
    rounds: int = 2
    document_negatives: dict[str, int] = field(default_factory=lambda: {"abstract": 1})
    passage_negatives: dict[str, int] = field(default_factory=lambda: {"bm25": 1, "in-doc": 1})
    mined_negatives: int = 1  # per question and encoder, from round 2 on
    dev_fraction: float = 0.2
    split_seed: int = 13
    separator: str = DEFAULT_SEPARATOR
    k1: int = DEFAULT_K1
    lam: float = DEFAULT_LAMBDA
    evaluate_base: bool = False  # also index and evaluate the untrained base models (round 0)
    mine_base: bool = False  # round 1 adds negatives mined by the base models' index (trained base encoders)
    ks: tuple[int, ...] = (1, 5, 20, 100)
    max_train_questions: int | None = None
    shared_encoder: bool = False  # one model for both roles, trained on document and passage examples together
    index_rounds: bool = True  # index the corpus and evaluate on dev after each round (needed to mine for round 2)
    articles: dict[str, list[str]] | None = None  # the article split the questions came from (recorded only)

    def check(self) -> DHRTrainingSettings:
        if self.rounds < 1:
            raise ConfigError("rounds must be at least 1")
        if not self.index_rounds and self.rounds > 1:
            raise ConfigError("without indexing after each round there is nothing to mine from for round 2: use "
                              "rounds=1")
        for kinds, known, what in ((self.document_negatives, DOCUMENT_NEGATIVE_KINDS, "document"),
                                   (self.passage_negatives, PASSAGE_NEGATIVE_KINDS, "passage")):
            unknown = sorted(set(kinds) - set(known))
            if unknown:
                raise ConfigError(f"unknown {what} negative kind(s) {unknown} (known: {', '.join(known)})")
        return self


def build_round_index(corpus: DHRCorpus, document_model: str, passage_model: str, path: Path | None,
                      device: str, show_progress: bool, corpus_info: dict | None = None) -> HierarchicalIndex:
    """The corpus indexed with the given encoders (one encoder object when both are the same model); ``corpus_info``
    (the corpus source's, with its fingerprint) goes into the manifest."""
    document_encoder = load_encoder(document_model, device=device)
    passage_encoder = document_encoder if passage_model == document_model else load_encoder(passage_model,
                                                                                              device=device)
    return HierarchicalIndex.build(corpus.groups, document_encoder, passage_encoder, path, separator=corpus.separator,
                                   corpus_info=corpus_info, show_progress=show_progress)


def evaluate(index: HierarchicalIndex, corpus: DHRCorpus, questions: Sequence[Query], settings: DHRTrainingSettings,
             device: str) -> dict[str, float]:
    """Serial DHR's passage- and document-level top-k accuracy on ``questions``."""
    stage = dhr(index, k1=settings.k1, k2=max(settings.ks), lam=settings.lam, device=device)
    run = stage.transform(list(questions))
    answers = {q.id: q.metadata["answers"] for q in questions}
    texts = {g.document.id: corpus.document_text(d) for d, g in enumerate(corpus.groups)}
    return hierarchical_accuracy(run, answers, texts, settings.ks)


def mine(index: HierarchicalIndex, corpus: DHRCorpus, items: Sequence[LabelledQuestion], count: int, device: str):
    """ANCE-style negatives from an index: top answer-free passages (DHR-P ranking) and documents per question."""
    from sleuth.systems.dhr.stages import resolve_document_encoder, resolve_passage_encoder

    texts = [item.query.text for item in items]
    passage_rows, _ = index.scan_passages(resolve_passage_encoder(index, None, device).encode_queries(texts),
                                          NEGATIVE_DEPTH)
    document_rows, _ = index.search_documents(resolve_document_encoder(index, None, device).encode_queries(texts),
                                              NEGATIVE_DEPTH)
    return mine_with_ranking(items, corpus, rankings_from_run(passage_rows), rankings_from_run(document_rows), count)


def train_dhr(groups: list[DocumentPassages], questions: Sequence[Query], out: str | Path,
              settings: DHRTrainingSettings = DHRTrainingSettings(), config: TrainConfig = TrainConfig(),
              log=print, corpus_info: dict | None = None) -> dict[str, Any]:
    """Run every training round and return (and write to ``out/report.json``) what happened; ``corpus_info`` (the
    corpus source's) is recorded in the rounds' index manifests, which `dhr compare --index` checks."""
    settings.check()
    out = Path(out).absolute()  # the rounds' indexes name their encoders by it (before: relative to where training
    # ran, so a round index could not be searched from another folder)
    corpus = DHRCorpus(groups, settings.separator, config.show_progress)
    train_questions, dev_questions = split_questions(questions, settings.dev_fraction, settings.split_seed)
    split = {"seed": settings.split_seed, "train": [q.id for q in train_questions], "dev": [q.id for q in dev_questions]}
    if settings.articles is not None:
        split["articles"] = settings.articles
    items = label_questions(train_questions, corpus)[:settings.max_train_questions]
    if not items:  # before: "no training examples" once split.json was written to out
        raise ConfigError(f"none of the {len(train_questions)} train questions has a positive passage in the corpus "
                          f"(a gold_passage it holds, or an answer in BM25's top {POSITIVE_DEPTH} passages): "
                          "nothing to train on")
    log(f"{len(train_questions)} train questions ({len(items)} with a positive), {len(dev_questions)} dev questions; "
        f"{len(corpus.groups)} documents, {len(corpus.passages)} passages")
    with replacing_earlier_run(out):  # an earlier run in out comes back if this one fails or is stopped
        return train_rounds(out, corpus, items, dev_questions, split, settings, config, log, corpus_info)


def train_rounds(out: Path, corpus: DHRCorpus, items: list[LabelledQuestion], dev_questions: Sequence[Query],
                 split: dict[str, Any], settings: DHRTrainingSettings, config: TrainConfig, log,
                 corpus_info: dict | None) -> dict[str, Any]:
    """The rounds of :func:`train_dhr` on its labelled train questions, written into ``out``."""
    report: dict[str, Any] = {"settings": asdict(settings), "config": asdict(config), "train_questions": len(items),
                              "dev_questions": len(dev_questions), "rounds": []}
    document_model, passage_model = settings.document_model, settings.passage_model  # names or paths
    index = None
    if settings.evaluate_base or settings.mine_base:
        index = build_round_index(corpus, document_model, passage_model, None, config.device, config.show_progress)
        if settings.evaluate_base:
            report["base_dev"] = evaluate(index, corpus, dev_questions, settings, config.device)
            log(f"round 0 (base models) dev: {format_accuracy(report['base_dev'])}")
    for round_number in range(1, settings.rounds + 1):
        folder = out / f"round{round_number}"
        mined_passages = mined_documents = None
        if round_number > 1 or settings.mine_base:
            if index is None:  # every round builds one, so later rounds always have the previous round's
                raise RuntimeError(f"round {round_number}: no index from round {round_number - 1} to mine")
            mined_passages, mined_documents = mine(index, corpus, items, settings.mined_negatives, config.device)
        document_data = document_examples(items, corpus, settings.document_negatives, mined_documents)
        passage_data = passage_examples(items, corpus, settings.passage_negatives, settings.split_seed, mined_passages)
        round_config = replace(config, seed=config.seed + round_number - 1)  # a new shuffle each round
        if settings.shared_encoder:
            document_result = passage_result = train_contrastive(document_model, document_data + passage_data,
                                                                 folder / SHARED_ENCODER_DIR, round_config)
        else:
            document_result = train_contrastive(document_model, document_data, folder / DOCUMENT_ENCODER_DIR,
                                                round_config)
            passage_result = train_contrastive(passage_model, passage_data, folder / PASSAGE_ENCODER_DIR, round_config)
        if round_number == 1:  # not before: a run that fails before its first model leaves nothing in out
            atomic_write_text(out / "split.json", json.dumps(split, indent=1) + "\n")
        document_model, passage_model = str(document_result.path), str(passage_result.path)
        dev: dict[str, float] = {}
        if settings.index_rounds:
            index = build_round_index(corpus, document_model, passage_model, folder / "index", config.device,
                                      config.show_progress, corpus_info)
            dev = evaluate(index, corpus, dev_questions, settings, config.device)
        results = [document_result] + ([passage_result] if passage_result is not document_result else [])
        seen = sum(r.steps * config.batch_size for r in results)  # examples seen (the last batch may be smaller)
        entry: dict[str, Any] = {
            "round": round_number, "document_encoder": document_model, "passage_encoder": passage_model,
            "index": str(folder / "index") if settings.index_rounds else None,
            "steps": {"document": document_result.steps, "passage": passage_result.steps},
            "examples_per_second": round(seen / max(sum(r.seconds for r in results), 1e-9), 2),
            "document_loss": document_result.first_last(),
            "passage_loss": passage_result.first_last(), "train_seconds": document_result.seconds
            + (passage_result.seconds if passage_result is not document_result else 0.0),
            "negatives_per_example": {
                "document": sum(len(e.negatives) for e in document_data) / len(document_data),
                "passage": sum(len(e.negatives) for e in passage_data) / len(passage_data)},
            "dev": dev}
        report["rounds"].append(entry)
        log(f"round {round_number}: document loss {entry['document_loss'][0]:.3f} -> {entry['document_loss'][1]:.3f}, "
            f"passage loss {entry['passage_loss'][0]:.3f} -> {entry['passage_loss'][1]:.3f}"
            + (f"; dev: {format_accuracy(dev)}" if dev else
               f"; no dev evaluation{'' if settings.index_rounds else ' (--no-index)'}"))
        atomic_write_text(out / "report.json", json.dumps(report, indent=1) + "\n")
    return report


def format_accuracy(values: dict[str, float]) -> str:
    """``P Top-1 0.412, ...`` for a log line."""
    return ", ".join(f"{name} {value:.3f}" for name, value in values.items())
