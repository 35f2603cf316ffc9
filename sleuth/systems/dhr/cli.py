"""`sleuth dhr train|tune|compare`: DHR's lambda search and its comparison table on QA questions (the rows and
how they are measured: :mod:`sleuth.systems.dhr.comparison`)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sleuth.cli import corpus_options
from sleuth.cli.common import DEVICE, console, corpus_source, non_negative_number, out, workspace
from sleuth.corpus.model import Query
from sleuth.errors import ConfigError, InputError
from sleuth.eval.answers import DEFAULT_KS
from sleuth.index.docstore import DocStore
from sleuth.overwrite import refuse_overwriting_inputs
from sleuth.pipelines.workspace import CorpusSource
from sleuth.stages.run import Run

dhr_app = typer.Typer(help="Dense hierarchical retrieval (DHR): train, tune lambda, compare with flat retrieval.",
                      no_args_is_help=True)
SPLITS = ("dev", "train", "all")
SEARCHES = ("lambda", "length-prior")  # what `sleuth dhr tune` chooses
PRIOR_DEPTH = 100  # passages per question re-ranked for each length prior


#: ``--max-queries`` of compare and tune: the first N questions of the chosen side
MAX_QUERIES = typer.Option(None, min=1, help="Only the first N questions of the chosen --split.")


def select_questions(path: Path, split: str, dev_fraction: float, seed: int,
                     max_queries: int | None = None) -> list[Query]:
    """The questions of one side of the seeded train/dev split (the same split ``sleuth dhr train`` uses), the first
    ``max_queries`` of them when given."""
    from sleuth.corpus.question_split import split_questions
    from sleuth.corpus.questions import read_questions

    if split not in SPLITS:
        raise ConfigError(f"unknown split '{split}' (known: {', '.join(SPLITS)})")
    questions = list(read_questions(path))
    if not questions:
        raise InputError("no questions", path=path)
    if split == "all":
        return questions[:max_queries]
    train, dev = split_questions(questions, dev_fraction, seed)
    chosen = dev if split == "dev" else train
    if not chosen:
        raise ConfigError(f"the {split} side of {len(questions)} questions split at --dev-fraction {dev_fraction} is "
                          f"empty; use --split all or more questions")
    return chosen[:max_queries]


def check_index_options(index: Path | None, grouping: str | None, document_encoder: str | None,
                        passage_encoder: str | None, factory: str | None, separator: str | None,
                        distractors: list[Path] | None = None) -> None:
    """Refuse, with ``--index``, the options given that only build an index (None: not given); before, they were
    ignored."""
    given = {"--grouping": grouping, "--document-encoder": document_encoder, "--passage-encoder": passage_encoder,
             "--factory": factory, "--separator": separator, "--distractors": distractors or None}
    named = [option for option, value in given.items() if value is not None]
    if index is not None and named:
        raise ConfigError(f"{', '.join(named)}: only used to build the hierarchical index, and --index {index} is "
                          f"built already; leave {'it' if len(named) == 1 else 'them'} out, or leave out --index")


def check_built_for(index: Path, built: dict, source: CorpusSource, corpus: Path, passages: DocStore) -> None:
    """Refuse an index whose manifest records another corpus fingerprint than ``source``'s (one that records none,
    e.g. built by an older `dhr train`, is not checked), unless the index's ``passages`` are the corpus's, id for id
    and text for text (a copied or touched file: the fingerprint reads paths and times): its rows would search
    other passages than BM25's and flat dense's."""
    fingerprint = source.fingerprint()
    if built.get("fingerprint") not in (None, fingerprint) and not same_passages(passages, source):
        raise ConfigError(f"--index {index} was built for the corpus {built.get('path')} (fingerprint "
                          f"{built['fingerprint']}), not --corpus {corpus} (fingerprint {fingerprint}: other or "
                          "changed files, or another --format or --splitter)")


def same_passages(store: DocStore, source: CorpusSource) -> bool:
    """Whether ``source`` reads as the passages of ``store``: the same ids with the same texts (any order)."""
    indexed = dict(zip(store.ids, store.texts))
    count = 0
    for passage in source.passages():
        if indexed.get(passage.id) != passage.text:
            return False
        count += 1
    return count == len(indexed)


class Setup:
    """The corpus workspace, the hierarchical index and its two encoders, shared by the rows of one command. Build
    options left None take :class:`HierarchySource`'s and :class:`VectorSearch`'s defaults; with ``index`` they must
    be None (:func:`check_index_options`), and the index must have been built for ``corpus``."""

    def __init__(self, corpus: Path, fmt: str | None, splitter: str, grouping: str | None, index: Path | None,
                 document_encoder: str | None, passage_encoder: str | None, factory: str | None,
                 separator: str | None, device: str, distractors: list[Path] | None = None,
                 field: list[str] | None = None):
        from sleuth.index.dense import VectorSearch
        from sleuth.models.registry import encoder_from_spec
        from sleuth.pipelines.mixed_source import with_distractors
        from sleuth.systems.dhr.builders import HierarchySource, hierarchical_index

        self.source = with_distractors(corpus_source(corpus, fmt, field, splitter), distractors)
        self.ws = workspace(self.source, device)
        build = {"document_encoder": document_encoder, "passage_encoder": passage_encoder, "separator": separator,
                 "grouping": grouping}
        self.index = hierarchical_index(self.ws, HierarchySource(str(index) if index else None,
                                                                 **{k: v for k, v in build.items() if v is not None}),
                                        VectorSearch(factory) if factory is not None else VectorSearch())
        if index is not None:
            check_built_for(index, self.index.manifest.corpus, self.source, corpus, self.index.passages)
        specs = self.index.document_encoder_spec, self.index.passage_encoder_spec
        self.document_encoder = encoder_from_spec(specs[0], device=device)
        self.passage_encoder = (self.document_encoder if specs[0]["name"] == specs[1]["name"]
                                else encoder_from_spec(specs[1], device=device))

    def document_texts(self) -> dict[str, str]:
        """Every document's passages joined: what document-level accuracy checks for an answer."""
        texts: dict[str, list[str]] = {}
        for doc_id, text in zip(self.index.passages.doc_ids, self.index.passages.texts):
            texts.setdefault(doc_id, []).append(text)
        return {doc_id: "\n".join(parts) for doc_id, parts in texts.items()}

    def with_documents(self, run: Run) -> Run:
        """Hits whose ``doc_id`` is the hierarchical index's document of that passage (flat indexes give each
        passage its own document id)."""
        store = self.index.passages
        for hits in run.values():
            for hit in hits:
                row = store.position(hit.id)
                if row is not None:
                    hit.doc_id = store.doc_ids[row]
        return run


# ---------------------------------------------------------------------------------------------------- options
CORPUS = typer.Option(..., help="Corpus file or folder (e.g. ../shared/data/nq/corpus.jsonl).")
QUESTIONS = typer.Option(..., help="Questions JSONL (id, question, answers), or a SQuAD file (its answerable "
                                       "questions).")
DISTRACTORS = typer.Option(None, "--distractors", help="Further corpus (repeatable) indexed with --corpus as "
                                                       "distractor documents.")
INDEX = typer.Option(None, help="A hierarchical index directory (e.g. <train out>/round2/index); default: build "
                                "one for the corpus with --document-encoder/--passage-encoder (cached).")


def compare_command(
    corpus: Path = CORPUS, questions: Path = QUESTIONS, index: Path | None = INDEX,
    fmt: str | None = typer.Option(None, "--format", help="Corpus reader (default: detected)."),
    field: corpus_options.Fields = None,
    splitter: str = typer.Option("none", help="none | sections."),
    grouping: str | None = typer.Option(None, help="auto | title | document (default auto; building only)."),
    document_encoder: str | None = typer.Option(None, help="Document encoder (name or path) when building the index "
                                                           "(default minilm)."),
    passage_encoder: str | None = typer.Option(None, help="Passage encoder (name or path) when building the index "
                                                          "(default minilm)."),
    flat_encoder: str = typer.Option("minilm", help="Encoder of the flat dense baseline row."),
    factory: str | None = typer.Option(None, help="FAISS factory string of the document index (default Flat; "
                                                  "building only)."),
    separator: str | None = typer.Option(None, help="Separator of hierarchical titles and document representations "
                                                    "(default ', '; building only)."),
    split: str = typer.Option("dev", help="dev | train | all: which questions (seeded split as in training)."),
    dev_fraction: float = typer.Option(0.2), seed: int = typer.Option(13),
    k1: int = typer.Option(100, min=1, help="Documents passed to the passage stage."),
    lam: float = typer.Option(1.0, "--lambda", callback=non_negative_number, help="Weight of the document score."),
    top_k: list[int] | None = typer.Option(None, "--top-k", min=1, help="Accuracy cut-offs (default 1 5 20 100)."),
    json_out: Path | None = typer.Option(None, "--json", help="Also write the rows as JSON here."),
    max_queries: int | None = MAX_QUERIES,
    device: str = DEVICE,
) -> None:
    """Passage- and document-level top-k answer accuracy of BM25, flat dense, DHR-D, DHR-P and DHR (w/o rerank,
    serial, parallel) on the same questions, each tested against BM25."""
    from sleuth.systems.dhr.comparison import compare

    check_index_options(index, grouping, document_encoder, passage_encoder, factory, separator)
    if json_out is not None:
        refuse_overwriting_inputs(json_out, [corpus, questions, index], option="--json", file=True)
    ks = sorted(set(top_k or DEFAULT_KS))
    chosen = select_questions(questions, split, dev_fraction, seed, max_queries)
    setup = Setup(corpus, fmt, splitter, grouping, index, document_encoder, passage_encoder, factory, separator,
                  device, field=field)
    comparison = compare(setup, chosen, k1, lam, ks, flat_encoder)
    about = (f"{len(chosen)} {split} questions; document encoder {setup.index.document_encoder_spec['name']}, "
             f"passage encoder {setup.index.passage_encoder_spec['name']}")
    out.print(comparison.passages.to_table(title=f"Passage level: {about}"))
    out.print(comparison.documents.to_table(title=f"Document level: {about}"))
    rows = comparison.rows()
    if json_out is not None:
        from sleuth.io import atomic_write_text

        payload = {"questions": len(chosen), "split": split, "k1": k1, "lambda": lam, "ks": ks,
                   "document_encoder": setup.index.document_encoder_spec, "index_documents": setup.index.num_documents,
                   "passage_encoder": setup.index.passage_encoder_spec, "index_passages": len(setup.index),
                   "rows": rows}
        atomic_write_text(json_out, json.dumps(payload, indent=1) + "\n")


def tune_command(
    corpus: Path = CORPUS, questions: Path = QUESTIONS, index: Path | None = INDEX,
    fmt: str | None = typer.Option(None, "--format"), field: corpus_options.Fields = None,
    splitter: str = typer.Option("none"),
    grouping: str | None = typer.Option(None), document_encoder: str | None = typer.Option(None),
    passage_encoder: str | None = typer.Option(None), factory: str | None = typer.Option(None),
    separator: str | None = typer.Option(None),
    distractors: list[Path] | None = DISTRACTORS,
    split: str = typer.Option("dev", help="Questions to tune on (dev by default)."),
    dev_fraction: float = typer.Option(0.2), seed: int = typer.Option(13),
    search: str = typer.Option("lambda", help="lambda: the paper's serial DHR lambda; length-prior: the length_prior "
                                               "of the default dhr score (parallel, document max, lambda 0) with its "
                                               "gate length_prior_below."),
    k1: int = typer.Option(100, min=1, help="Documents passed to the passage stage (search lambda)."),
    metric_k: int = typer.Option(20, "--metric-k", min=1, help="Maximise passage-level Top-k accuracy (the paper: 20)."),
    max_queries: int | None = MAX_QUERIES,
    device: str = DEVICE,
) -> None:
    """Grid-search serial DHR's lambda (0..2 step 0.1, then step 0.01 around the best), or the default dhr score's
    length prior (0..0.1 step 0.005, then 0.001) for each gate (the 5th..95th percentiles of the questions' best
    passage scores, and none), for passage-level Top-k accuracy on the chosen questions."""
    from sleuth.eval.answers import top_k_accuracy

    if search not in SEARCHES:
        raise ConfigError(f"unknown search '{search}' (known: {', '.join(SEARCHES)})")
    check_index_options(index, grouping, document_encoder, passage_encoder, factory, separator, distractors)
    chosen = select_questions(questions, split, dev_fraction, seed, max_queries)
    setup = Setup(corpus, fmt, splitter, grouping, index, document_encoder, passage_encoder, factory, separator,
                  device, distractors, field)
    name = f"Top-{metric_k}"
    if search == "lambda":
        from sleuth.systems.dhr.lambda_search import rerank_with_lambda, search_lambda

        answers = {q.id: q.metadata["answers"] for q in chosen}
        scored = lambda_candidates(setup, chosen, k1)
        result = search_lambda(lambda lam: top_k_accuracy(rerank_with_lambda(scored, lam, metric_k), None, answers,
                                                          [metric_k])[name])
        print_grids(result, name)
        print(json.dumps({"lambda": result.best, name: result.best_value, "questions": len(chosen), "search": search,
                          "k1": k1, "coarse": result.coarse, "fine": result.fine}))
        return
    from sleuth.systems.dhr.lambda_search import search_prior

    prior = search_prior(prior_candidates(setup, chosen, metric_k), metric_k)
    gates = "  ".join(f"{'none' if gate is None else f'{gate:g}'}:{beta:g}/{100 * value:.1f}"
                      for gate, (beta, value) in prior.gates.items())
    console.print(f"gates (length_prior_below: best length_prior/{name} %): {gates}")
    print_grids(prior.search, f"{name}, length_prior_below {prior.below}")
    print(json.dumps({"length_prior": prior.best, "length_prior_below": prior.below, name: prior.best_value,
                      "questions": len(chosen), "search": search, "coarse": prior.search.coarse,
                      "fine": prior.search.fine,
                      "gates": {str(gate): {"length_prior": beta, name: value}
                                for gate, (beta, value) in prior.gates.items()}}))


def print_grids(result, name: str) -> None:
    """The coarse and fine grids of a two-level search, one line each."""
    for level, values in (("coarse", result.coarse), ("fine", result.fine)):
        console.print(f"{level} grid ({name} %): " + "  ".join(f"{v:g}:{100 * m:.1f}" for v, m in values.items()))


def lambda_candidates(setup: Setup, questions: list[Query], k1: int) -> Run:
    """Every passage of the top-k1 documents with its passage and document scores (searched once)."""
    from sleuth.systems.dhr.stages import DocumentRetrieve, PassageInDocuments

    documents = DocumentRetrieve(setup.index, setup.document_encoder, k=k1).transform(questions)
    every = PassageInDocuments(setup.index, setup.passage_encoder, lam=0.0, k=len(setup.index))
    return every.transform(questions, documents)


def prior_candidates(setup: Setup, questions: list[Query], metric_k: int):
    """The default dhr score's top passages without a prior (its mode, document score, combination and lam, read
    from the built-in ``dhr`` pipeline; searched once) as :class:`PriorCandidates`, with whether each holds an
    answer. Before: lam 1, the score the default had until it became lam 0, so the prior it chose was for another
    ranking."""
    from sleuth.eval.answers import answer_matcher
    from sleuth.pipelines.config import parse_entry, read_config
    from sleuth.systems.dhr.lambda_search import PriorCandidates
    from sleuth.systems.dhr.stages import ParallelDHR

    _, default = parse_entry(read_config("dhr")["stages"][0], "dhr")
    stage = ParallelDHR(setup.index, setup.document_encoder, setup.passage_encoder, lam=default["lam"],
                        k=max(PRIOR_DEPTH, metric_k), document=default["document"], combine=default["combine"])
    # log(passages of the document), as the stage's own prior computes it (beta 1)
    log_lengths = dict(zip(setup.index.documents.ids, setup.index.length_prior(1.0).tolist()))
    matchers = {q.id: answer_matcher(q.metadata["answers"]) for q in questions}
    return PriorCandidates.from_run(stage.transform(questions), log_lengths,
                                    lambda qid, hit: matchers[qid](hit.text or ""), [q.id for q in questions])


def shard_command(
    index: Path = typer.Argument(..., help="A hierarchical index folder."),
    shards: int = typer.Option(..., "--shards", help="Number of shards (each holds whole documents)."),
    out_dir: Path = typer.Option(..., "--out", help="Where to write the sharded index folder: new, empty or a "
                                                    "sharded hierarchical index (replaced); anything else is refused."),
    force: bool = typer.Option(False, "--force", help="Replace --out even when it is not a sharded hierarchical "
                                                       "index."),
) -> None:
    """Cut a hierarchical index into shards of whole documents with near-equal passage counts (same vectors), served
    by `sleuth serve` and pipelines' `index:` keys, on Ray shard actors with --ray-address."""
    from sleuth.index.manifest import check_build_target, is_index_directory
    from sleuth.index.sharded import index_kind
    from sleuth.overwrite import clashing_input
    from sleuth.systems.dhr.index import HierarchicalIndex
    from sleuth.systems.dhr.sharded import SHARDED_HIERARCHICAL, shard_hierarchical

    check_build_target(out_dir, force, keep=[index])  # never the input index, a file or other files (unless --force)
    if clashing_input(index, [out_dir]) is not None:
        raise ConfigError(f"--out {out_dir}: inside the input index {index}; choose another --out")
    kind = index_kind(out_dir) if is_index_directory(out_dir.absolute()) else SHARDED_HIERARCHICAL
    if kind != SHARDED_HIERARCHICAL and not force:
        raise ConfigError(f"--out {out_dir}: is a '{kind}' index, not a '{SHARDED_HIERARCHICAL}' one; refusing to "
                          "replace it (pass --force to replace it, or choose another --out)")
    written = shard_hierarchical(HierarchicalIndex.load(index), out_dir, shards)
    out.print(f"{written}: {shards} shards of whole documents")


def register(app: typer.Typer, train_app: typer.Typer) -> None:
    """``sleuth dhr train|compare|tune|shard``, and the old ``sleuth dhr train`` as a hidden alias."""
    from sleuth.systems.dhr.train_cli import train_dhr_command

    dhr_app.command("train")(train_dhr_command)
    dhr_app.command("compare")(compare_command)
    dhr_app.command("tune")(tune_command)
    dhr_app.command("shard")(shard_command)
    app.add_typer(dhr_app, name="dhr")
    train_app.command("dhr", hidden=True)(train_dhr_command)
