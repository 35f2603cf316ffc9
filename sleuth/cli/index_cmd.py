"""`sleuth index`: build BM25 and/or dense indexes of a corpus."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import typer

from sleuth.cli import corpus_options
from sleuth.cli.common import (
    DEVICE,
    console,
    corpus_source,
    note_bundled,
    positive_number,
    refuse_given,
    refuse_misplaced_corpus_options,
    workspace,
)
from sleuth.errors import ConfigError, SleuthError
from sleuth.folders import removed_if_failed
from sleuth.index.bm25 import BM25Index, BM25Params
from sleuth.index.commit import index_lock
from sleuth.index.dense import DenseIndex
from sleuth.index.manifest import check_build_target, is_index_directory
from sleuth.index.tokenize import Analyzer
from sleuth.pipelines.mixed_source import MixedCorpusSource, with_distractors
from sleuth.pipelines.workspace import CorpusSource, Workspace

KINDS = ("bm25", "dense", "all")
#: the options of one index kind (parameter names), refused when --kind builds none of that kind
BM25_OPTIONS = ("method", "k1", "b", "stemmer", "stopwords", "token_pattern")
DENSE_OPTIONS = ("encoder", "factory", "device")
RAY_OPTIONS = ("ray_workers", "actor_cpus")
KEEP_SHORT = "--splitter none or window keeps every document"


def index(
    ctx: typer.Context,
    corpus: Path | None = typer.Argument(None, help="Corpus file or folder (default: the bundled SciFact)."),
    fmt: corpus_options.Format = None,
    field: corpus_options.Fields = None,
    splitter: corpus_options.Splitter = "none",
    window_words: corpus_options.WindowWords = 100,
    distractors: corpus_options.Distractors = None,
    kind: str = typer.Option("all", help="bm25, dense or all."),
    out: Path | None = typer.Option(None, help="Output folder (default: sleuth's cache, reused by search/eval; an "
                                               "index the cache holds for the same corpus and parameters is copied). "
                                               "An existing sleuth index there is replaced; anything else is refused."),
    force: bool = typer.Option(False, "--force", help="Replace --out even when it is not a sleuth index, or holds "
                                                       "'sleuth update' changes (which the rebuild drops)."),
    encoder: str = typer.Option("minilm", help="Encoder: minilm, minilm-onnx or a model path."),
    factory: str = typer.Option("Flat", help="FAISS factory string: Flat, HNSW32, IVF1024,Flat, IVF1024,PQ48 ..."),
    method: str = typer.Option("lucene", help="BM25 variant: lucene, robertson, atire, bm25l, bm25+."),
    k1: float = typer.Option(0.9, help="BM25 k1."),
    b: float = typer.Option(0.4, help="BM25 b."),
    stemmer: str = typer.Option("english", help="Snowball stemmer language, or 'none'."),
    stopwords: str = typer.Option("en", help="Stopword list: en, or 'none'."),
    token_pattern: str = typer.Option(Analyzer.pattern, help="BM25 token regex; the default drops one-letter "
                                      "words ('vitamin d' -> vitamin); '(?u)\\b\\w+\\b' keeps them."),
    device: str = DEVICE,
    shards: int | None = typer.Option(None, min=1, help="Build a sharded index of N shards (global BM25 statistics, "
                                                    "exact merging); search/eval take its folder with --index."),
    ray_address: str | None = typer.Option(None, help="Build the shards on Ray: local (a bounded local Ray), "
                                                         "auto (the running cluster) or HOST:PORT. Needs sleuth\\[ray]."),  # \\[: rich escape
    ray_workers: int = typer.Option(2, min=1, help="Encoder actors for --ray-address (one model load each)."),
    actor_cpus: float = typer.Option(0.5, callback=positive_number,
                                     help="CPUs reserved per encoder actor (below 1 leaves CPU for reads)."),
) -> None:
    """Build indexes of a corpus (atomically: an existing index stays usable until the new one is complete).

    --out must be new, empty or a sleuth index (else --force); an index changed by `sleuth update` needs --force."""
    if kind not in KINDS:
        raise ConfigError(f"--kind must be one of {', '.join(KINDS)}, got '{kind}'")
    refuse_misplaced(ctx, kind, splitter, ray_address, shards)
    params = BM25Params(method=method, k1=k1, b=b)  # checked before anything is read or said
    analyzer = Analyzer(stopwords=None if stopwords == "none" else stopwords,
                        stemmer=None if stemmer == "none" else stemmer, pattern=token_pattern)
    source = with_distractors(corpus_source(corpus, fmt, field, splitter, window_words), distractors)
    inputs = [source.path, *(distractors or [])]
    with contextlib.ExitStack() as locks:  # held from the check to the commit: no update lands in between
        for _, target in selected_kinds(kind, out):
            if target is not None:
                check_build_target(target, force, keep=inputs)
                if is_index_directory(target.absolute()):
                    locks.enter_context(index_lock(target))
                    check_build_target(target, force, keep=inputs)  # again: an update may have just landed
        build(source, kind, out, device, params, analyzer, encoder, factory, shards, ray_address, ray_workers,
              actor_cpus)
    note_bundled(corpus, "indexed", "sleuth index")  # after the build: a refusal stays one line


def refuse_misplaced(ctx: typer.Context, kind: str, splitter: str, ray_address: str | None,
                     shards: int | None = None) -> None:
    """A ConfigError naming the options given for what this build does not do (rather than ignoring them)."""
    if ray_address is not None and (shards or 1) < 2:  # before a Ray session starts
        raise ConfigError(f"--ray-address builds the shards of a sharded index in parallel: give --shards 2 or more "
                          f"(got {shards or 1}; one shard builds in process: leave out --ray-address)")
    refuse_misplaced_corpus_options(ctx, splitter)
    if kind == "bm25":
        refuse_given(ctx, DENSE_OPTIONS, "--kind bm25 builds no dense index")
    if kind == "dense":
        refuse_given(ctx, BM25_OPTIONS, "--kind dense builds no BM25 index")
    if ray_address is None:
        refuse_given(ctx, RAY_OPTIONS, "without --ray-address nothing is built on Ray")


def check_ray_shards(shards: int, actor_cpus: float) -> None:
    """In a Ray session: as many shard writers of ``actor_cpus`` CPUs each (one per shard, built at once) as the
    cluster can hold, else a ConfigError (before: more writers than the cluster's CPUs waited for ever, without a
    word; and one shard, refused before the session, was a Ray Data traceback)."""
    from sleuth.scale.session import check_cluster_cpus

    check_cluster_cpus(shards, "--shards", actor_cpus, "--actor-cpus", " for the shard writers, built at once")


def note_left_out(source: CorpusSource) -> None:
    """Say on stderr how many documents the build just done left out, its splitter giving them no passage (counted
    by the source as it reads; not where Ray Data workers read the corpus, or an index is copied from the cache)."""
    if source.documents_left_out:
        left, read = source.documents_left_out, source.documents_read
        console.print(f"note: {left:,} of {read:,} documents {'gives' if left == 1 else 'give'} no passage with "
                      f"--splitter {source.splitter_name} ({source.splitter_drops()}) and "
                      f"{'is' if left == 1 else 'are'} left out ({KEEP_SHORT})", highlight=False, soft_wrap=True)
        source.documents_left_out = 0


def build(source: CorpusSource, kind: str, out: Path | None, device: str, params: BM25Params, analyzer: Analyzer,
          encoder: str, factory: str, shards: int | None, ray_address: str | None, ray_workers: int,
          actor_cpus: float) -> None:
    """Build the indexes ``index`` asks for (its targets checked and locked)."""
    ws = workspace(source, device)
    if shards is not None or ray_address is not None:
        build_sharded(source, ws, kind, out, 1 if shards is None else shards, params, analyzer, encoder, factory,
                      device, ray_address, ray_workers, actor_cpus)
        return
    for what, target in selected_kinds(kind, out):
        start = time.perf_counter()
        built: BM25Index | DenseIndex
        cached = ws.index_dir(ws.bm25_key(params, analyzer) if what == "bm25" else ws.dense_key(encoder, factory))
        if target is not None and copy_cached(cached, target):
            console.print(f"[green]{what}[/green] index copied from the cache {cached} to {target} "
                          f"({time.perf_counter() - start:.1f} s; same corpus and parameters, nothing re-encoded)")
            continue
        if target is not None:
            with removed_if_failed(target):
                if what == "bm25":
                    built = BM25Index.build(source.passages(), target, params, analyzer, source.info(),
                                            ws.show_progress)
                else:
                    built = DenseIndex.build(source.checked_passages(), ws.encoder(encoder), target, factory,
                                             source.info(), ws.show_progress)
        else:
            if what == "bm25":
                built, target = ws.bm25(params, analyzer), ws.index_dir(ws.bm25_key(params, analyzer))
            else:
                built, target = ws.dense(encoder, factory), ws.index_dir(ws.dense_key(encoder, factory))
        console.print(f"[green]{what}[/green] index of {len(built):,} passages at {target} "
                      f"({time.perf_counter() - start:.1f} s)")
        note_left_out(source)


def copy_cached(cached: Path, target: Path) -> bool:
    """Copy the index cached for the same corpus files and parameters to ``target`` (atomically; False when the
    cache holds none, or only one changed by ``sleuth update``, which a build from the corpus would not reproduce)."""
    import shutil

    from sleuth.index.manifest import CURRENT, MANIFEST, build_directory, read_manifest

    if not (cached / MANIFEST).is_file() or (cached / CURRENT).exists():
        return False
    try:
        read_manifest(cached)  # checksums verified: a damaged cache entry is rebuilt, not copied
    except SleuthError:
        return False
    with build_directory(target) as tmp:  # committed as a build is: a loadable index at target at every instant
        assert tmp is not None  # a target is given
        shutil.copytree(cached, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".update.lock"))
    return True


def selected_kinds(kind: str, out: Path | None) -> Iterator[tuple[str, Path | None]]:
    """The index kinds ``--kind`` asks for, each with its output folder (None: sleuth's cache)."""
    for what in ("bm25", "dense"):
        if kind in (what, "all"):
            yield what, None if out is None else (out / what if kind == "all" else out)


def build_sharded(source: CorpusSource, ws: Workspace, kind: str, out: Path | None, shards: int,
                  params: BM25Params, analyzer: Analyzer, encoder: str, factory: str, device: str,
                  ray_address: str | None, ray_workers: int, actor_cpus: float) -> None:
    """``--shards`` / ``--ray-address``: sharded BM25 and/or dense indexes, on this machine or on Ray."""
    from sleuth.index.sharded import ShardedBM25Index, ShardedDenseIndex, read_root_manifest

    session: contextlib.AbstractContextManager = contextlib.nullcontext()
    if ray_address is not None:
        from sleuth.scale.ray_build import RayOptions, build_bm25_on_ray, build_dense_on_ray
        from sleuth.scale.session import ray_session

        options = RayOptions(workers=ray_workers, actor_cpus=actor_cpus)
        session = ray_session(ray_address)
    with session:
        if ray_address is not None:
            check_ray_shards(shards, actor_cpus)
        for what, target in selected_kinds(kind, out):
            start = time.perf_counter()
            if target is None:
                key = ws.bm25_key(params, analyzer) if what == "bm25" else ws.dense_key(encoder, factory)
                target = ws.index_dir(f"{key}-shards{shards}")
            passages, info = source.passages(), source.info()
            if what == "bm25" and ray_address is not None and reads_on_ray_data(source):
                from sleuth.scale.ray_read import build_bm25_reading_on_ray

                build_bm25_reading_on_ray(source, target, shards, params, analyzer, options)
            elif what == "bm25" and ray_address is not None:
                build_bm25_on_ray(passages, target, shards, params, analyzer, info, options)
            elif what == "bm25":
                ShardedBM25Index.build(passages, target, shards, params, analyzer, info, ws.show_progress)
            elif ray_address is not None and reads_on_ray_data(source):
                from sleuth.scale.ray_read import build_dense_reading_on_ray

                build_dense_reading_on_ray(source, target, shards, encoder, factory, device, options)
            elif ray_address is not None:
                build_dense_on_ray(passages, target, shards, encoder, factory, info, device, options)
            else:
                ShardedDenseIndex.build(passages, ws.encoder(encoder), target, factory, shards, info, ws.show_progress)
            manifest = read_root_manifest(target, None, verify=False)
            where = f"Ray ({ray_address})" if ray_address is not None else "this machine"
            console.print(f"[green]{what}[/green] index of {manifest.count:,} passages in "
                          f"{len(manifest.params['shards'])} shards at {target} "
                          f"({time.perf_counter() - start:.1f} s, built on {where})")
            note_left_out(source)


def reads_on_ray_data(source: CorpusSource) -> bool:
    """Whether Ray Data workers read the corpus (jsonl and beir; the driver reads the other formats, and a corpus
    with distractors, which are read each in its own format)."""
    from sleuth.corpus.formats import detect_format

    if isinstance(source, MixedCorpusSource) and source.distractors:
        return False
    return (source.format or detect_format(source.path)) in ("jsonl", "beir")


def register(app: typer.Typer) -> None:
    app.command()(index)
