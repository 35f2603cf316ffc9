"""`sleuth dhr train`: fine-tune DHR's document and passage encoders on QA questions (two rounds by default)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sleuth.cli import corpus_options
from sleuth.cli.common import DEVICE, console, corpus_source, positive_number
from sleuth.errors import ConfigError
from sleuth.overwrite import refuse_overwriting_inputs


def parse_counts(pairs: list[str], what: str) -> dict[str, int]:
    """``["bm25=1", "in-doc=1"]`` -> ``{"bm25": 1, "in-doc": 1}``."""
    counts = {}
    for pair in pairs:
        name, _, count = pair.partition("=")
        if not count.strip().isdigit():
            raise ConfigError(f"--{what} expects KIND=COUNT (e.g. bm25=1), got '{pair}'")
        counts[name.strip()] = int(count)
    return counts


def training_questions(paths: list[Path], train_articles: str | None) -> tuple[list, dict[str, list[str]] | None]:
    """The questions to train on and, for SQuAD files, the article split over all of them (evaluation-article
    questions left out; the default alternation runs over the articles of every file in order)."""
    from sleuth.corpus.questions import is_squad_file, read_questions
    from sleuth.corpus.squad import read_squad_questions

    squad = [is_squad_file(p) for p in paths]  # a JSON Lines file named .json is questions, as everywhere else
    if not any(squad):
        if train_articles is not None:
            raise ConfigError(f"--train-articles needs SQuAD questions, {paths[0]} is not a SQuAD JSON file")
        return distinct_ids([(p, list(read_questions(p))) for p in paths]), None
    if not all(squad):
        plain = next(p for p, s in zip(paths, squad) if not s)
        raise ConfigError(f"--questions: {plain} is not a SQuAD JSON file like the others")
    from sleuth.systems.dhr.article_split import parse_article_list, split_by_article

    chosen = parse_article_list(train_articles) if train_articles is not None else None
    train, held_out, names = split_by_article(distinct_ids([(p, list(read_squad_questions(p))) for p in paths]), chosen)
    evaluation = list(dict.fromkeys(q.metadata["article"] for q in held_out))
    console.print(f"article split: {len(names)} train articles ({len(train)} questions), {len(evaluation)} evaluation "
                  f"articles ({len(held_out)} questions, not trained on)")
    return train, {"train": names, "evaluation": evaluation}


def distinct_ids(files: list[tuple[Path, list]]) -> list:
    """The questions of every ``(path, questions)`` in order; a question id in two files (e.g. one file given twice)
    is refused: it was trained on twice."""
    first: dict[str, int] = {}
    for number, (path, questions) in enumerate(files):
        for question in questions:
            if first.setdefault(question.id, number) != number:
                raise ConfigError(f"--questions: question id '{question.id}' is in {files[first[question.id]][0]} "
                                  f"and in {path}; give each question once")
    return [q for _, questions in files for q in questions]


def train_dhr_command(
    corpus: Path = typer.Option(..., help="Corpus file or folder (e.g. ../shared/data/nq/corpus.jsonl)."),
    questions: list[Path] = typer.Option(..., help="Questions JSONL with id, question, answers (and gold_passage), "
                                                   "or SQuAD v1.1/v2.0 JSON files (split by article, see "
                                                   "--train-articles); repeatable."),
    distractors: list[Path] | None = typer.Option(None, "--distractors", help="Further corpus mixed into the corpus "
                                                                              "(repeatable), e.g. the NQ passages."),
    train_articles: str | None = typer.Option(None, help="SQuAD questions: the train articles (comma-separated "
                                                         "titles or a file); the others are never trained on. "
                                                         "Default: every other article in file order."),
    out: Path = typer.Option(..., help="Output folder: round<r>/{document,passage}-encoder, index, report.json (an "
                                       "earlier run there is replaced once this one has finished, and kept if "
                                       "it fails or is stopped; its indexes name the encoders by absolute path)."),
    fmt: str | None = typer.Option(None, "--format", help="Corpus reader (default: detected)."),
    field: corpus_options.Fields = None,
    splitter: str = typer.Option("none", help="none | sections (DHR's section-aware split for structured corpora)."),
    grouping: str = typer.Option("auto", help="auto | title | document: how passages form documents."),
    document_model: str = typer.Option("minilm", help="Base model of the document encoder (name or path)."),
    passage_model: str = typer.Option("minilm", help="Base model of the passage encoder (name or path)."),
    rounds: int = typer.Option(2, min=1, help="Training rounds; round r > 1 adds negatives mined by round r-1."),
    epochs: int = typer.Option(1, min=1, help="Epochs per round and encoder."),
    steps: int | None = typer.Option(None, "--max-steps", "--steps", min=1,
                                      help="Stop each training after this many steps."),
    batch_size: int = typer.Option(16, min=1, help="Questions per batch (in-batch negatives come from the batch)."),
    lr: float = typer.Option(2e-5, callback=positive_number, help="Learning rate (AdamW, linear warm-up and decay)."),
    max_length: int | None = typer.Option(None, min=1, help="Token limit while training (default: the model's)."),
    document_negatives: list[str] = typer.Option(["abstract=1"], help="KIND=COUNT, kinds: abstract, all-text."),
    passage_negatives: list[str] = typer.Option(["bm25=1", "in-doc=1"], help="KIND=COUNT, kinds: bm25, in-doc, "
                                                                                "in-sec."),
    mined: int | None = typer.Option(None, min=0, help="Mined negatives per question from round 2 on (from round 1 "
                                                       "with --mine-from-base); default 1."),
    mine_from_base: bool = typer.Option(False, "--mine-from-base", help="Round 1 adds negatives mined by the base "
                                                                       "models' index: base models that are trained "
                                                                       "encoders (an earlier run's round1/*-encoder) "
                                                                       "go on ANCE-style."),
    dev_fraction: float = typer.Option(0.2, help="Share of questions held out as dev (seeded hash split)."),
    seed: int = typer.Option(13, help="Seed of the split, the shuffling and the model initialisation."),
    evaluate_base: bool = typer.Option(False, help="Also index and evaluate the untrained base models."),
    shared_encoder: bool = typer.Option(False, help="Train one model for both roles on document and passage examples "
                                                    "together (half the indexing cost; the paper trains two)."),
    lora_rank: int | None = typer.Option(None, min=1, help="Train a LoRA adapter of this rank per encoder over the "
                                                           "frozen backbone (a few MB) instead of every weight."),
    max_minutes: float | None = typer.Option(None, callback=positive_number,
                                             help="Stop each encoder's training after this much wall time."),
    device: str = DEVICE,
    index: bool = typer.Option(True, help="Index the corpus and evaluate on dev after each round (--no-index: "
                                          "train only; needs --rounds 1)."),
) -> None:
    """Contrastive fine-tuning of the document encoder (in-batch, BM25 abstract/all-text negatives) and the passage
    encoder (in-batch, BM25, In-Doc, In-Sec negatives), then ANCE-style rounds with mined negatives."""
    from sleuth.models.registry import backbone_dir
    from sleuth.pipelines.mixed_source import with_distractors
    from sleuth.systems.dhr.earlier_run import restore_killed_runs
    from sleuth.systems.dhr.structure import documents_to_groups
    from sleuth.systems.dhr.training import DHRTrainingSettings, train_dhr
    from sleuth.train.checks import DHR_RUN_FILES, check_lora_rank, check_max_length, refuse_other_files
    from sleuth.train.contrastive import TrainConfig

    if mined and rounds == 1 and not mine_from_base:  # before: accepted, recorded, never used
        raise ConfigError(f"--mined {mined}: negatives are mined from round 2 on, or in round 1 with "
                          "--mine-from-base; give --rounds 2 or more, or --mine-from-base, or leave out --mined")
    backbone_dir(document_model, "--document-model")  # neither minilm nor a folder: refused before the data is read
    backbone_dir(passage_model, "--passage-model")
    models: dict[str, str | Path] = {"--document-model": document_model, "--passage-model": passage_model}
    check_max_length(max_length, models)
    check_lora_rank(lora_rank, models)
    if out.is_dir():
        restore_killed_runs(out)  # a run killed outright left the earlier run aside: it is what out holds
    refuse_other_files(out, markers=DHR_RUN_FILES, what="an earlier dhr train run")
    refuse_overwriting_inputs(out, [corpus, *questions, *(distractors or []),
                                    train_articles if train_articles and Path(train_articles).is_file() else None],
                              folder=True)
    source = with_distractors(corpus_source(corpus, fmt, field, splitter), distractors)
    query_list, articles = training_questions(questions, train_articles)
    groups = documents_to_groups(source.documents(), source.splitter, grouping)
    settings = DHRTrainingSettings(document_model=document_model, passage_model=passage_model, rounds=rounds,
                                   document_negatives=parse_counts(document_negatives, "document-negatives"),
                                   passage_negatives=parse_counts(passage_negatives, "passage-negatives"),
                                   mined_negatives=1 if mined is None else mined, dev_fraction=dev_fraction,
                                   split_seed=seed,
                                   evaluate_base=evaluate_base, mine_base=mine_from_base,
                                   shared_encoder=shared_encoder, index_rounds=index,
                                   articles=articles)
    config = TrainConfig(lr=lr, batch_size=batch_size, epochs=epochs, max_steps=steps, max_length=max_length,
                         seed=seed, device=device, lora_rank=lora_rank, max_minutes=max_minutes)
    report = train_dhr(groups, query_list, out, settings, config, log=console.print, corpus_info=source.info())
    console.print(f"wrote {out / 'report.json'}")
    print(json.dumps({r["round"]: r["dev"] for r in report["rounds"]}))

