"""Sharded indexes: one ordinary BM25 or dense index directory per shard, a manifest listing the shards, and
scatter-gather search with an exact merge of the per-shard top-k (so a sharded exact index ranks like the whole).

Layout::

    DIR/manifest.json          kind sharded-bm25 | sharded-dense; params.shards = [{path, offset, count}, ...]
    DIR/shard-000/ ...         an ordinary 'bm25' or 'dense' index of rows offset .. offset + count - 1

BM25 shards share one vocabulary and corpus-wide statistics (:mod:`sleuth.index.bm25_stats`), so their scores
are the unsharded index's scores. Positions are global: row ``offset + i`` is row ``i`` of its shard.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence, Sized
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol, Self, TypeVar

import numpy as np

from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError, IndexError_
from sleuth.index.bm25 import BM25Index, BM25Params, check_unique, topk_rows
from sleuth.index.bm25_stats import GlobalStats, count_shard, global_stats, shard_model, shared_vocabulary
from sleuth.index.dense import DenseIndex, VectorSearch, add_vectors, apply_search_params, make_faiss_index
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import (
    Manifest,
    build_directory,
    current_generation,
    load_generation,
    read_manifest,
    write_manifest,
)
from sleuth.index.prebuilt import encode_passages
from sleuth.index.stored import StoredIndex
from sleuth.index.tokenize import Analyzer
from sleuth.models.encoder import Encoder

SHARDED_BM25 = "sharded-bm25"
SHARDED_DENSE = "sharded-dense"
T = TypeVar("T")
SizedT = TypeVar("SizedT", bound=Sized)
Tokenizer = Callable[[Analyzer, list[list[str]]], list[Any]]


def shard_name(i: int) -> str:
    return f"shard-{i:03d}"


def shard_bounds(count: int, shards: int) -> list[tuple[int, int]]:
    """(offset, count) of ``shards`` contiguous, near-equal slices of ``count`` rows."""
    if shards < 1:
        raise ConfigError(f"--shards must be at least 1, got {shards}")
    if shards > count:
        raise ConfigError(f"--shards {shards} is more than the {count} passages of the corpus")
    sizes = [len(part) for part in np.array_split(np.arange(count), shards)]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    return list(zip(offsets, sizes))


def part_bounds(parts: Sequence[Sized]) -> list[tuple[int, int]]:
    """(offset, count) of consecutive parts."""
    sizes = [len(part) for part in parts]
    return list(zip(np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist(), sizes))


def merge_topk(parts: Sequence[tuple[np.ndarray, np.ndarray]], offsets: Sequence[int],
               k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact merge of per-shard (positions, scores) of shape (queries, k_s): the k best per query by score, ties by
    global position; FAISS's -1 padding stays -1 and sorts last."""
    positions, scores, _ = merge_order(parts, offsets, k)
    return positions, scores


class IdsByRow(Protocol):
    """A global row's passage id by ``ids[row]`` (a list of ids, a remote document store's column)."""

    def __getitem__(self, row: int, /) -> str: ...


def merge_topk_by_id(parts: Sequence[tuple[np.ndarray, np.ndarray]], offsets: Sequence[int], k: int,
                     ids: IdsByRow) -> tuple[np.ndarray, np.ndarray]:
    """:func:`merge_topk`, ties at the cut broken by id (``ids[row]``: a global row's id; one with a ``prefetch(rows)``
    is told the rows it will be asked for), as an unsharded BM25 index cuts (:func:`sleuth.index.bm25.topk_rows`),
    so a sharded index gives the unsharded top k at any k."""
    positions, scores, _ = merge_order(parts, offsets, k + 1)
    if positions.shape[1] <= k:
        return positions, scores
    for row in np.flatnonzero((scores[:, k] == scores[:, k - 1]) & (positions[:, k] >= 0)):
        rows = np.concatenate([np.where(p[row] >= 0, p[row] + offset, -1) for (p, _), offset in zip(parts, offsets)])
        values = np.concatenate([np.asarray(s[row], dtype=np.float32) for _, s in parts])
        threshold = scores[row, k - 1]
        above = np.flatnonzero((rows >= 0) & (values > threshold))
        tied = rows[(rows >= 0) & (values == threshold)].tolist()
        if hasattr(ids, "prefetch"):
            ids.prefetch(tied)
        chosen = np.concatenate([rows[above][np.argsort(-values[above], kind="stable")],
                                 np.asarray(sorted(tied, key=ids.__getitem__)[:k - len(above)], dtype=np.int64)])
        positions[row, :k], scores[row, :k] = chosen, np.concatenate(
            [np.sort(values[above])[::-1], np.full(k - len(above), threshold, dtype=np.float32)])
    return positions[:, :k], scores[:, :k]


def merge_order(parts: Sequence[tuple[np.ndarray, np.ndarray]], offsets: Sequence[int],
                k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`merge_topk`, and the order it took: indices into the shards' columns concatenated (shard by shard), to
    carry further per-hit values of the shards along (:func:`take_merged`)."""
    positions = np.concatenate([np.where(p >= 0, p + offset, -1) for (p, _), offset in zip(parts, offsets)], axis=1)
    scores = np.concatenate([np.asarray(s, dtype=np.float32) for _, s in parts], axis=1)
    missing = positions < 0
    order = np.lexsort((np.where(missing, np.iinfo(np.int64).max, positions), -scores, missing), axis=-1)[:, :k]
    return np.take_along_axis(positions, order, axis=1), np.take_along_axis(scores, order, axis=1), order


def answering(results: Sequence[Any], offsets: Sequence[int]) -> tuple[list[Any], list[int]]:
    """The results of the shards that answered (a partial search's non-None ones, :mod:`sleuth.index.partial`) and
    those shards' row offsets."""
    kept = [(result, int(offset)) for result, offset in zip(results, offsets) if result is not None]
    return [result for result, _ in kept], [offset for _, offset in kept]


def take_merged(columns: Sequence[np.ndarray], order: np.ndarray) -> np.ndarray:
    """Per-hit values of the shards (one (queries, k_s) array per shard) in a merged order (:func:`merge_order`)."""
    return np.take_along_axis(np.concatenate(columns, axis=1), order, axis=1)


_POOLS: dict[int, ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def thread_pool(threads: int) -> ThreadPoolExecutor:
    """A process-wide pool of ``threads`` threads, created once (starting threads per query costs ~0.5 ms)."""
    with _POOLS_LOCK:
        if threads not in _POOLS:
            _POOLS[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sleuth-shards")
        return _POOLS[threads]


def scatter(shards: Sequence[T], call: Callable[[T], Any], threads: int) -> list[Any]:
    """``call`` on every shard, in parallel threads when there are several (FAISS releases the GIL)."""
    if threads <= 1 or len(shards) == 1:
        return [call(shard) for shard in shards]
    return list(thread_pool(min(threads, len(shards))).map(call, shards))


def by_shard(positions: Sequence[int] | np.ndarray, offsets: np.ndarray,
             counts: np.ndarray) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """Group global positions by shard: (shard, indices into ``positions``, local rows) per shard touched."""
    rows = np.asarray(positions, dtype=np.int64)
    owner = np.searchsorted(offsets, rows, side="right") - 1
    if len(rows) and (rows.min() < 0 or np.any(rows >= offsets[owner] + counts[owner])):
        raise IndexError(f"row out of range (the index holds {int(offsets[-1] + counts[-1])} rows)")
    return [(int(s), np.flatnonzero(owner == s), rows[owner == s] - offsets[s]) for s in np.unique(owner)]


def write_sharded(directory: Path | None, shards: Sequence[BM25Index | DenseIndex], manifest: Manifest) -> None:
    """Every shard as an ordinary index directory ``shard-NNN`` of ``directory``, then the sharded manifest; nothing
    when the index is built in memory only (``directory`` None)."""
    if directory is not None:
        write_shards(directory, shards)
        write_manifest(directory, manifest)  # written last; it lists each shard's manifest, not the shards' files


def write_shards(directory: Path, shards: Sequence[BM25Index | DenseIndex]) -> None:
    """Every shard as an ordinary index directory ``shard-NNN`` of ``directory`` (an update's new generation)."""
    for i, shard in enumerate(shards):
        write_shard(shard, directory / shard_name(i))


def read_root_manifest(path: str | Path, kind: str | None, verify: bool = True) -> Manifest:
    """The sharded manifest; a missing or changed shard manifest is an IndexError_ naming the shard (``verify``:
    check every file's checksum, as loading does)."""
    path = Path(path)
    try:
        return read_manifest(path, kind=kind, verify=verify)
    except IndexError_ as exc:
        text = str(exc)
        if "/shard-" not in text:
            raise
        raise IndexError_(f"{path}: shard unusable: {text}") from None


def load_shards(path: Path, manifest: Manifest, load: Callable[[Path], SizedT]) -> list[SizedT]:
    """Load every shard listed in the manifest, checking its row count; errors name the shard."""
    shards = []
    listed = manifest.params.get("shards") or []
    for i, info in enumerate(listed):
        where = path / info["path"]
        try:
            shard = load(where)
        except IndexError_ as exc:
            raise IndexError_(f"shard {i + 1} of {len(listed)} ({where}) unusable: {exc}") from None
        except (OSError, ValueError, KeyError, RuntimeError, json.JSONDecodeError) as exc:
            raise IndexError_(f"shard {i + 1} of {len(listed)} ({where}) corrupt: "
                              f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None
        if len(shard) != info["count"]:
            raise IndexError_(f"shard {i + 1} of {len(listed)} ({where}) holds {len(shard)} rows, "
                              f"the sharded manifest says {info['count']}")
        shards.append(shard)
    if not shards or sum(len(s) for s in shards) != manifest.count:
        raise IndexError_(f"{path}: the shards hold {sum(len(s) for s in shards)} rows, the manifest says "
                          f"{manifest.count}")
    return shards


class _Sharded(StoredIndex):
    """What both sharded kinds share: shards, global offsets, a concatenated document store, loading (each shard
    with its own manifest, :func:`load_shards`)."""

    kind = "sharded"
    shard_type: type[BM25Index] | type[DenseIndex]

    def __init__(self, shards: list, manifest: Manifest | None = None, threads: int = 2):
        self.shards, self.manifest, self.threads = shards, manifest, threads
        self.counts = np.array([len(s) for s in shards], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.counts)[:-1]]).astype(np.int64)
        self.docstore = DocStore.concat([s.docstore for s in shards])

    def __len__(self) -> int:
        return int(self.counts.sum())

    def _merge(self, parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> tuple[np.ndarray, np.ndarray]:
        return merge_topk(parts, self.offsets.tolist(), min(k, len(self)))

    @classmethod
    def load(cls, path: str | Path, mmap: bool = False, threads: int = 2) -> Self:
        """Load and validate a sharded directory (of an updated one: the generation ``CURRENT`` names); a missing or
        corrupt shard is an IndexError_ naming it."""
        return load_generation(path, lambda generation: cls._load(generation, mmap, threads))

    @classmethod
    def _load(cls, path: Path, mmap: bool, threads: int = 2) -> Self:
        manifest = read_root_manifest(path, cls.kind)
        shards = load_shards(path, manifest, lambda where: cls.shard_type.load(where, mmap=mmap))
        for i, shard in enumerate(shards):
            problem = cls.mismatch(shard, manifest)
            if problem:
                raise IndexError_(f"shard {i + 1} of {len(shards)} ({path / manifest.params['shards'][i]['path']}) "
                                  f"{problem}")
        return cls(shards, manifest, threads)

    @staticmethod
    def mismatch(shard: Any, manifest: Manifest) -> str | None:
        """Why a loaded shard does not belong to the sharded manifest, or None."""
        return None


class ShardedBM25Index(_Sharded):
    """BM25 shards with shared vocabulary and global statistics; search is scatter-gather with an exact merge."""

    kind = SHARDED_BM25
    shard_type = BM25Index

    def __init__(self, shards: list[BM25Index], manifest: Manifest | None = None, threads: int = 2):
        super().__init__(shards, manifest, threads)
        self.analyzer = shards[0].analyzer

    @classmethod
    def build(cls, passages: Iterable[Passage], path: str | Path | None = None, shards: int = 2,
              params: BM25Params = BM25Params(), analyzer: Analyzer = Analyzer(), corpus_info: dict | None = None,
              show_progress: bool = True, tokenize: Tokenizer | None = None) -> ShardedBM25Index:
        """Index passages as ``shards`` contiguous shards (atomically at ``path`` when given). ``tokenize`` maps the
        analyser over the shards' texts (default: in this process; :mod:`sleuth.scale.ray_build` uses Ray tasks)."""
        docstore = DocStore.from_passages(passages)
        check_unique(docstore.ids)
        parts = [docstore.slice(o, c) for o, c in shard_bounds(len(docstore), shards)]
        return cls.build_parts(parts, path, params, analyzer, corpus_info, tokenize)

    @classmethod
    def build_parts(cls, parts: list[DocStore], path: str | Path | None = None, params: BM25Params = BM25Params(),
                    analyzer: Analyzer = Analyzer(), corpus_info: dict | None = None,
                    tokenize: Tokenizer | None = None) -> ShardedBM25Index:
        """One shard per document store, in order, with statistics over all of them (an update keeps each
        document in its shard: :mod:`sleuth.index.sharded_updates`)."""
        bounds = part_bounds(parts)
        with build_directory(path) as tmp:
            texts = [part.contents() for part in parts]
            tokenized = (tokenize or _tokenize_here)(analyzer, texts)
            vocab, token_ids = shared_vocabulary(tokenized)
            counts = [count_shard(ids, len(vocab)) for ids in token_ids]
            stats = global_stats(vocab, counts)
            built = []
            for i, ((_, count), ids, shard_counts) in enumerate(zip(bounds, token_ids, counts)):
                model = shard_model(ids, shard_counts, stats, params.method, params.k1, params.b, params.delta)
                manifest = bm25_shard_manifest(i, len(bounds), count, params, analyzer, stats, corpus_info)
                built.append(BM25Index(model, analyzer, parts[i], manifest))
            manifest = bm25_root_manifest(bounds, params, analyzer, stats, corpus_info)
            write_sharded(tmp, built, manifest)
        return cls(built, manifest)

    @staticmethod
    def mismatch(shard: BM25Index, manifest: Manifest) -> str | None:
        if shard.loaded_manifest.params.get("global_stats") != manifest.params.get("global_stats"):
            return "was built with other global statistics than its siblings"
        return None

    def search(self, texts: Sequence[str], k: int = 1000, n_threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Top-k global rows and scores per query text: every shard's top-k, merged exactly."""
        tokens = self.analyzer.tokenize(list(texts))

        def one(shard: BM25Index) -> tuple[np.ndarray, np.ndarray]:
            return topk_rows(shard.model, tokens, k, shard.docstore.ids, n_threads)

        parts = scatter(self.shards, one, self.threads)
        return merge_topk_by_id(parts, self.offsets.tolist(), min(k, len(self)), self.docstore.ids)

    def score(self, text: str, positions: Sequence[int]) -> np.ndarray:
        """BM25 scores of one query against the given global rows."""
        out = np.zeros(len(positions), dtype=np.float32)
        for shard, where, rows in by_shard(positions, self.offsets, self.counts):
            out[where] = self.shards[shard].score(text, rows)
        return out


class ShardedDenseIndex(_Sharded):
    """FAISS shards (any factory string); search is scatter-gather with an exact merge of the per-shard top-k."""

    kind = SHARDED_DENSE
    shard_type = DenseIndex

    def __init__(self, shards: list[DenseIndex], manifest: Manifest | None = None, threads: int = 2):
        super().__init__(shards, manifest, threads)
        self.encoder_spec = shards[0].encoder_spec

    @property
    def dim(self) -> int:
        return self.shards[0].dim

    @classmethod
    def build(cls, passages: Iterable[Passage], encoder: Encoder | None = None, path: str | Path | None = None,
              factory: str = "Flat", shards: int = 2, corpus_info: dict | None = None, show_progress: bool = True,
              vectors: np.ndarray | None = None, encoder_spec: dict | None = None) -> ShardedDenseIndex:
        """Encode passages (the vectors of passages in the encoder's prebuilt file taken from there, as the unsharded
        build does: :mod:`sleuth.index.prebuilt`), or take ``vectors`` already encoded, e.g. by Ray workers, with
        their ``encoder_spec``, and index them as ``shards`` contiguous FAISS shards, atomically at ``path`` when given."""
        with build_directory(path) as tmp:
            docstore = DocStore.from_passages(passages)
            check_unique(docstore.ids)
            bounds = shard_bounds(len(docstore), shards)
            if vectors is None:
                if encoder is None:
                    raise ConfigError("a sharded dense build needs an encoder or precomputed vectors")
                vectors = encode_passages(encoder, docstore.contents(), show_progress=show_progress)
                encoder_spec = encoder.spec()
            vectors = np.ascontiguousarray(vectors, dtype=np.float32)
            if encoder_spec is None or len(vectors) != len(docstore):
                raise ConfigError(f"sharded dense build: {len(vectors)} vectors for {len(docstore)} passages "
                                  "(and an encoder spec is required)")
            built = [dense_shard(docstore.slice(offset, count), vectors[offset:offset + count], factory, encoder_spec,
                                 i, len(bounds), corpus_info) for i, (offset, count) in enumerate(bounds)]
            manifest = dense_root_manifest(bounds, factory, encoder_spec, vectors.shape[1], corpus_info)
            write_sharded(tmp, built, manifest)
        return cls(built, manifest)

    @staticmethod
    def mismatch(shard: DenseIndex, manifest: Manifest) -> str | None:
        if shard.dim != manifest.dimensions or shard.encoder_spec != manifest.encoder:
            return "holds vectors of another encoder or dimension than the sharded manifest"
        return None

    def search(self, vectors: np.ndarray, k: int = 1000) -> tuple[np.ndarray, np.ndarray]:
        """Top-k global rows and inner-product scores per query vector; rows of -1 mark missing results."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        return self._merge(scatter(self.shards, lambda shard: shard.search(vectors, k), self.threads), k)

    def vectors(self, positions: Sequence[int]) -> np.ndarray:
        """Stored vectors of the given global rows."""
        out = np.zeros((len(positions), self.dim), dtype=np.float32)
        for shard, where, rows in by_shard(positions, self.offsets, self.counts):
            out[where] = self.shards[shard].vectors(rows)
        return out

    def apply_search_params(self, ef_search: int | None = None, nprobe: int | None = None) -> None:
        """HNSW efSearch / IVF nprobe on every shard."""
        for shard in self.shards:
            apply_search_params(shard.index, ef_search=ef_search, nprobe=nprobe)


def dense_shard(docstore: DocStore, vectors: np.ndarray, factory: str, encoder_spec: dict, shard: int, shards: int,
                corpus_info: dict | None) -> DenseIndex:
    """One dense shard: its passages and vectors in a FAISS index of ``factory``, with its manifest."""
    index = make_faiss_index(factory, vectors.shape[1])
    add_vectors(index, np.ascontiguousarray(vectors, dtype=np.float32))
    manifest = Manifest(kind=DenseIndex.kind, count=len(docstore), params={"factory": factory, "shard": [shard, shards]},
                        encoder=encoder_spec, dimensions=int(vectors.shape[1]), corpus=corpus_info or {})
    return DenseIndex(index, docstore, encoder_spec, manifest)


def dense_root_manifest(bounds: list[tuple[int, int]], factory: str, encoder_spec: dict, dim: int,
                        corpus_info: dict | None) -> Manifest:
    """The sharded dense manifest: factory, encoder, dimension and the shard listing."""
    return Manifest(kind=SHARDED_DENSE, count=sum(c for _, c in bounds), params={"factory": factory,
                    "shards": shard_listing(bounds)}, encoder=encoder_spec, dimensions=dim, corpus=corpus_info or {})


def bm25_shard_manifest(shard: int, shards: int, count: int, params: BM25Params, analyzer: Analyzer,
                        stats: GlobalStats, corpus_info: dict | None) -> Manifest:
    """The manifest of one BM25 shard (an ordinary ``bm25`` index that records the global statistics)."""
    return Manifest(kind=BM25Index.kind, count=count, corpus=corpus_info or {},
                    params={"bm25": vars(params), "analyzer": analyzer.to_dict(), "global_stats": stats.summary(),
                            "shard": [shard, shards]})


def bm25_root_manifest(bounds: list[tuple[int, int]], params: BM25Params, analyzer: Analyzer, stats: GlobalStats,
                       corpus_info: dict | None) -> Manifest:
    """The sharded BM25 manifest: parameters, global statistics and the shard listing."""
    return Manifest(kind=SHARDED_BM25, count=sum(c for _, c in bounds), corpus=corpus_info or {},
                    params={"bm25": vars(params), "analyzer": analyzer.to_dict(), "global_stats": stats.summary(),
                            "shards": shard_listing(bounds)})


def shard_listing(bounds: list[tuple[int, int]]) -> list[dict[str, Any]]:
    """The sharded manifest's ``shards``: path, offset and count of each shard."""
    return [{"path": shard_name(i), "offset": int(o), "count": int(c)} for i, (o, c) in enumerate(bounds)]


def _tokenize_here(analyzer: Analyzer, texts: list[list[str]]) -> list[Any]:
    return [analyzer.tokenize_ids(shard) for shard in texts]


def write_shard(shard: BM25Index | DenseIndex, directory: Path) -> None:
    """One shard as an ordinary index directory inside the sharded build's temporary folder."""
    directory.mkdir()
    shard.save(directory)


def index_kind(path: str | Path) -> str:
    """The kind an index folder's manifest records (``bm25``, ``dense``, ``sharded-bm25`` ...). Only the manifest is
    read: the checksums are checked once, by the load that follows."""
    return read_root_manifest(current_generation(path), None, verify=False).kind


RemoteLoader = Callable[[Path, str], Any]
_REMOTE_LOADER: list[RemoteLoader] = []


def set_remote_loader(loader: RemoteLoader | None) -> None:
    """Serve sharded folders elsewhere from now on: ``loader(path, kind)`` returns an index with this module's
    search interface (:func:`sleuth.scale.shard_actors.serve_shards_on_ray` sets Ray shard actors); None: in-process
    again."""
    _REMOTE_LOADER[:] = [loader] if loader is not None else []


def load_sharded(path: str | Path, kind: str, local: Callable[[Path], T]) -> T | Any:
    """A sharded folder of ``kind``: from the remote loader when one is set (shard actors), else ``local(path)``."""
    return _REMOTE_LOADER[0](Path(path), kind) if _REMOTE_LOADER else local(Path(path))


def load_bm25(path: str | Path, mmap: bool = False) -> BM25Index | ShardedBM25Index:
    """A BM25 index folder, sharded or not (dispatch on the manifest kind; sharded folders go to the remote loader
    when one is set)."""
    if index_kind(path) != SHARDED_BM25:
        return BM25Index.load(path, mmap)
    return load_sharded(path, SHARDED_BM25, lambda where: ShardedBM25Index.load(where, mmap))


def load_dense(path: str | Path, mmap: bool = False) -> DenseIndex | ShardedDenseIndex:
    """A dense index folder, sharded or not (dispatch on the manifest kind, as :func:`load_bm25`)."""
    if index_kind(path) != SHARDED_DENSE:
        return DenseIndex.load(path, mmap)
    return load_sharded(path, SHARDED_DENSE, lambda where: ShardedDenseIndex.load(where, mmap))


def load_index(path: str | Path, mmap: bool = False) -> BM25Index | ShardedBM25Index | DenseIndex | ShardedDenseIndex:
    """A BM25 or dense index folder, sharded or not, as its manifest's kind says."""
    return load_bm25(path, mmap) if index_kind(path) in (BM25Index.kind, SHARDED_BM25) else load_dense(path, mmap)


def set_search_params(index: DenseIndex | ShardedDenseIndex, search: VectorSearch) -> None:
    """``search``'s HNSW efSearch / IVF nprobe on a dense index or on every shard of a sharded one."""
    if not isinstance(index, DenseIndex):  # sharded, in this process or on shard actors
        index.apply_search_params(search.ef_search, search.nprobe)
    else:
        search.apply(index.index)
