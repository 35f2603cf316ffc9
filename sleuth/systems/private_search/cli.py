"""`sleuth privacy obfuscate|search|eval`: DP query obfuscation, private search through an untrusted engine, and
the paper's evaluation (Faggioli & Ferro, ECIR 2024)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sleuth.cli.common import DEVICE, console, corpus_source, out, workspace
from sleuth.cli.corpus_options import Fields, Format
from sleuth.errors import ConfigError, QueryError
from sleuth.overwrite import refuse_overwriting_inputs
from sleuth.pipelines.sources import parse_fields
from sleuth.service.limits import MAX_OBFUSCATIONS
from sleuth.systems.private_search.embedding_readers import DEFAULT_EMBEDDINGS
from sleuth.systems.private_search.mechanisms import DEFAULT_EPSILON, DEFAULT_MECHANISM, check_epsilon
from sleuth.systems.private_search.obfuscator import OOV_POLICIES
from sleuth.systems.private_search.registry import (
    BASELINES,
    MECHANISMS,
    OBFUSCATORS,
    PARAMETER_USERS,
    build_obfuscators,
    corpus_words,
    local_bm25,
    mechanism_params,
    sample_fraction,
)

PAPER_SYSTEMS = ("vickrey-mahalanobis@10", "vickrey-mahalanobis@12.5", "vickrey-mahalanobis@15", "cmp@12.5",
                 "mahalanobis@12.5", "aed", "fsh")
EPSILON_HELP = (f"Privacy budget of the DP mechanisms (default {DEFAULT_EPSILON:g}: the 50-d GloVe equivalent of "
                "the paper's 12.5 with 300-d vectors; smaller hides more).")


def check_obfuscation_count(n: int) -> int:
    """``-n`` checked before anything loads: 1 to :data:`MAX_OBFUSCATIONS` (the cap ``POST /obfuscate`` shares)."""
    if not 1 <= n <= MAX_OBFUSCATIONS:
        raise ConfigError(f"-n must be a positive integer of at most {MAX_OBFUSCATIONS}, got {n}")
    return n


def chosen_epsilon(mechanism: str, epsilon: float | None) -> float | None:
    """The epsilon ``mechanism`` runs with: ``--epsilon`` (checked) or the default for a DP mechanism, none for a
    baseline (which refuses an ``--epsilon``)."""
    if mechanism in MECHANISMS:
        return check_epsilon(DEFAULT_EPSILON if epsilon is None else epsilon, "--epsilon")
    if epsilon is not None:
        raise ConfigError(f"{mechanism} is not a DP mechanism and takes no --epsilon")
    return None


#: obfuscate's options that serve only some mechanisms: what each is, and the mechanisms it serves
MECHANISM_OPTIONS = {"--corpus": ("FSH's local corpus", ("fsh",)),
                     "--embeddings": ("the DP mechanisms' word vectors", MECHANISMS),
                     "--vocabulary-from": ("the DP mechanisms' vocabulary", MECHANISMS),
                     "--oov": ("the out-of-vocabulary policy", (*MECHANISMS, "aed")),
                     "--lam": ("Mahalanobis' lambda", PARAMETER_USERS["lam"]),
                     "--t": ("Vickrey's t", PARAMETER_USERS["t"])}


def check_mechanism_options(mechanism: str, given: dict[str, object]) -> None:
    """An option given (not None) that ``mechanism`` does not use is refused, not ignored (before: a missing
    --corpus file passed with cmp, and --embeddings /nonexistent.txt with aed)."""
    for option, value in given.items():
        what, users = MECHANISM_OPTIONS[option]
        if value is not None and mechanism not in users:
            raise ConfigError(f"{option} ({what}) does not apply to --mechanism {mechanism}; it serves "
                              f"{', '.join(users)}")


#: ``--oov``, declared once (obfuscate, search, eval)
OOV = typer.Option(None, "--oov", help="Out-of-vocabulary words: drop (default), random, error or keep (sends them!); "
                                       "aed: keep (default: WordNet lacks them) or error.", show_default=False)


LAM = typer.Option(None, "--lam", min=0.0, max=1.0, show_default=False,
                   help="Mahalanobis lambda in [0, 1] (default 1, the paper's): how much of the vocabulary's "
                        "covariance shapes the noise, against the identity (0: CMP's round noise).")
T = typer.Option(None, "--t", min=0.0, max=1.0, show_default=False,
                 help="Vickrey t in [0, 1] (default 0.75): the weight of the nearest word against the second nearest "
                      "(higher: keeps the nearest more often).")


def refuse_unused_params(params: dict[str, float], names: list[str]) -> None:
    """A ``--lam`` or ``--t`` that none of the mechanisms run uses is refused, not ignored."""
    for key in params:
        if not set(PARAMETER_USERS[key]) & set(names):
            raise ConfigError(f"--{key} shapes {', '.join(PARAMETER_USERS[key])}, and none of them runs here "
                              f"({', '.join(names) or 'no mechanism'})")


def check_oov(oov: str | None) -> str | None:
    """``--oov``: None (each mechanism's default) or one of the policies."""
    if oov is not None and oov not in OOV_POLICIES:
        raise ConfigError(f"unknown out-of-vocabulary policy '{oov}' (known: {', '.join(OOV_POLICIES)})")
    return oov


def out_of_vocabulary(obfuscator: object, query: str) -> list[str]:
    """The words of ``query`` a DP mechanism's vocabulary lacks (what its OOV policy drops, replaces or keeps)."""
    from sleuth.systems.private_search.obfuscator import DPObfuscator, tokenize

    if not isinstance(obfuscator, DPObfuscator):
        return []
    return list(dict.fromkeys(word for word in tokenize(query) if obfuscator.embeddings.row(word) is None))


def obfuscate(
    query: str = typer.Argument(..., help="The query to obfuscate."),
    mechanism: str = typer.Option(DEFAULT_MECHANISM, help=f"One of {', '.join(OBFUSCATORS)}."),
    epsilon: float | None = typer.Option(None, help=EPSILON_HELP, show_default=False),
    n: int = typer.Option(20, "-n", help="How many obfuscated queries."),
    seed: int | None = typer.Option(None, min=0, help="Seed for reproducible output (default: OS randomness)."),
    oov: str | None = OOV,
    lam: float | None = LAM,
    t: float | None = T,
    embeddings: str | None = typer.Option(None, help=f"Word vectors of the DP mechanisms: {DEFAULT_EMBEDDINGS} "
                                                     "(default) or a .txt/.bin/.npy file.", show_default=False),
    vocabulary_from: Path | None = typer.Option(None, help="Restrict the vocabulary to this corpus's words."),
    corpus: Path | None = typer.Option(None, help="FSH: the local corpus searched for keyqueries."),
    fmt: Format = None,
    field: Fields = None,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print n obfuscated versions of a query (nothing is sent anywhere)."""
    if mechanism not in OBFUSCATORS:
        raise ConfigError(f"unknown mechanism '{mechanism}' (known: {', '.join(OBFUSCATORS)})")
    check_obfuscation_count(n)
    epsilon = chosen_epsilon(mechanism, epsilon)
    check_oov(oov)
    check_mechanism_options(mechanism, {"--corpus": corpus, "--embeddings": embeddings,
                                        "--vocabulary-from": vocabulary_from, "--oov": oov, "--lam": lam, "--t": t})
    if (fmt is not None or field) and vocabulary_from is None and corpus is None:  # before: no such options, though
        raise ConfigError("--format and --field read --vocabulary-from or --corpus, and neither is given")  # hinted
    fields = parse_fields(field)
    vocabulary = corpus_words(vocabulary_from, fmt, fields) if vocabulary_from else None
    fsh_index = local_bm25(str(corpus), None, fmt, 0, "--corpus", fields) if mechanism == "fsh" and corpus else None
    obfuscator = build_obfuscators([mechanism], embeddings or DEFAULT_EMBEDDINGS, vocabulary, oov,
                                   fsh_index, **mechanism_params(lam, t))[mechanism]
    queries = obfuscator.obfuscate_one(query, n, epsilon, seed)
    missing = out_of_vocabulary(obfuscator, query)
    if missing:  # before: dropped (or replaced, or kept) without a word, though it changes what the query asks
        policy = getattr(obfuscator, "oov", None)
        console.print(f"note: not in the vocabulary ({policy}): {', '.join(missing)}", highlight=False, soft_wrap=True)
    if as_json:
        shape = {key: value for key, value in obfuscator.describe().items() if key in ("lambda", "t")}
        print(json.dumps({"query": query, "mechanism": mechanism, "epsilon": epsilon, **shape, "obfuscated": queries}))
    else:
        for text in queries:
            print(text)


def private_search(
    query: str = typer.Argument(..., help="The query; it is never sent, only its obfuscations are."),
    engine: str = typer.Option(..., help="Base URL of a sleuth service (sleuth serve), e.g. http://127.0.0.1:8000."),
    engine_pipeline: str | None = typer.Option(None, help="Pipeline or index name on the service."),
    mechanism: str = typer.Option(DEFAULT_MECHANISM, help=f"One of {', '.join(MECHANISMS)} or aed."),
    epsilon: float | None = typer.Option(None, help=EPSILON_HELP, show_default=False),
    n: int = typer.Option(20, "-n", help="Obfuscated queries sent."),
    depth: int = typer.Option(100, min=1, help="Top hits pooled from each response."),
    k: int = typer.Option(10, "-k", min=1, help="How many results to show."),
    encoder: str = typer.Option("minilm-onnx-128", help="Local reranking encoder (default: int8 ONNX MiniLM, "
                                                        "128 tokens per passage)."),
    rerank_depth: int = typer.Option(50, min=0, help="Rerank the top N of the pool by local BM25 with the original query "
                                              "(0: the whole pool, slower)."),
    seed: int | None = typer.Option(None, min=0, help="Seed (default: OS randomness)."),
    oov: str | None = OOV,
    lam: float | None = LAM,
    t: float | None = T,
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    device: str = DEVICE,
) -> None:
    """Search a remote engine privately: send only obfuscated queries, rerank the pooled results locally.

    Obfuscations equal to the query (possible at a large epsilon) are withheld; when all are, nothing is sent and
    the command fails (exit 2) instead of printing an empty table."""
    from sleuth.cli.render import hits_json, hits_table
    from sleuth.corpus.model import Query
    from sleuth.stages.base import check_query
    from sleuth.systems.private_search.client import PrivateSearch, queries_to_send
    from sleuth.systems.private_search.exposure import Exposure
    from sleuth.systems.private_search.remote import RemoteEngine
    from sleuth.systems.private_search.rescore import local_reranker

    if mechanism not in MECHANISMS + ("aed",):
        raise ConfigError(f"unknown mechanism '{mechanism}' (known: {', '.join(MECHANISMS)}, aed)")
    check_obfuscation_count(n)
    epsilon = chosen_epsilon(mechanism, epsilon)
    check_mechanism_options(mechanism, {"--lam": lam, "--t": t})
    obfuscator = build_obfuscators([mechanism], DEFAULT_EMBEDDINGS, None, check_oov(oov),
                                   **mechanism_params(lam, t))[mechanism]
    if rerank_depth < 0:
        raise ConfigError(f"--rerank-depth must be 0 (the whole pool) or a positive integer, got {rerank_depth}")
    client = PrivateSearch(obfuscator, RemoteEngine.sleuth(engine, engine_pipeline),
                           local_reranker(encoder, depth=rerank_depth or None, device=device), n=n,
                           epsilon=epsilon, depth=depth, seed=seed)
    asked = Query("q1", query)
    check_query(asked)
    obfuscated = client.obfuscations([asked])
    if not queries_to_send(query, obfuscated[0], client.withhold_original):
        how = f"epsilon {epsilon:g} hides nothing for it; lower --epsilon" if epsilon else "rephrase it"
        raise QueryError(f"nothing was sent: all {n} obfuscations of the query are its own words ({how})")
    pools, sent = client.pools([asked], obfuscated)
    hits = client.rerank([asked], pools, sent).get(asked.id, [])[:k]
    exposure = Exposure.of(query, sent[asked.id])
    withheld = n - len(sent[asked.id])
    if as_json:  # with what was asked for: a logged run says how it was made
        print(json.dumps({**json.loads(hits_json(query, hits)), "obfuscation": client.described(sent[asked.id]),
                          "privacy": exposure.to_dict()}))
        return
    why = f" ({withheld} withheld: the query's own words, or repeated)" if withheld else ""
    console.print(f"sent {len(sent[asked.id])} of {n} obfuscated queries{why}, e.g. {'; '.join(sent[asked.id][:3])}",
                  highlight=False)
    out.print(hits_table(query, hits))
    console.print(f"privacy: {exposure.line()}", highlight=False, soft_wrap=True)


def parse_system(spec: str) -> tuple[str, float | None]:
    """``name@epsilon`` (DP mechanisms) or ``name`` (baselines and 'original')."""
    name, _, eps = spec.partition("@")
    if name not in OBFUSCATORS + ("original",):
        raise ConfigError(f"--system: unknown '{name}' (known: {', '.join(OBFUSCATORS)}, original)")
    if name in MECHANISMS and not eps:
        raise ConfigError(f"--system: {name} needs an epsilon, e.g. {name}@12.5")
    if name not in MECHANISMS and eps:
        raise ConfigError(f"--system: {name} takes no epsilon")
    try:
        value = float(eps) if eps else None
    except ValueError:
        raise ConfigError(f"--system: epsilon '{eps}' is not a number") from None
    # checked here, before any index is built (before: only when that system ran, after the earlier ones)
    return name, None if value is None else check_epsilon(value, f"--system {spec}: epsilon")


def eval_privacy(
    queries: Path | None = typer.Option(None, help="Queries (TREC topics or BEIR queries.jsonl); default: the "
                                                      "TREC DL'19 topics of the shared data."),
    corpus: Path | None = typer.Option(None, help="Corpus of the engine (with --qrels: effectiveness)."),
    qrels: Path | None = typer.Option(None, help="Relevance judgements (with --corpus: effectiveness)."),
    fmt: str | None = typer.Option(None, "--format", help="Corpus reader (default: detected)."),
    mechanism: list[str] | None = typer.Option(None, help="Table 1 mechanisms (repeatable; default all four)."),
    epsilon: list[float] | None = typer.Option(None, help="Table 1 epsilons (repeatable; default the paper's)."),
    baseline: list[str] | None = typer.Option(None, help="Table 1 baselines (repeatable): aed, fsh."),
    system: list[str] | None = typer.Option(None, help="Effectiveness systems NAME[@EPS] (repeatable; default: "
                                                          + ", ".join(PAPER_SYSTEMS) + ")."),
    n: int = typer.Option(20, "-n", help="Obfuscated queries per query."),
    depth: int = typer.Option(100, min=1, help="Top documents pooled per obfuscated query."),
    seed: int = typer.Option(0, min=0, help="Seed of the experiment."),
    oov: str | None = OOV,
    lam: float | None = LAM,
    t: float | None = T,
    vocabulary: str = typer.Option("all", help="DP vocabulary: all (alphabetic GloVe words) or collection "
                                               "(only words of --corpus)."),
    fsh_corpus: str | None = typer.Option(None, help="FSH's local corpus: a path, or sample:F (a seeded "
                                                        "fraction F of --corpus)."),
    table: bool = typer.Option(True, help="Compute Table 1 (similarity per mechanism and epsilon)."),
    paper: str = typer.Option("dl19", help="Paper column printed beside ours: dl19, robust04 or none."),
    encoder: str = typer.Option("minilm", help="Similarity encoder (the paper: MiniLM)."),
    reranker: str = typer.Option("minilm", help="Local reranking encoder (the engine is BM25)."),
    max_queries: int | None = typer.Option(None, min=1, help="Use only the first N queries."),
    out_dir: Path | None = typer.Option(None, "--out", help="Write tables (.md, .json) and radar plots here."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    device: str = DEVICE,
) -> None:
    """Measure obfuscation (1 - MiniLM similarity), pooled recall@100 and nDCG@10 after local reranking."""
    from sleuth.corpus.formats import read_queries
    from sleuth.models.registry import check_encoder_name, load_encoder
    from sleuth.paths import shared_data_dir
    from sleuth.systems.private_search.evaluation import run_effectiveness
    from sleuth.systems.private_search.paper_table import PAPER_EPSILONS
    from sleuth.systems.private_search.report import ReportOutput, effectiveness_report, table1_report

    if vocabulary not in ("all", "collection"):
        raise ConfigError(f"--vocabulary must be all or collection, got '{vocabulary}'")
    check_oov(oov)
    if paper not in ("dl19", "robust04", "none"):
        raise ConfigError(f"--paper must be dl19, robust04 or none, got '{paper}'")
    if (corpus is None) != (qrels is None):
        raise ConfigError("effectiveness needs both --corpus and --qrels")
    if corpus is None and (system or reranker != "minilm"):
        raise ConfigError(f"{'--system' if system else '--reranker'} is for the effectiveness part: give --corpus "
                          "and --qrels too")
    if corpus is None and not table:
        raise ConfigError("nothing to evaluate: --no-table and no --corpus/--qrels")
    if vocabulary == "collection" and corpus is None:  # before: silently every GloVe word
        raise ConfigError("--vocabulary collection keeps only the words of --corpus: give --corpus and --qrels")
    for option, given in (("--mechanism", mechanism), ("--epsilon", epsilon), ("--baseline", baseline)):
        if given and not table:  # before: ignored
            raise ConfigError(f"{option} chooses the rows of Table 1, which --no-table leaves out")
    if fsh_corpus is not None:
        sample_fraction(fsh_corpus)
    for name in (encoder, reranker):
        check_encoder_name(name)
    for value in epsilon or []:
        check_epsilon(value, "--epsilon")
    check_obfuscation_count(n)
    if out_dir is not None:
        refuse_overwriting_inputs(out_dir, [queries, corpus, qrels], folder=True)
    for name in mechanism or []:
        if name not in MECHANISMS:
            raise ConfigError(f"--mechanism: unknown '{name}' (known: {', '.join(MECHANISMS)})")
    for name in baseline or []:
        if name not in BASELINES:
            raise ConfigError(f"--baseline: unknown '{name}' (known: {', '.join(BASELINES)})")
    systems = [parse_system(s) for s in (system or PAPER_SYSTEMS)] if corpus is not None else []
    mechanisms = list(mechanism or MECHANISMS)
    epsilons = sorted(set(epsilon or PAPER_EPSILONS))  # Table 1's columns, and "grows with epsilon", in order
    table_names = [*mechanisms, *(baseline or [])] if table else []
    names = list(dict.fromkeys([*table_names, *(s for s, _ in systems if s != "original")]))
    refuse_unused_params(mechanism_params(lam, t), names)  # before any corpus is read
    if "fsh" in names and fsh_corpus is None:
        raise ConfigError("fsh needs --fsh-corpus (a local corpus path, or sample:0.5 of --corpus)")
    if "fsh" not in names and fsh_corpus is not None:  # before: ignored
        raise ConfigError("--fsh-corpus is FSH's local corpus, and no system or Table 1 baseline is fsh")
    queries_path = queries or shared_data_dir() / "trec-dl19" / "topics.dl19-passage.txt"
    query_list = read_queries(queries_path)
    if qrels is not None:
        from sleuth.corpus.qrels import read_qrels

        judged = read_qrels(qrels)
        query_list = [q for q in query_list if q.id in judged]
    query_list = query_list[:max_queries] if max_queries else query_list
    if not query_list:  # before: "no queries to evaluate", naming neither the file nor why
        raise ConfigError(f"--queries {queries_path}: no queries read"
                          + (f" that {qrels} judges" if qrels is not None else " (TREC topics or BEIR queries.jsonl; a "
                             "document file read as topics gives none)"))
    if qrels is not None:
        judged = {q.id: judged[q.id] for q in query_list}
    words = corpus_words(corpus, fmt) if vocabulary == "collection" and corpus is not None else None
    fsh_index = local_bm25(fsh_corpus, corpus, fmt, seed) if "fsh" in names and fsh_corpus is not None else None
    obfuscators = build_obfuscators(names, DEFAULT_EMBEDDINGS, words, oov, fsh_index, **mechanism_params(lam, t))
    similarity_encoder = load_encoder(encoder, device=device)
    payload: dict = {"queries": str(queries_path), "num_queries": len(query_list), "n": n, "seed": seed,
                     "obfuscators": {k: o.describe() for k, o in obfuscators.items()}}
    output = ReportOutput(None if as_json else out)
    if table:
        payload["table1"] = table1_report(output, [q.text for q in query_list],
                                          {k: obfuscators[k] for k in table_names}, epsilons, similarity_encoder,
                                          n, seed, paper)
    if systems and corpus is not None:  # systems are only chosen with a corpus
        ws = workspace(corpus_source(corpus, fmt), device, not as_json)
        results = run_effectiveness(systems, obfuscators, query_list, judged, ws, reranker, similarity_encoder,
                                    n=n, depth=depth, seed=seed)
        payload.update(effectiveness_report(output, results, corpus, reranker, out_dir))
    if out_dir is not None:
        from sleuth.io import atomic_write_text

        atomic_write_text(out_dir / "privacy_eval.md", "\n".join(output.markdown))
        atomic_write_text(out_dir / "privacy_eval.json", json.dumps(payload, indent=2, default=str) + "\n")
        if not as_json:
            console.print(f"wrote {out_dir / 'privacy_eval.md'} and .json")
    if as_json:
        print(json.dumps(payload, default=str))


privacy_app = typer.Typer(help="Private search with DP query obfuscation: obfuscate, search, evaluate.",
                          no_args_is_help=True)


def register(app: typer.Typer, train_app: typer.Typer) -> None:
    """``sleuth privacy obfuscate|search|eval``; the old top-level names stay as hidden aliases."""
    privacy_app.command("obfuscate")(obfuscate)
    privacy_app.command("search")(private_search)
    privacy_app.command("eval")(eval_privacy)
    app.add_typer(privacy_app, name="privacy")
    app.command("obfuscate", hidden=True)(obfuscate)
    app.command("private-search", hidden=True)(private_search)
    app.command("eval-privacy", hidden=True)(eval_privacy)
