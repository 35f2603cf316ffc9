"""`sleuth privacy obfuscate|search|eval`: DP query obfuscation, private search through an untrusted engine, and
the paper's evaluation (Faggioli & Ferro, ECIR 2024)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from sleuth.cli.common import console, out
from sleuth.errors import ConfigError, QueryError
from sleuth.models.device import check_device
from sleuth.service.limits import MAX_OBFUSCATIONS
from sleuth.systems.private_search.mechanisms import DEFAULT_EPSILON, DEFAULT_MECHANISM, check_epsilon
from sleuth.systems.private_search.obfuscator import OOV_POLICIES
from sleuth.systems.private_search.registry import BASELINES, MECHANISMS, OBFUSCATORS

PAPER_SYSTEMS = ("vickrey-mahalanobis@10", "vickrey-mahalanobis@12.5", "vickrey-mahalanobis@15", "cmp@12.5",
                 "mahalanobis@12.5", "aed", "fsh")
SAMPLE_PREFIX = "sample:"
EPSILON_HELP = (f"Privacy budget of the DP mechanisms (default {DEFAULT_EPSILON:g}: the 50-d GloVe equivalent of "
                "the paper's 12.5 with 300-d vectors; smaller hides more).")


def check_obfuscation_count(n: int) -> int:
    """``-n`` checked before anything loads: 1 to :data:`MAX_OBFUSCATIONS` (the cap ``POST /obfuscate`` shares)."""
    if not 1 <= n <= MAX_OBFUSCATIONS:
        raise ConfigError(f"-n must be a positive integer of at most {MAX_OBFUSCATIONS}, got {n}")
    return n


def corpus_words(path: Path, fmt: str | None = None) -> set[str]:
    """The lower-cased words of a corpus (titles and texts), for restricting the vocabulary to a collection."""
    from sleuth.corpus.formats import read_documents
    from sleuth.systems.private_search.obfuscator import tokenize

    words: set[str] = set()
    for doc in read_documents(path, fmt):
        words.update(tokenize(f"{doc.title} {doc.full_text()}"))
    return words


def local_bm25(spec: str, corpus: Path | None, fmt: str | None, seed: int):
    """FSH's local index: a corpus path, or ``sample:F`` = a seeded fraction F of the evaluation corpus."""
    import numpy as np

    from sleuth.index.bm25 import BM25Index
    from sleuth.pipelines.workspace import CorpusSource, Workspace

    if spec.startswith(SAMPLE_PREFIX):
        if corpus is None:
            raise ConfigError(f"--fsh-corpus {spec} samples the evaluation corpus: give --corpus")
        try:
            fraction = float(spec[len(SAMPLE_PREFIX):])
        except ValueError:
            raise ConfigError(f"--fsh-corpus: '{spec}' is not sample:FRACTION") from None
        passages = list(CorpusSource(corpus, fmt).passages())
        keep = np.random.default_rng(seed).random(len(passages)) < fraction
        return BM25Index.build([p for p, k in zip(passages, keep) if k], show_progress=False)
    path = Path(spec)
    if not path.exists():
        raise ConfigError(f"--fsh-corpus: {path} not found")
    return Workspace(CorpusSource(path), show_progress=False).bm25()


def build_obfuscators(names: list[str], embeddings: str, vocabulary: set[str] | None, oov: str,
                      fsh_index=None) -> dict:
    """Obfuscators by name, sharing one restricted embedding table."""
    from sleuth.systems.private_search.registry import load_vocabulary_table, make_obfuscator

    table = load_vocabulary_table(embeddings, vocabulary) if any(n in MECHANISMS for n in names) else None
    built = {}
    for name in names:
        if name in MECHANISMS:
            built[name] = make_obfuscator(name, embeddings=table, oov=oov)
        elif name == "fsh":
            built[name] = make_obfuscator(name, index=fsh_index)
        else:
            built[name] = make_obfuscator(name)
    return built


def obfuscate(
    query: str = typer.Argument(..., help="The query to obfuscate."),
    mechanism: str = typer.Option(DEFAULT_MECHANISM, help=f"One of {', '.join(OBFUSCATORS)}."),
    epsilon: float | None = typer.Option(None, help=EPSILON_HELP, show_default=False),
    n: int = typer.Option(20, "-n", help="How many obfuscated queries."),
    seed: int | None = typer.Option(None, help="Seed for reproducible output (default: OS randomness)."),
    oov: str = typer.Option("drop", help="Out-of-vocabulary words: drop, random, error or keep (sends them!)."),
    embeddings: str = typer.Option("glove-6b-50d", help="Word vectors: glove-6b-50d or a .txt/.bin/.npy file."),
    vocabulary_from: Path | None = typer.Option(None, help="Restrict the vocabulary to this corpus's words."),
    corpus: Path | None = typer.Option(None, help="FSH: the local corpus searched for keyqueries."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Print n obfuscated versions of a query (nothing is sent anywhere)."""
    if mechanism not in OBFUSCATORS:
        raise ConfigError(f"unknown mechanism '{mechanism}' (known: {', '.join(OBFUSCATORS)})")
    if mechanism in BASELINES and epsilon is not None:
        raise ConfigError(f"{mechanism} is not a DP mechanism and takes no --epsilon")
    check_obfuscation_count(n)
    if mechanism in MECHANISMS:
        epsilon = check_epsilon(DEFAULT_EPSILON if epsilon is None else epsilon)
    if oov not in OOV_POLICIES:
        raise ConfigError(f"unknown out-of-vocabulary policy '{oov}' (known: {', '.join(OOV_POLICIES)})")
    vocabulary = corpus_words(vocabulary_from) if vocabulary_from else None
    fsh_index = local_bm25(str(corpus), None, None, 0) if mechanism == "fsh" and corpus else None
    obfuscator = build_obfuscators([mechanism], embeddings, vocabulary, oov, fsh_index)[mechanism]
    queries = obfuscator.obfuscate_one(query, n, epsilon, seed)
    if as_json:
        print(json.dumps({"query": query, "mechanism": mechanism, "epsilon": epsilon, "obfuscated": queries}))
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
    depth: int = typer.Option(100, help="Top hits pooled from each response."),
    k: int = typer.Option(10, "-k", help="How many results to show."),
    encoder: str = typer.Option("minilm-onnx-128", help="Local reranking encoder (default: int8 ONNX MiniLM, "
                                                        "128 tokens per passage)."),
    rerank_depth: int = typer.Option(50, help="Rerank the top N of the pool by local BM25 with the original query "
                                              "(0: the whole pool, slower)."),
    seed: int | None = typer.Option(None, help="Seed (default: OS randomness)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    device: str = typer.Option("cpu", callback=check_device, help="Encoder device."),
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
    if mechanism in MECHANISMS:
        epsilon = check_epsilon(DEFAULT_EPSILON if epsilon is None else epsilon)
    elif epsilon is not None:
        raise ConfigError(f"{mechanism} is not a DP mechanism and takes no --epsilon")
    obfuscator = build_obfuscators([mechanism], "glove-6b-50d", None, "drop")[mechanism]
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
    if as_json:
        print(json.dumps({**json.loads(hits_json(query, hits)), "privacy": exposure.to_dict()}))
        return
    console.print(f"sent {len(sent[asked.id])} obfuscated queries, e.g. {'; '.join(sent[asked.id][:3])}",
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
        return name, float(eps) if eps else None
    except ValueError:
        raise ConfigError(f"--system: epsilon '{eps}' is not a number") from None


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
    depth: int = typer.Option(100, help="Top documents pooled per obfuscated query."),
    seed: int = typer.Option(0, help="Seed of the experiment."),
    vocabulary: str = typer.Option("all", help="DP vocabulary: all (alphabetic GloVe words) or collection "
                                               "(only words of --corpus)."),
    fsh_corpus: str | None = typer.Option(None, help="FSH's local corpus: a path, or sample:F (a seeded "
                                                        "fraction F of --corpus)."),
    table: bool = typer.Option(True, help="Compute Table 1 (similarity per mechanism and epsilon)."),
    paper: str = typer.Option("dl19", help="Paper column printed beside ours: dl19, robust04 or none."),
    encoder: str = typer.Option("minilm", help="Similarity encoder (the paper: MiniLM)."),
    reranker: str = typer.Option("minilm", help="Local reranking encoder (the engine is BM25)."),
    max_queries: int | None = typer.Option(None, help="Use only the first N queries."),
    out_dir: Path | None = typer.Option(None, "--out", help="Write tables (.md, .json) and radar plots here."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    device: str = typer.Option("cpu", callback=check_device, help="Encoder device."),
) -> None:
    """Measure obfuscation (1 - MiniLM similarity), pooled recall@100 and nDCG@10 after local reranking."""
    from sleuth.corpus.formats import read_queries
    from sleuth.models.registry import load_encoder
    from sleuth.paths import shared_data_dir
    from sleuth.systems.private_search.paper_table import PAPER_EPSILONS

    if vocabulary not in ("all", "collection"):
        raise ConfigError(f"--vocabulary must be all or collection, got '{vocabulary}'")
    if paper not in ("dl19", "robust04", "none"):
        raise ConfigError(f"--paper must be dl19, robust04 or none, got '{paper}'")
    if (corpus is None) != (qrels is None):
        raise ConfigError("effectiveness needs both --corpus and --qrels")
    for name in mechanism or []:
        if name not in MECHANISMS:
            raise ConfigError(f"--mechanism: unknown '{name}' (known: {', '.join(MECHANISMS)})")
    for name in baseline or []:
        if name not in BASELINES:
            raise ConfigError(f"--baseline: unknown '{name}' (known: {', '.join(BASELINES)})")
    systems = [parse_system(s) for s in (system or PAPER_SYSTEMS)] if corpus is not None else []
    queries_path = queries or shared_data_dir() / "trec-dl19" / "topics.dl19-passage.txt"
    query_list = read_queries(queries_path)
    if qrels is not None:
        from sleuth.corpus.qrels import read_qrels

        judged = read_qrels(qrels)
        query_list = [q for q in query_list if q.id in judged]
    query_list = query_list[:max_queries] if max_queries else query_list
    if not query_list:
        raise ConfigError("no queries to evaluate")
    if qrels is not None:
        judged = {q.id: judged[q.id] for q in query_list}
    mechanisms = list(mechanism or MECHANISMS)
    epsilons = list(epsilon or PAPER_EPSILONS)
    table_names = [*mechanisms, *(baseline or [])] if table else []
    names = list(dict.fromkeys([*table_names, *(s for s, _ in systems if s != "original")]))
    if "fsh" in names and fsh_corpus is None:
        raise ConfigError("fsh needs --fsh-corpus (a local corpus path, or sample:0.5 of --corpus)")
    words = corpus_words(corpus, fmt) if vocabulary == "collection" and corpus is not None else None
    fsh_index = local_bm25(fsh_corpus, corpus, fmt, seed) if "fsh" in names and fsh_corpus is not None else None
    obfuscators = build_obfuscators(names, "glove-6b-50d", words, "drop", fsh_index)
    similarity_encoder = load_encoder(encoder, device=device)
    payload: dict = {"queries": str(queries_path), "num_queries": len(query_list), "n": n, "seed": seed,
                     "obfuscators": {k: o.describe() for k, o in obfuscators.items()}}
    output = ReportOutput(quiet=as_json)
    if table:
        payload["table1"] = table1_report(output, [q.text for q in query_list],
                                          {k: obfuscators[k] for k in table_names}, epsilons, similarity_encoder,
                                          n, seed, paper)
    if systems and corpus is not None:  # systems are only chosen with a corpus
        results = run_effectiveness(systems, obfuscators, query_list, judged, corpus, fmt, reranker, device,
                                    similarity_encoder, n, depth, seed, not as_json)
        payload.update(effectiveness_report(output, results, corpus, reranker, out_dir))
    if out_dir is not None:
        from sleuth.io import atomic_write_text

        atomic_write_text(out_dir / "privacy_eval.md", "\n".join(output.markdown))
        atomic_write_text(out_dir / "privacy_eval.json", json.dumps(payload, indent=2, default=str) + "\n")
        if not as_json:
            console.print(f"wrote {out_dir / 'privacy_eval.md'} and .json")
    if as_json:
        print(json.dumps(payload, default=str))


class ReportOutput:
    """Tables for people (rich on stdout, unless ``quiet``) and for the report file (Markdown)."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.markdown: list[str] = []

    def table(self, title: str, header: list[str], rows: list[list[str]], note: str = "") -> None:
        from sleuth.systems.private_search import report

        self.markdown.append(report.markdown_table(title, header, rows, note))
        if not self.quiet:
            out.print(report.rich_table(title, header, rows, note or None))

    def bullets(self, heading: str, items: list[str]) -> None:
        self.markdown.append(f"{heading}\n\n" + "".join(f"- {item}\n" for item in items))
        if not self.quiet:
            out.print("\n".join([heading, *(f"  {item}" for item in items)]))


def table1_report(output: ReportOutput, queries: list[str], obfuscators: dict, epsilons: list[float], encoder,
                  n: int, seed: int, paper: str) -> dict:
    """Table 1 (ours beside the paper's), the paper's orderings, and the epsilon matching the paper's similarity."""
    from sleuth.systems.private_search import evaluation as peval
    from sleuth.systems.private_search import report
    from sleuth.systems.private_search.paper_table import paper_table1

    ours = peval.similarity_table(queries, obfuscators, epsilons, encoder, n=n, seed=seed,
                                  show_progress=not output.quiet)
    reference = paper_table1(paper) if paper != "none" else {}
    checks = peval.orderings(ours, epsilons)
    output.table(f"Table 1: mean MiniLM similarity of {n} obfuscations ({len(queries)} queries)",
                 *report.table1_rows(ours, reference, epsilons),
                 note=f"ours (paper {paper}, GloVe 300-d)" if reference else "")
    output.bullets("Orderings of the paper:", [f"{'holds' if ok else 'FAILS'}: {check}" for check, ok in checks.items()])
    dims = {o.embeddings.dim for o in obfuscators.values() if o.uses_epsilon}
    if reference and dims:
        output.table(f"Our epsilon (GloVe {dims.pop()}-d) reaching the paper's similarity at its epsilon (GloVe "
                     "300-d), ratio ours/paper", *report.equivalence_rows(ours, reference, epsilons))
    return {"ours": {k: {epsilon_key(e): v for e, v in row.items()} for k, row in ours.items()}, "paper": paper,
            "orderings": checks}


def effectiveness_report(output: ReportOutput, results: list, corpus: Path, reranker: str,
                         out_dir: Path | None) -> dict:
    """The effectiveness table and, with ``out_dir``, the radar plot (PNG and SVG)."""
    from sleuth.systems.private_search import report

    collection = corpus.parent.name if corpus.is_file() else corpus.name
    output.table(f"Private search on {collection}: engine BM25, local rerank {reranker} "
                 f"({results[0].queries if results else 0} queries)", *report.effectiveness_rows(results))
    part: dict = {"effectiveness": [r.to_dict() for r in results]}
    if out_dir is not None:
        from sleuth.systems.private_search.radar import radar_plot

        plotted = {f"{report.PAPER_NAMES.get(r.system, r.system)} {report.epsilon_label(r.epsilon)}"
                   .replace(" no DP", ""): {"ndcg10": r.ndcg10, "obfuscation": r.obfuscation,
                                            "pooled_recall": r.pooled_recall} for r in results}
        paths = radar_plot(plotted, out_dir / f"radar_{collection}",
                           title=f"{collection}: engine BM25, local rerank {reranker}")
        part["plots"] = [str(p) for p in paths]
    return part


def epsilon_key(epsilon: float | None) -> str:
    return "no_dp" if epsilon is None else f"{epsilon:g}"


def run_effectiveness(systems, obfuscators, queries, qrels, corpus, fmt, reranker, device, encoder, n, depth,
                      seed, progress):
    """Each system through the private-search client: engine = BM25 over the corpus (in process, standing in for
    the remote server), local reranking = dense rescoring with ``reranker`` vectors of the same documents."""
    from sleuth.cli.common import corpus_source, workspace
    from sleuth.progress import track
    from sleuth.stages.retrieve import BM25Retrieve, DenseRetrieve
    from sleuth.systems.private_search.evaluation import NoObfuscation, evaluate_system
    from sleuth.systems.private_search.remote import StageEngine

    ws = workspace(corpus_source(corpus, fmt), device, progress)
    engine = StageEngine(BM25Retrieve(ws.bm25(), k=depth), name="bm25")
    local = DenseRetrieve(ws.dense(reranker), encoder=ws.encoder(reranker), name=f"rerank-{reranker}")
    results = []
    for name, eps in track(systems, "privacy eval: systems", unit="systems", enabled=progress):
        obfuscator = NoObfuscation() if name == "original" else obfuscators[name]
        results.append(evaluate_system(name, obfuscator, eps, queries, qrels, engine, local, encoder, n=n,
                                       depth=depth, seed=seed))
    return results


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
