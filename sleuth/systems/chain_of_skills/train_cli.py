"""`sleuth cos train`: Chain-of-Skills multi-task training of the multi-expert encoder and its span head."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from sleuth.cli.common import DEVICE, console, non_negative_number, positive_number, refuse_given
from sleuth.cli.option_groups import with_option_groups
from sleuth.errors import ConfigError, InputError
from sleuth.overwrite import refuse_overwriting_inputs
from sleuth.train.card import command_line, hardware_line


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


def parse_routes(pairs: list[str]) -> dict[str, tuple[int, int]]:
    """``["reranking=6,6"]`` -> the paper's routing table (``skills.DEFAULT_ROUTES``) with those skills re-routed
    (query expert, context expert)."""
    from sleuth.systems.chain_of_skills.skills import DEFAULT_ROUTES

    routes = dict(DEFAULT_ROUTES)
    for pair in pairs:
        name, _, value = pair.partition("=")
        if name.strip() not in routes:
            raise ConfigError(f"--route: unknown skill '{name.strip()}' (known: {', '.join(routes)})")
        ids = value.split(",")
        if len(ids) != 2 or not all(i.strip().isdigit() for i in ids):
            raise ConfigError(f"--route expects SKILL=QUERY_EXPERT,CONTEXT_EXPERT (e.g. reranking=6,6), got '{pair}'")
        routes[name.strip()] = (int(ids[0]), int(ids[1]))
    return routes


def model_card(result, data_counts: dict, settings, encoder, command: str) -> str:
    """The README.md written beside a trained model: data, schedule, seed, hardware, speed, the exact command."""
    steps = dict.fromkeys(result.skills, 0)
    for skill in result.skills:
        steps[skill] += 1
    lora = encoder.config.lora
    arch = (f"LoRA experts (rank {lora.rank}, alpha {lora.alpha:g}, on {', '.join(lora.targets)} of layers "
            f"{', '.join(map(str, encoder.config.expert_layers))}; experts without deltas: "
            f"{', '.join(map(str, lora.frozen_experts)) or 'none'}) over the frozen backbone"
            if lora else f"{encoder.config.variant} experts in layers "
                         f"{', '.join(map(str, encoder.config.expert_layers or ())) or '(none)'}")
    lines = [
        "# Chain-of-Skills model (multi-expert MiniLM)", "",
        f"Backbone: `{encoder.backbone}`; {arch}; {encoder.config.num_experts} experts, pooling "
        f"{encoder.config.pooling}, routing {json.dumps(encoder.config.routing.to_dict())}.", "",
        "## Data (examples per skill and source)", "",
        *[f"- {skill}: " + ", ".join(f"{source} {n}" for source, n in sorted(sources.items()))
          for skill, sources in data_counts.items()], "",
        "## Training", "",
        f"- steps: {len(result.losses)} of batch {settings.batch_size} (schedule {settings.max_steps} steps, "
        f"sampling {settings.sampling}, weights {settings.weights}, source temperature {settings.source_temperature}); "
        f"batches per skill {steps}",
        f"- lr {settings.lr}, warm-up {settings.warmup_ratio}, max length {settings.max_length}, reranking negatives "
        f"{settings.rerank_negatives}, reranker trained on the chain's score: {settings.aligned_rerank}, "
        f"anchored link scores: {settings.anchored_links}, "
        f"seed {settings.seed}",
        f"- time: {result.seconds:.0f} s; {result.examples_per_second():.2f} training examples/s "
        f"({result.examples_per_cpu_second():.2f} per CPU second of the process)",
        f"- hardware: {hardware_line(threads=settings.threads)}",
        "", "## Reproduce", "", "```bash", command, "```", "",
    ]
    return "\n".join(lines)


@dataclass
class TrainingData:
    """Where the training examples come from (at least one source)."""

    help_panel = "Training data"
    hotpotqa: list[Path] = typer.Option([], help="HotpotQA training questions in the distractor format "
                                                 "(hotpot_train_100.json, hotpot_train_more.json; repeatable).")
    hotpotqa_corpus: list[Path] = typer.Option([], help="Title -> sentences corpora of --hotpotqa (repeatable; "
                                                        "titles they lack come from the questions' context "
                                                        "paragraphs, which suffice without one).")
    twowiki: list[Path] = typer.Option([], help="2WikiMultihopQA training questions, original layout with "
                                                "evidences (2wiki_train_more.json; repeatable).")
    musique: Path | None = typer.Option(None, help="MuSiQue training questions (e.g. musique_train_100.json).")
    musique_corpus: Path | None = typer.Option(None, help="Its paragraph corpus (default: the questions' own "
                                                              "paragraphs).")
    nq_questions: Path | None = typer.Option(None, help="NQ questions JSONL with gold_passage (optional).")
    nq_corpus: Path | None = typer.Option(None, help="NQ corpus JSONL (with --nq-questions).")
    nq_split: str | None = typer.Option(None, help="NQ questions used: train (the default: the seeded 80 % of "
                                                    "`sleuth dhr`), dev, all.")
    squad: Path | None = typer.Option(None, help="SQuAD v1.1/v2.0 JSON: single retrieval and reranking examples.")
    ottqa: Path | None = typer.Option(None, help="OTT-QA folder with tables/ and passages/: table-to-passage links "
                                                 "(linking, span proposal).")
    ottqa_questions: Path | None = typer.Option(None, help="OTT-QA traced questions (dev.traced.json): expanded "
                                                           "queries from a table row to the answer passage.")
    wikipedia: list[Path] = typer.Option([], help="MediaWiki XML dump (.xml/.bz2) for self-supervised examples: "
                                                  "random crops, hyperlinks, expanded queries (repeatable).")
    wikipedia_max_articles: int | None = typer.Option(None, min=1,
                                                      help="Read only the first N articles of --wikipedia.")


@dataclass
class ModelOptions:
    """The model trained: a fresh multi-expert MiniLM (its experts and pooling) or a saved one."""

    help_panel = "Model"
    model: str = typer.Option("minilm", help="Start from 'minilm' (fresh experts), 'cos-minilm-lora' (the shipped "
                                             "model) or a saved multi-expert model directory.")
    variant: str = typer.Option("attention", help="Expert variant of a fresh model: attention | ffn | none | lora "
                                                  "(LoRA experts over the frozen backbone, saved as a small "
                                                  "adapter).")
    expert_layer: list[int] = typer.Option([], help="Layers holding experts (repeatable; default: every second "
                                                    "layer, every layer for lora).")
    lora_rank: int = typer.Option(8, min=1, help="lora: rank of each expert's deltas.")
    lora_alpha: float = typer.Option(16.0, callback=positive_number,
                                     help="lora: scaling numerator (delta = alpha / rank * B A).")
    lora_target: list[str] = typer.Option([], help="lora: linear layers adapted (repeatable: query, key, value, "
                                                   "attention_output, intermediate, output; default the first four).")
    frozen_expert: list[int] = typer.Option([], help="lora: experts without deltas, read the backbone unchanged "
                                                     "(repeatable; their context vectors are cached in training).")
    pooling: str | None = typer.Option(None, help="Pooling of a fresh model: cls (paper) or mean (MiniLM's own).")
    route: list[str] = typer.Option([], help="SKILL=Q,C: a fresh model reads the skill's queries through expert Q "
                                             "and its contexts through expert C instead of the paper's table "
                                             "(repeatable; ids past 5 add experts: reranking=6,6 gives the "
                                             "reranker an expert it shares with no other skill).")


@dataclass
class TrainingOptions:
    """The schedule and losses of the training run."""

    help_panel = "Training"
    max_steps: int = typer.Option(100, min=1, help="Training steps (one skill per batch).")
    time_budget: float | None = typer.Option(None, "--max-minutes", "--time-budget", callback=positive_number,
                                             help="Stop after this many minutes of training (and save).")
    checkpoint_at: list[int] = typer.Option([], help="Also save the model after this many steps, in "
                                                     "OUT-checkpoints/step-N (repeatable; for a curve over steps).")
    batch_size: int = typer.Option(8, min=1, help="Examples per batch.")
    lr: float = typer.Option(2e-5, callback=positive_number, help="Learning rate (AdamW, linear warm-up and decay).")
    max_length: int | None = typer.Option(None, min=1, help="Token limit while training (default: the model's).")
    negatives: int = typer.Option(1, min=0, help="Hard negatives per retrieval / expanded / linking example.")
    rerank_negatives: int = typer.Option(3, min=0, help="Hard negatives per reranking example (sampled per batch).")
    sampling: str = typer.Option("interleaved", help="Skill per batch: interleaved (each skill its exact share) | "
                                                     "weighted (random) | round-robin.")
    weight: list[str] = typer.Option([], help="SKILL=WEIGHT for the skill schedule (defaults: retrieval, expanded, "
                                              "reranking 1; linking 0.8; span 0.5).")
    source_temperature: float = typer.Option(0.5, callback=non_negative_number,
                                             help="A source's share of its skill's batches ~ examples ** T.")
    aligned_rerank: bool = typer.Option(True, help="Train the reranker on the chain's score (retrieval + 1.5 x "
                                                   "rerank at hop 1, expanded + rerank at hop 2), not alone.")
    anchored_links: bool = typer.Option(True, help="Linking: also a binary loss putting unrelated entities' scores "
                                                   "below 0 (eq. 6 scales link scores by a ratio).")
    bucket: bool = typer.Option(True, help="Length-bucketed batches.")
    cache_context: bool = typer.Option(True, help="Cache the vectors of frozen context experts.")
    threads: int | None = typer.Option(None, min=1, help="Torch CPU threads (1 is fastest on a busy shared CPU).")
    seed: int = typer.Option(13, help="Seed of sampling, negatives and the span head.")


@with_option_groups
def train_cos_command(
    ctx: typer.Context,
    data: TrainingData,
    architecture: ModelOptions,
    training: TrainingOptions,
    out: Path = typer.Option(..., help="Output model directory (model, span head, cos_training.json, README.md)."),
    device: str = DEVICE,
) -> None:
    """Multi-task training: single retrieval, expanded queries, reranking, entity linking and span proposal."""
    from sleuth.systems.chain_of_skills.model import UNTRAINED, model_config
    from sleuth.systems.chain_of_skills.training import train_cos
    from sleuth.systems.chain_of_skills.training_data import counts
    from sleuth.train.checks import refuse_other_files

    check_options(data, architecture, training)
    refuse_inapplicable_architecture(ctx, architecture)
    settings = train_config(training, device)  # its checks (weights, checkpoints, ...) before the data is read
    started_from = None if architecture.model == UNTRAINED else architecture.model  # before: --out X --model X
    if started_from is not None:
        model_config(started_from)  # a model that is not there, named now (before: after reading all the data)
    refuse_overwriting_inputs(out, [*data.hotpotqa, *data.hotpotqa_corpus, *data.twowiki, *data.wikipedia,
                                    data.musique, data.musique_corpus, data.nq_questions, data.nq_corpus, data.squad,
                                    data.ottqa, data.ottqa_questions, started_from], folder=True)
    refuse_other_files(out)  # before: `--out ~` replaced the home folder whole with the model
    examples = training_examples(data, training.negatives, training.seed)
    console.print(f"examples: {counts(examples)}")
    encoder, head = initial_model(architecture, device, training.seed)
    data_counts: dict[str, dict[str, int]] = {skill: {} for skill in examples}
    for skill, skill_examples in examples.items():
        for example in skill_examples:
            data_counts[skill][example.source] = data_counts[skill].get(example.source, 0) + 1
    command = command_line()
    result = train_cos(encoder, head, examples, out, settings, log=console.print,
                       card=lambda r: model_card(r, data_counts, settings, encoder, command))
    first, last = result.losses[:10], result.losses[-10:]
    console.print(f"wrote {out} ({len(result.losses)} steps, {result.seconds:.1f} s, "
                  f"{result.examples_per_second():.2f} examples/s)")
    print(json.dumps({"steps": len(result.losses), "first_mean_loss": round(sum(first) / len(first), 4),
                      "last_mean_loss": round(sum(last) / len(last), 4)}))


def check_options(data: TrainingData, architecture: ModelOptions, training: TrainingOptions) -> None:
    """Every option checked together before any data or model loads."""
    from sleuth.systems.chain_of_skills.model import UNTRAINED
    from sleuth.systems.chain_of_skills.training_data import NQ_SPLITS

    if (data.nq_questions is None) != (data.nq_corpus is None):
        raise ConfigError("give both --nq-questions and --nq-corpus, or neither")
    if not any((data.hotpotqa, data.twowiki, data.musique, data.nq_questions, data.wikipedia, data.squad,
                data.ottqa)):
        raise ConfigError("no training data: give --hotpotqa, --twowiki, --musique, --squad, --ottqa, --wikipedia "
                          "and/or --nq-questions with --nq-corpus")
    if data.wikipedia_max_articles is not None and not data.wikipedia:  # the number: the option's min=1
        raise ConfigError("--wikipedia-max-articles needs --wikipedia")
    if data.nq_split is not None and data.nq_questions is None:
        raise ConfigError("--nq-split chooses the --nq-questions used: give --nq-questions and --nq-corpus")
    if data.nq_split is not None and data.nq_split not in NQ_SPLITS:
        raise ConfigError(f"--nq-split must be one of {', '.join(NQ_SPLITS)}, got '{data.nq_split}'")
    for option, given in (("--hotpotqa-corpus", data.hotpotqa_corpus and not data.hotpotqa),
                          ("--musique-corpus", data.musique_corpus and not data.musique),
                          ("--ottqa-questions", data.ottqa_questions and not data.ottqa)):
        if given:
            raise ConfigError(f"{option} needs {option.removesuffix('-corpus').removesuffix('-questions')}")
    for path in (*data.hotpotqa, *data.hotpotqa_corpus, *data.twowiki, data.musique, data.musique_corpus, data.nq_questions,
                 data.nq_corpus, data.squad, data.ottqa_questions, *data.wikipedia):
        if path is not None and not path.is_file():  # before: a folder was "not found" too
            raise ConfigError(f"training data file {'is a folder; give a file' if path.is_dir() else 'not found'}: "
                              f"{path}")
    if data.ottqa is not None and not data.ottqa.is_dir():
        raise ConfigError(f"OTT-QA folder not found: {data.ottqa}")
    if architecture.route and (architecture.model != "minilm" or architecture.variant == "none"):
        raise ConfigError("--route sets the routing of a fresh model with experts: it needs --model minilm and a "
                          "--variant other than none")
    parse_routes(architecture.route)
    if architecture.variant != "lora" and (architecture.lora_target or architecture.frozen_expert):
        raise ConfigError("--lora-target and --frozen-expert need --variant lora")
    if architecture.model == UNTRAINED:  # variant, pooling, expert layers, LoRA spec against MiniLM's layers
        fresh_config(architecture).resolved(backbone_layers(UNTRAINED))
        if architecture.variant == "lora":
            from sleuth.train.checks import check_lora_rank

            check_lora_rank(architecture.lora_rank, {"the backbone": UNTRAINED})


#: the options that shape a fresh model (a saved one keeps its own)
FRESH_MODEL_OPTIONS = ("variant", "expert_layer", "lora_rank", "lora_alpha", "lora_target", "frozen_expert",
                       "pooling", "route")


def refuse_inapplicable_architecture(ctx: typer.Context, architecture: ModelOptions) -> None:
    """Architecture options the command line gave that the run would ignore are a ConfigError: those of a fresh
    model beside a saved ``--model``, and LoRA's rank and alpha without ``--variant lora`` (before: both were
    ignored without a word)."""
    from sleuth.systems.chain_of_skills.model import UNTRAINED

    if architecture.model != UNTRAINED:
        refuse_given(ctx, FRESH_MODEL_OPTIONS, f"--model {architecture.model} trains a saved model further, with "
                                               "its own experts and pooling")
    if architecture.variant != "lora":
        refuse_given(ctx, ("lora_rank", "lora_alpha"), f"--variant {architecture.variant} has no LoRA experts")


def training_examples(data: TrainingData, negatives: int, seed: int) -> dict:
    """The examples of every given source, merged by skill."""
    from sleuth.systems.chain_of_skills.training_data import (
        hotpotqa_examples,
        load_hotpotqa,
        load_musique,
        merge,
        musique_examples,
        nq_examples,
        ottqa_examples,
        squad_examples,
        twowiki_examples,
    )

    for path in data.twowiki:  # before any data is read: a HotpotQA file would train as 2Wiki without evidences
        check_twowiki(path)
    for path in data.hotpotqa:  # and a 2Wiki file as HotpotQA, its bridge-comparison hops paired as HotpotQA's
        check_not_twowiki(path)
    parts = []
    if data.hotpotqa:
        questions, corpus = load_hotpotqa(data.hotpotqa, data.hotpotqa_corpus)
        parts.append(hotpotqa_examples(questions, corpus, negatives, seed))
    if data.twowiki:
        questions, corpus = load_hotpotqa(data.twowiki)
        parts.append(twowiki_examples(questions, corpus, negatives, seed))
    if data.musique is not None:
        questions, paragraphs = load_musique(data.musique, data.musique_corpus)
        parts.append(musique_examples(questions, paragraphs, negatives, seed))
    if data.nq_questions is not None and data.nq_corpus is not None:
        parts.append(nq_examples(data.nq_questions, data.nq_corpus, negatives, seed=seed,
                                 split=data.nq_split or "train"))
    if data.squad is not None:
        parts.append(squad_examples(data.squad, negatives, seed=seed))
    if data.ottqa is not None:
        parts.append(ottqa_examples(data.ottqa, data.ottqa_questions, negatives, seed=seed))
    for dump in data.wikipedia:
        from sleuth.systems.chain_of_skills.wiki_data import load_wikipedia, wikipedia_examples

        articles, redirects = load_wikipedia(dump, data.wikipedia_max_articles)
        parts.append(wikipedia_examples(articles, negatives, seed, redirects=redirects))
    return merge(*parts)


def initial_model(architecture: ModelOptions, device: str, seed: int) -> tuple[Any, Any]:
    """The encoder and span head training starts from: fresh experts over MiniLM, or a saved model's."""
    from sleuth.systems.chain_of_skills.model import UNTRAINED, MultiExpertEncoder, load_model, model_path
    from sleuth.systems.chain_of_skills.span_head import SpanProposalHead, load_span_head

    if architecture.model != UNTRAINED:
        encoder = load_model(architecture.model, device=device)
        head = load_span_head(model_path(architecture.model), encoder.dim, device)
        return encoder, head or SpanProposalHead(encoder.dim, seed=seed)
    import torch

    torch.manual_seed(seed)  # the experts' LoRA init (before: unseeded, so --seed did not repeat a run)
    encoder = MultiExpertEncoder.from_backbone("minilm", fresh_config(architecture), device=device)
    return encoder, SpanProposalHead(encoder.dim, seed=seed)


def fresh_config(architecture: ModelOptions) -> Any:
    """The ``MultiExpertConfig`` of a fresh model from the options (unchecked: ``resolved`` checks it)."""
    from sleuth.systems.chain_of_skills.experts import LoraSpec
    from sleuth.systems.chain_of_skills.model import MultiExpertConfig
    from sleuth.systems.chain_of_skills.skills import SkillRouting

    options: dict[str, Any] = {"pooling": architecture.pooling} if architecture.pooling else {}
    if architecture.route:
        routing = SkillRouting(parse_routes(architecture.route))
        options.update(routing=routing, num_experts=max(6, routing.max_expert + 1))
    if architecture.expert_layer:
        options["expert_layers"] = tuple(architecture.expert_layer)
    if architecture.variant == "none":
        return MultiExpertConfig.no_expert(**options)
    if architecture.variant == "lora":
        spec = LoraSpec(rank=architecture.lora_rank, alpha=architecture.lora_alpha,
                        frozen_experts=tuple(architecture.frozen_expert),
                        **({"targets": tuple(architecture.lora_target)} if architecture.lora_target else {}))
        return MultiExpertConfig(variant="lora", lora=spec, **options)
    return MultiExpertConfig(variant=architecture.variant, **options)


def backbone_layers(backbone: str) -> int:
    """The number of layers of a backbone, from its config.json (no weights load)."""
    from sleuth.models.registry import backbone_dir

    return int(json.loads((Path(backbone_dir(backbone)) / "config.json").read_text(encoding="utf-8"))
               ["num_hidden_layers"])


def check_twowiki(path: Path) -> None:
    """An InputError naming ``file[record]`` unless every question of ``path`` has 2WikiMultihopQA's ``evidences``
    (a HotpotQA file has none, and would train as 2Wiki with HotpotQA's hop orders)."""
    from sleuth.corpus.jsonfile import iter_json_records

    for where, record in iter_json_records(path):
        if "evidences" not in record:
            raise InputError("missing (a 2WikiMultihopQA file has evidences: is this a HotpotQA file? use "
                             "--hotpotqa)", path=where, field="evidences")


def check_not_twowiki(path: Path) -> None:
    """An InputError naming ``file[record]`` when a question of ``path`` (given as HotpotQA) has 2WikiMultihopQA's
    ``evidences``."""
    from sleuth.corpus.jsonfile import iter_json_records

    for where, record in iter_json_records(path):
        if isinstance(record, dict) and "evidences" in record:
            raise InputError("a 2WikiMultihopQA question (it has evidences): give this file as --twowiki",
                             path=where, field="evidences")


def train_config(training: TrainingOptions, device: str) -> Any:
    """The training run's settings (``CosTrainConfig``) from the options."""
    from sleuth.systems.chain_of_skills.training import CosTrainConfig

    return CosTrainConfig(lr=training.lr, batch_size=training.batch_size, max_steps=training.max_steps,
                          max_length=training.max_length, sampling=training.sampling,
                          weights=parse_weights(training.weight), seed=training.seed, device=device,
                          source_temperature=training.source_temperature,
                          rerank_negatives=training.rerank_negatives, aligned_rerank=training.aligned_rerank,
                          anchored_links=training.anchored_links, bucket=training.bucket,
                          cache_context=training.cache_context, threads=training.threads,
                          time_budget_s=training.time_budget * 60 if training.time_budget else None,
                          checkpoints=tuple(sorted(set(training.checkpoint_at)))).check()
