"""`sleuth cos train`: Chain-of-Skills multi-task training of the multi-expert encoder and its span head."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sleuth.cli.common import console
from sleuth.errors import ConfigError


def parse_weights(pairs: list[str]) -> dict[str, float]:
    """``["retrieval=1", "span=0.2"]`` -> weights over the default ones."""
    from sleuth.systems.chain_of_skills.training import DEFAULT_WEIGHTS

    weights = dict(DEFAULT_WEIGHTS)
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name.strip() not in weights:
            raise ConfigError(f"--weight: unknown skill '{name.strip()}' (known: {', '.join(weights)})")
        try:
            weights[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--weight expects SKILL=NUMBER (e.g. span=0.2), got '{pair}'") from None
    return weights


def train_cos_command(
    hotpotqa: Path | None = typer.Option(None, help="HotpotQA training questions (e.g. hotpot_train_100.json)."),
    hotpotqa_corpus: Path | None = typer.Option(None, help="Its title -> sentences corpus (default: the "
                                                                  "questions' context paragraphs)."),
    musique: Path | None = typer.Option(None, help="MuSiQue training questions (e.g. musique_train_100.json)."),
    musique_corpus: Path | None = typer.Option(None, help="Its paragraph corpus (default: the questions' own "
                                                              "paragraphs)."),
    nq_questions: Path | None = typer.Option(None, help="NQ questions JSONL with gold_passage (optional)."),
    nq_corpus: Path | None = typer.Option(None, help="NQ corpus JSONL (with --nq-questions)."),
    wikipedia: Path | None = typer.Option(None, help="MediaWiki XML dump (.xml/.bz2) for self-supervised examples: "
                                                        "random crops, hyperlinks, expanded queries."),
    wikipedia_max_articles: int | None = typer.Option(None, help="Read only the first N articles of --wikipedia."),
    out: Path = typer.Option(..., help="Output model directory (model, span head, cos_training.json)."),
    model: str = typer.Option("minilm", help="Start from 'minilm' (fresh experts) or a saved multi-expert model."),
    variant: str = typer.Option("attention", help="Expert variant of a fresh model: attention | ffn | none."),
    max_steps: int = typer.Option(100, help="Training steps (one skill per batch)."),
    batch_size: int = typer.Option(8, help="Examples per batch."),
    lr: float = typer.Option(2e-5, help="Learning rate (AdamW, linear warm-up and decay)."),
    max_length: int | None = typer.Option(None, help="Token limit while training (default: the model's)."),
    negatives: int = typer.Option(1, help="Hard negatives per retrieval / expanded / NQ example."),
    sampling: str = typer.Option("weighted", help="weighted | round-robin skill choice per batch."),
    weight: list[str] = typer.Option([], help="SKILL=WEIGHT for weighted sampling (defaults: retrieval, expanded, "
                                              "reranking 1; linking 0.8; span 0.2)."),
    seed: int = typer.Option(13, help="Seed of sampling, negatives and the span head."),
    device: str = typer.Option("cpu", help="torch device: cpu or cuda."),
) -> None:
    """Multi-task training: single retrieval, expanded queries, reranking, entity linking and span proposal."""
    from sleuth.systems.chain_of_skills.model import MultiExpertConfig, MultiExpertEncoder
    from sleuth.systems.chain_of_skills.span_head import SpanProposalHead, load_span_head
    from sleuth.systems.chain_of_skills.training import CosTrainConfig, train_cos
    from sleuth.systems.chain_of_skills.training_data import (
        counts,
        hotpotqa_examples,
        load_hotpotqa,
        load_musique,
        merge,
        musique_examples,
        nq_examples,
    )

    if (nq_questions is None) != (nq_corpus is None):
        raise ConfigError("give both --nq-questions and --nq-corpus, or neither")
    if hotpotqa is None and musique is None and nq_questions is None and wikipedia is None:
        raise ConfigError("no training data: give --hotpotqa, --musique, --wikipedia and/or --nq-questions with "
                          "--nq-corpus")
    if wikipedia_max_articles is not None and (wikipedia is None or wikipedia_max_articles < 1):
        raise ConfigError("--wikipedia-max-articles needs --wikipedia and a number >= 1")
    for option, given in (("--hotpotqa-corpus", hotpotqa_corpus and not hotpotqa),
                          ("--musique-corpus", musique_corpus and not musique)):
        if given:
            raise ConfigError(f"{option} needs its questions file ({option.removesuffix('-corpus')})")
    for path in (hotpotqa, hotpotqa_corpus, musique, musique_corpus, nq_questions, nq_corpus, wikipedia):
        if path is not None and not path.is_file():
            raise ConfigError(f"training data file not found: {path}")
    parts = []
    if hotpotqa is not None:
        questions, corpus = load_hotpotqa(hotpotqa, hotpotqa_corpus)
        parts.append(hotpotqa_examples(questions, corpus, negatives, seed))
    if musique is not None:
        questions, paragraphs = load_musique(musique, musique_corpus)
        parts.append(musique_examples(questions, paragraphs, negatives, seed))
    if nq_questions is not None and nq_corpus is not None:
        parts.append(nq_examples(nq_questions, nq_corpus, negatives, seed=seed))
    if wikipedia is not None:
        from sleuth.systems.chain_of_skills.wiki_data import load_wikipedia, wikipedia_examples

        articles, redirects = load_wikipedia(wikipedia, wikipedia_max_articles)
        parts.append(wikipedia_examples(articles, negatives, seed, redirects=redirects))
    data = merge(*parts)
    console.print(f"examples: {counts(data)}")
    if model == "minilm":
        config = MultiExpertConfig.no_expert() if variant == "none" else MultiExpertConfig(variant=variant)
        encoder = MultiExpertEncoder.from_backbone("minilm", config, device=device)
        head = SpanProposalHead(encoder.dim, seed=seed)
    else:
        encoder = MultiExpertEncoder.load(model, device=device)
        head = load_span_head(model, encoder.dim, device) or SpanProposalHead(encoder.dim, seed=seed)
    settings = CosTrainConfig(lr=lr, batch_size=batch_size, max_steps=max_steps, max_length=max_length,
                              sampling=sampling, weights=parse_weights(weight), seed=seed, device=device)
    result = train_cos(encoder, head, data, out, settings, log=console.print)
    first, last = result.losses[:10], result.losses[-10:]
    console.print(f"wrote {out} ({len(result.losses)} steps, {result.seconds:.1f} s)")
    print(json.dumps({"steps": len(result.losses), "first_mean_loss": round(sum(first) / len(first), 4),
                      "last_mean_loss": round(sum(last) / len(last), 4)}))

