"""`sleuth index`: build BM25 and/or dense indexes of a corpus."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from sleuth.cli.common import console, corpus_source, workspace
from sleuth.errors import ConfigError
from sleuth.index.bm25 import BM25Index, BM25Params
from sleuth.index.dense import DenseIndex
from sleuth.index.tokenize import Analyzer

KINDS = ("bm25", "dense", "all")


def index(
    corpus: Optional[Path] = typer.Argument(None, help="Corpus file or folder (default: the bundled SciFact)."),
    fmt: Optional[str] = typer.Option(None, "--format", help="Reader: beir, jsonl, trec, mediawiki, hotpotqa, "
                                                             "musique, quest, ottqa (default: detected)."),
    field: Optional[list[str]] = typer.Option(None, "--field", help="Field mapping for jsonl, e.g. text=body."),
    splitter: str = typer.Option("none", help="Passages: none (one per document), sections (DHR), window."),
    window_words: int = typer.Option(100, help="Words per passage for --splitter window."),
    kind: str = typer.Option("all", help="bm25, dense or all."),
    out: Optional[Path] = typer.Option(None, help="Output folder (default: sleuth's cache, reused by search/eval)."),
    encoder: str = typer.Option("minilm", help="Encoder: minilm, minilm-onnx or a model path."),
    factory: str = typer.Option("Flat", help="FAISS factory string: Flat, HNSW32, IVF1024,Flat, IVF1024,PQ48 ..."),
    method: str = typer.Option("lucene", help="BM25 variant: lucene, robertson, atire, bm25l, bm25+."),
    k1: float = typer.Option(0.9, help="BM25 k1."),
    b: float = typer.Option(0.4, help="BM25 b."),
    stemmer: str = typer.Option("english", help="Snowball stemmer language, or 'none'."),
    stopwords: str = typer.Option("en", help="Stopword list: en, or 'none'."),
    device: str = typer.Option("cpu", help="Encoder device: cpu, cuda, cuda:1, mps."),
) -> None:
    """Build indexes of a corpus (atomically: an existing index stays usable until the new one is complete)."""
    if kind not in KINDS:
        raise ConfigError(f"--kind must be one of {', '.join(KINDS)}, got '{kind}'")
    source = corpus_source(corpus, fmt, field, splitter, window_words)
    ws = workspace(source, device)
    params = BM25Params(method=method, k1=k1, b=b)
    analyzer = Analyzer(stopwords=None if stopwords == "none" else stopwords,
                        stemmer=None if stemmer == "none" else stemmer)
    for what in ("bm25", "dense"):
        if kind not in (what, "all"):
            continue
        start = time.perf_counter()
        if out is not None:
            target = out / what if kind == "all" else out
            if what == "bm25":
                built = BM25Index.build(source.passages(), target, params, analyzer, source.info())
            else:
                built = DenseIndex.build(source.passages(), ws.encoder(encoder), target, factory, source.info())
        else:
            if what == "bm25":
                built, target = ws.bm25(params, analyzer), ws.index_dir(ws.bm25_key(params, analyzer))
            else:
                built, target = ws.dense(encoder, factory), ws.index_dir(ws.dense_key(encoder, factory))
        console.print(f"[green]{what}[/green] index of {len(built):,} passages at {target} "
                      f"({time.perf_counter() - start:.1f} s)")


def register(app: typer.Typer) -> None:
    app.command()(index)
