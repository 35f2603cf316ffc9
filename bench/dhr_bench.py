"""DHR vs flat passage search: latency and vectors scored on a 1M-passage / 100k-document scale corpus, and top-20
answer accuracy of both on the real NQ dev questions.

Scale corpus (no model needed; vectors only): 100,000 random unit document vectors (384-d, MiniLM's size); each
document gets 1..19 passages (uniform, mean 10, so about 1M in all), each passage = its document's vector + Gaussian
noise (sigma ``--noise`` per dimension), renormalised; a query = a random passage's vector + the same noise,
renormalised. Flat search: FAISS IndexFlatIP over every passage (what sleuth's dense index does). DHR: FAISS
IndexFlatIP (or ``--document-factory``, e.g. HNSW32) over the documents (top k1) then the passages of those k1 documents gathered from the passage matrix and
scored with one matrix product (:func:`sleuth.systems.dhr.stages.rank_passages_in_documents`). Both run one query at a time
(the paper's per-question latency) and in a batch, alternating, after a warm-up, with ``--threads`` FAISS threads.

Accuracy check: on NQ (../shared/data/nq) the untrained MiniLM hierarchical index (cached by the workspace, built on
first use) answers the seeded dev split with DHR serial (k1=100, lambda=1) and with flat passage search (DHR-P: the
same passage vectors, every passage scored); top-20 accuracy of both is reported side by side.

    python -m bench.dhr_bench [--documents 100000] [--k1 100] [--queries 50] [--repeats 3] [--quick] [--no-nq]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import faiss
import numpy as np

from bench.common import Report, ResultTable, base_parser, bench_main, measure_interleaved, progress, ratio
from sleuth.index.dense import add_vectors, apply_search_params, make_faiss_index
from sleuth.index.docstore import DocStore
from sleuth.systems.dhr.index import HierarchicalIndex, passage_offsets
from sleuth.systems.dhr.stages import rank_passages_in_documents

NAME = "dhr_bench"
DIM = 384
MAX_PASSAGES_PER_DOCUMENT = 19


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (in place)."""
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def scale_corpus(documents: int, noise: float, seed: int, dim: int = DIM, factory: str = "Flat") -> HierarchicalIndex:
    """The clustered random corpus described in the module docstring, as an in-memory HierarchicalIndex."""
    rng = np.random.default_rng(seed)
    doc_vectors = unit_rows(rng.standard_normal((documents, dim), dtype=np.float32))
    counts = rng.integers(1, MAX_PASSAGES_PER_DOCUMENT + 1, size=documents)
    offsets = passage_offsets(counts)
    passages = np.repeat(doc_vectors, counts, axis=0)
    for start in range(0, len(passages), 1 << 18):  # add noise block-wise to bound the temporary memory
        block = passages[start:start + (1 << 18)]
        block += noise * rng.standard_normal(block.shape, dtype=np.float32)
        unit_rows(block)
    document_index = make_faiss_index(factory, dim)
    add_vectors(document_index, doc_vectors)
    doc_ids = [f"d{i}" for i in range(documents)]
    passage_ids = [f"p{i}" for i in range(len(passages))]
    owners = np.repeat(np.arange(documents), counts)
    empty_docs, empty_passages = [""] * documents, [""] * len(passages)
    return HierarchicalIndex(document_index, doc_vectors, passages, offsets,
                             DocStore(doc_ids, doc_ids, empty_docs, empty_docs),
                             DocStore(passage_ids, [doc_ids[o] for o in owners], empty_passages, empty_passages),
                             {"name": "random"}, {"name": "random"})


def make_queries(index: HierarchicalIndex, count: int, noise: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Query vectors near randomly chosen passages, and those passages' rows."""
    rng = np.random.default_rng(seed + 1)
    rows = rng.choice(len(index), size=count, replace=False)
    queries = np.asarray(index.passage_vectors[rows], dtype=np.float32).copy()
    queries += noise * rng.standard_normal(queries.shape, dtype=np.float32)
    return unit_rows(queries), rows


def dhr_search(index: HierarchicalIndex, queries: np.ndarray, k1: int, k2: int, lam: float = 1.0) -> np.ndarray:
    """DHR serial at the index level: FAISS top-k1 documents, then their passages by Eq. 3; top-k2 rows per query."""
    doc_rows, doc_scores = index.search_documents(queries, k1)
    return np.stack([rank_passages_in_documents(index, q, r, s, lam, k2)[0]
                     for q, r, s in zip(queries, doc_rows, doc_scores)])


def flat_search(flat: faiss.Index, queries: np.ndarray, k: int) -> np.ndarray:
    """FAISS exhaustive inner-product search over every passage."""
    return flat.search(queries, k)[1]


def one_by_one(search, queries: np.ndarray) -> list[np.ndarray]:
    """Run a search for each query separately (per-question latency, as the paper times it)."""
    return [search(queries[i:i + 1]) for i in range(len(queries))]


def agreement(a: Sequence[np.ndarray], b: Sequence[np.ndarray], k: int) -> float:
    """Mean overlap of the top-k rows of two searches over the same queries."""
    return float(np.mean([len(set(x.ravel()[:k]) & set(y.ravel()[:k])) / k for x, y in zip(a, b)]))


def nq_accuracy(k1: int, lam: float) -> dict:
    """Top-20 (and 1/5/100) answer accuracy of DHR serial vs flat passage search on the NQ dev split."""
    from sleuth.eval.answers import top_k_accuracy
    from sleuth.models.registry import load_encoder
    from sleuth.paths import shared_data_dir
    from sleuth.pipelines.workspace import CorpusSource, Workspace
    from sleuth.systems.dhr.builders import HierarchySource, hierarchical_index
    from sleuth.systems.dhr.cli import select_questions
    from sleuth.systems.dhr.stages import PassageRetrieve, dhr

    folder = shared_data_dir() / "nq"
    ws = Workspace(corpus=CorpusSource(folder / "corpus.jsonl"))
    index = hierarchical_index(ws, HierarchySource(separator=", "))
    encoder = load_encoder("minilm")
    questions = select_questions(folder / "questions.jsonl", "dev", 0.2, 13)
    answers = {q.id: q.metadata["answers"] for q in questions}
    ks = (1, 5, 20, 100)
    rows = {"DHR serial": dhr(index, k1=k1, k2=100, lam=lam, document_encoder=encoder, passage_encoder=encoder),
            "flat passage search (DHR-P)": PassageRetrieve(index, encoder, k=100)}
    return {"questions": len(questions), "documents": index.num_documents, "passages": len(index),
            "accuracy": {name: top_k_accuracy(stage.transform(questions), None, answers, ks)
                         for name, stage in rows.items()}}


def run(args: argparse.Namespace) -> Report:
    faiss.omp_set_num_threads(args.threads)
    documents = 10_000 if args.quick else args.documents
    progress(f"building the scale corpus: {documents:,} documents")
    index = scale_corpus(documents, args.noise, args.seed, factory=args.document_factory)
    apply_search_params(index.document_index, ef_search=args.ef_search)
    queries, targets = make_queries(index, args.queries, args.noise, args.seed)
    progress(f"{len(index):,} passages; flat FAISS index")
    flat = faiss.IndexFlatIP(DIM)
    flat.add(np.ascontiguousarray(index.passage_vectors))
    k1, k2 = args.k1, 20
    competitors = {
        "flat, one query at a time": lambda: one_by_one(lambda q: flat_search(flat, q, k2), queries),
        f"DHR k1={k1}, one query at a time": lambda: one_by_one(lambda q: dhr_search(index, q, k1, k2), queries),
        "flat, batch": lambda: flat_search(flat, queries, k2),
        f"DHR k1={k1}, batch": lambda: dhr_search(index, queries, k1, k2),
    }
    progress(f"timing {len(queries)} queries x{args.repeats} per competitor, alternating")
    timings = measure_interleaved(competitors, repeats=args.repeats)
    doc_rows, _ = index.search_documents(queries, k1)
    scored_passages = [len(index.passage_rows(r)) for r in doc_rows]
    # with a graph or IVF document index the documents visited are not counted (n/a); the passages still are
    dhr_scored = index.num_documents + float(np.mean(scored_passages)) if args.document_factory == "Flat" \
        else float("nan")
    names = list(competitors)
    table = ResultTable(f"Search over {len(index):,} passages in {documents:,} documents ({DIM}-d, document index "
                        f"{args.document_factory}), "
                        f"{len(queries)} queries, top-{k2}; median of {args.repeats}",
                        ["search", "ms / query", "vectors scored / query", "speed-up vs flat"])
    data = {"documents": documents, "passages": len(index), "dim": DIM, "k1": k1, "k2": k2, "noise": args.noise,
            "queries": len(queries), "mean_passages_in_k1_documents": float(np.mean(scored_passages)),
            "timings": {n: t.summary() for n, t in timings.items()}}
    for flat_name, dhr_name in ((names[0], names[1]), (names[2], names[3])):
        base = timings[flat_name].median
        table.add(flat_name, 1000 * base / len(queries), len(index), 1.0)
        table.add(dhr_name, 1000 * timings[dhr_name].median / len(queries), dhr_scored,
                  ratio(base, timings[dhr_name].median))
        data[f"speedup {dhr_name}"] = ratio(base, timings[dhr_name].median)
    flat_top = timings[names[0]].result
    dhr_top = timings[names[1]].result
    data["top20_overlap_dhr_vs_flat"] = agreement(dhr_top, flat_top, k2)
    data["source_passage_top1_flat"] = float(np.mean([r.ravel()[0] == t for r, t in zip(flat_top, targets)]))
    data["source_passage_top1_dhr"] = float(np.mean([r.ravel()[0] == t for r, t in zip(dhr_top, targets)]))
    tables = [table]
    notes = [f"scale corpus: {documents:,} random unit document vectors, 1..{MAX_PASSAGES_PER_DOCUMENT} passages each "
             f"(= document + N(0, {args.noise}^2) noise per dimension, renormalised), seed {args.seed}; queries = a "
             "random passage + the same noise",
             f"DHR scores {index.num_documents:,} documents + {np.mean(scored_passages):.0f} passages per query "
             f"(mean over the queries) against {len(index):,} for flat search",
             f"top-20 overlap of DHR with flat search on the scale corpus: {data['top20_overlap_dhr_vs_flat']:.3f}; "
             f"the query's source passage is ranked first by flat {data['source_passage_top1_flat']:.2f}, "
             f"by DHR {data['source_passage_top1_dhr']:.2f}"]
    if not args.no_nq:
        progress("NQ dev accuracy: DHR serial vs flat passage search (untrained MiniLM)")
        nq = nq_accuracy(k1, 1.0)
        data["nq"] = nq
        accuracy = ResultTable(f"NQ dev ({nq['questions']} questions, {nq['passages']:,} passages in "
                               f"{nq['documents']:,} documents), untrained MiniLM, answer accuracy %",
                               ["retriever", "Top-1", "Top-5", "Top-20", "Top-100"])
        for name, values in nq["accuracy"].items():
            accuracy.add(name, *(100 * values[f"Top-{k}"] for k in (1, 5, 20, 100)))
        tables.append(accuracy)
    return Report(tables=tables, data=data, notes=notes)


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser(__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000, help="documents of the scale corpus (--quick: 10k)")
    parser.add_argument("--k1", type=int, default=100, help="documents passed to the passage stage")
    parser.add_argument("--queries", type=int, default=50, help="queries timed")
    parser.add_argument("--noise", type=float, default=0.03, help="per-dimension noise of passages and queries")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--document-factory", default="Flat", help="FAISS factory of the document index, e.g. HNSW32")
    parser.add_argument("--ef-search", type=int, default=128, help="HNSW efSearch of the document index")
    parser.add_argument("--threads", type=int, default=1, help="FAISS/OpenMP threads for both searches (1: stable "
                                                               "timings on a shared machine)")
    parser.add_argument("--no-nq", action="store_true", help="skip the NQ accuracy check (it needs the MiniLM "
                                                             "hierarchical index of NQ, built on first use)")
    return parser


def main(argv: Sequence[str] | None = None) -> Report:
    return bench_main(NAME, build_parser(), run, argv)


if __name__ == "__main__":
    main()
