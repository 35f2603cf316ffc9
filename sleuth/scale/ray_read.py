"""Sharded BM25 and dense builds that read on Ray Data: the driver holds no document store.

A JSONL or BEIR corpus is read by Ray Data workers (``read_text``, lines in blocks, order kept), each block parsed
by sleuth's JSONL record reader and split by the corpus' splitter on the workers, and cut into the same contiguous
shards as :meth:`sleuth.index.sharded.ShardedBM25Index.build` (``split_at_indices`` at :func:`shard_bounds`). One
:class:`ShardWriter` actor per shard takes its piece, tokenises it, and -- once the driver has merged the
vocabularies and summed the statistics, which are per token, not per document -- builds its score matrix with the
global statistics and writes its shard folder. The driver sees only counts, tokens and statistics; the result is
the in-process sharded build's, array for array (tested).

Dense (:func:`build_dense_reading_on_ray`): the same reading and cut; one :class:`DenseShardWriter` actor per shard
loads the encoder, encodes its own passages (taking the vectors of passages in the encoder's prebuilt file from
there, as every in-process build does) and writes its FAISS shard; the driver checks ids by hash and writes the root
manifest. Vectors of passages found in a prebuilt file are the in-process build's bit for bit (tested); passages
encoded by a shard are batched within the shard, so they may differ from a whole-corpus encoding by padding
(about 1e-7 per component).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sleuth.corpus.beir import find_file
from sleuth.corpus.formats import detect_format
from sleuth.corpus.jsonl import document_from_record, field_mapping, parse_record
from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError, InputError
from sleuth.index.bm25 import BM25Params
from sleuth.index.bm25_stats import GlobalStats, ShardCounts, merged_vocabulary
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import build_directory, write_manifest
from sleuth.index.sharded import bm25_root_manifest, shard_bounds
from sleuth.index.tokenize import Analyzer
from sleuth.io import compression_of
from sleuth.pipelines.workspace import CorpusSource
from sleuth.scale.ray_build import RayOptions
from sleuth.scale.session import quiet_ray_logs, require_ray

COLUMNS = ("id", "doc_id", "title", "text")


def corpus_file(source: CorpusSource) -> tuple[Path, dict[str, str] | None]:
    """The JSONL file of a ``jsonl`` or ``beir`` corpus and its field mapping (other formats: ConfigError)."""
    name = source.format or detect_format(source.path)
    if name == "beir":
        return (find_file(source.path, "corpus.jsonl") if source.path.is_dir() else source.path), None
    if name == "jsonl":
        return source.path, source.fields
    raise ConfigError(f"reading on Ray Data takes jsonl and beir corpora, not '{name}' ({source.path}); "
                      "build without it (the driver reads the corpus)")


def passage_rows(lines: list[str], path: str, fields: dict[str, str] | None, splitter: Any) -> dict[str, list[str]]:
    """Passages (document-store columns) of JSONL lines: sleuth's record reader and the corpus' splitter."""
    mapping = field_mapping(fields, path)
    out: dict[str, list[str]] = {name: [] for name in COLUMNS}
    for line in lines:
        if not line.strip():
            continue
        document = document_from_record(parse_record(line, path), mapping, path, None)
        for passage in ([Passage.from_document(document)] if splitter is None else splitter(document)):
            for name, value in zip(COLUMNS, (passage.id, passage.doc_id, passage.full_title(", "), passage.text)):
                out[name].append(value)
    return out


def id_hash(item_id: str) -> int:
    """A 64-bit hash of a passage id."""
    import hashlib

    return int.from_bytes(hashlib.blake2b(item_id.encode(), digest_size=8).digest(), "little")


def check_unique_ids(writers: list[Any], hashes: list[np.ndarray]) -> None:
    """A ConfigError naming a passage id held twice: equal hashes are looked up by the writers holding them."""
    ray = require_ray()
    every = np.sort(np.concatenate(hashes))
    clashes = np.unique(every[1:][every[1:] == every[:-1]]).tolist()
    if not clashes:
        return
    seen: set[str] = set()
    for ids in ray.get([w.ids_with_hashes.remote(clashes) for w in writers]):
        for item_id in ids:
            if item_id in seen:
                raise ConfigError(f"duplicate passage id '{item_id}' in the corpus")
            seen.add(item_id)


class PieceHolder:
    """What the shard writers share: their piece of the passages dataset as a document store, and its ids by hash."""

    docstore: DocStore

    def hold(self, piece: Any) -> np.ndarray:
        """Read the piece into a document store; its ids' 64-bit hashes (the driver checks that ids are unique
        without holding them)."""
        columns: dict[str, list[str]] = {name: [] for name in COLUMNS}
        for batch in piece.iter_batches(batch_size=4096, batch_format="numpy"):
            for name in COLUMNS:
                columns[name].extend(str(v) for v in batch[name].tolist())
        self.docstore = DocStore(*(columns[name] for name in COLUMNS))
        return np.array([id_hash(i) for i in self.docstore.ids], dtype=np.uint64)

    def ids_with_hashes(self, hashes: list[int]) -> list[str]:
        """The ids of this shard whose hash is one of ``hashes``."""
        wanted = set(hashes)
        return [i for i in self.docstore.ids if id_hash(i) in wanted]


class ShardWriter(PieceHolder):
    """A Ray actor building one BM25 shard from its piece of the passages dataset."""

    def __init__(self, analyzer: dict):
        self.analyzer = Analyzer(**analyzer)

    def take(self, piece: Any) -> tuple[list[str], np.ndarray]:
        """Hold the piece and tokenise it; its tokens and its ids' hashes."""
        hashes = self.hold(piece)
        self.tokens = self.analyzer.tokenize_ids(self.docstore.contents(), show_progress=False)
        return list(self.tokens.vocab), hashes

    def count(self, vocab: dict[str, int]) -> ShardCounts:
        """Token ids in the merged vocabulary; this shard's document frequencies, documents and tokens."""
        from sleuth.index.bm25_stats import count_shard, remap_ids

        self.ids = remap_ids(self.tokens, vocab)
        self.counts = count_shard(self.ids, len(vocab))
        return self.counts

    def write(self, stats: GlobalStats, params: BM25Params, shard: int, shards: int, corpus_info: dict,
              directory: str) -> int:
        """Build the score matrix with the global statistics and write the shard folder; its row count."""
        from sleuth.index.bm25 import BM25Index
        from sleuth.index.bm25_stats import shard_model
        from sleuth.index.sharded import bm25_shard_manifest, shard_name, write_shard

        model = shard_model(self.ids, self.counts, stats, params.method, params.k1, params.b, params.delta)
        manifest = bm25_shard_manifest(shard, shards, len(self.docstore), params, self.analyzer, stats, corpus_info)
        write_shard(BM25Index(model, self.analyzer, self.docstore, manifest), Path(directory) / shard_name(shard))
        return len(self.docstore)


class DenseShardWriter(PieceHolder):
    """A Ray actor building one dense shard from its piece of the passages dataset: it loads the encoder, encodes
    its passages and writes its FAISS shard."""

    def __init__(self, encoder: str, device: str = "cpu"):
        from sleuth.models.registry import load_encoder

        self.encoder = load_encoder(encoder, device=device)

    def write(self, factory: str, shard: int, shards: int, corpus_info: dict, directory: str) -> tuple[int, dict, int]:
        """Encode the held passages (prebuilt vectors where the encoder has them) and write the shard folder; its
        row count, encoder spec and dimension."""
        from sleuth.index.prebuilt import encode_passages
        from sleuth.index.sharded import dense_shard, shard_name, write_shard

        vectors = encode_passages(self.encoder, self.docstore.contents())
        spec = self.encoder.spec()
        write_shard(dense_shard(self.docstore, vectors, factory, spec, shard, shards, corpus_info),
                    Path(directory) / shard_name(shard))
        return len(self.docstore), spec, int(vectors.shape[1])


def read_pieces(source: CorpusSource, shards: int, options: RayOptions) -> tuple[list[Any], list[tuple[int, int]]]:
    """A JSONL/BEIR corpus read and split into passages by Ray Data workers, cut into the in-process build's
    contiguous shards (:func:`shard_bounds`): the pieces (Ray datasets) and their (offset, count)."""
    ray = require_ray()
    file, fields = corpus_file(source)
    context = ray.data.DataContext.get_current()
    quiet_ray_logs()  # again: Ray Data sets its logger to INFO when first imported, after the session's quieting
    context.execution_options.preserve_order = True
    context.enable_progress_bars = options.show_progress
    compression = compression_of(file)
    lines = ray.data.read_text(str(file), **({"arrow_open_stream_args": {"compression": compression}}
                                             if compression else {}))
    rows = lines.map_batches(lambda batch: passage_rows([str(t) for t in batch["text"]], str(file), fields,
                                                        source.splitter),
                             batch_format="numpy", batch_size=1024, num_cpus=options.actor_cpus).materialize()
    count = rows.count()
    if count == 0:
        raise InputError("the corpus has no passages; nothing to index", path=file)
    bounds = shard_bounds(count, shards)
    return rows.split_at_indices([offset for offset, _ in bounds[1:]]), bounds


def build_bm25_reading_on_ray(source: CorpusSource, path: str | Path, shards: int, params: BM25Params = BM25Params(),
                              analyzer: Analyzer = Analyzer(), options: RayOptions = RayOptions()) -> Path:
    """A sharded BM25 index of a JSONL/BEIR corpus, read, split, tokenised and written by Ray workers; the driver
    merges vocabularies and statistics only. Atomic at ``path``. Needs a connected Ray."""
    ray = require_ray()
    pieces, bounds = read_pieces(source, shards, options)
    writer = ray.remote(ShardWriter).options(num_cpus=options.actor_cpus, scheduling_strategy="SPREAD")
    writers = [writer.remote(analyzer.to_dict()) for _ in bounds]
    try:
        write_shards(writers, pieces, bounds, params, analyzer, source.info(), path)
    finally:
        for w in writers:
            ray.kill(w)
    return Path(path)


def write_shards(writers: list[Any], pieces: list[Any], bounds: list[tuple[int, int]], params: BM25Params,
                 analyzer: Analyzer, info: dict, path: str | Path) -> None:
    """The three rounds with the shard writers: take and tokenise, count in the merged vocabulary, write."""
    ray = require_ray()
    taken = ray.get([w.take.remote(piece) for w, piece in zip(writers, pieces)])
    check_unique_ids(writers, [hashes for _, hashes in taken])
    vocab = merged_vocabulary(tokens for tokens, _ in taken)
    if not vocab:
        raise InputError("the corpus has no indexable words (all stopwords?); an empty BM25 index is refused")
    shared = ray.put(vocab)
    counts = ray.get([w.count.remote(shared) for w in writers])
    stats = GlobalStats(vocab, np.sum([c.doc_freqs for c in counts], axis=0), sum(c.n_docs for c in counts),
                        sum(c.total_tokens for c in counts))
    with build_directory(path) as tmp:
        assert tmp is not None
        stats_ref = ray.put(stats)
        written = ray.get([w.write.remote(stats_ref, params, i, len(bounds), info, str(tmp))
                           for i, w in enumerate(writers)])
        if written != [c for _, c in bounds]:
            raise RuntimeError(f"Ray shard writers wrote {written} rows, planned {[c for _, c in bounds]}")
        write_manifest(tmp, bm25_root_manifest(bounds, params, analyzer, stats, info))


def build_dense_reading_on_ray(source: CorpusSource, path: str | Path, shards: int, encoder: str = "minilm",
                               factory: str = "Flat", device: str = "cpu", options: RayOptions = RayOptions()) -> Path:
    """A sharded dense index of a JSONL/BEIR corpus, read, split, encoded and written by Ray workers (one encoder
    per shard writer); the driver checks ids by hash and writes the root manifest. Atomic at ``path``. Needs a
    connected Ray."""
    from sleuth.index.sharded import dense_root_manifest

    ray = require_ray()
    pieces, bounds = read_pieces(source, shards, options)
    writer = ray.remote(DenseShardWriter).options(num_cpus=options.actor_cpus, scheduling_strategy="SPREAD")
    writers = [writer.remote(encoder, device) for _ in bounds]
    try:
        hashes = ray.get([w.hold.remote(piece) for w, piece in zip(writers, pieces)])
        check_unique_ids(writers, hashes)
        info = source.info()
        with build_directory(path) as tmp:
            assert tmp is not None
            written = ray.get([w.write.remote(factory, i, len(bounds), info, str(tmp)) for i, w in enumerate(writers)])
            if [count for count, _, _ in written] != [c for _, c in bounds]:
                raise RuntimeError(f"Ray shard writers wrote {[c for c, _, _ in written]} rows, planned "
                                   f"{[c for _, c in bounds]}")
            _, spec, dim = written[0]
            write_manifest(tmp, dense_root_manifest(bounds, factory, spec, dim, info))
    finally:
        for w in writers:
            ray.kill(w)
    return Path(path)
