"""Incremental updates of BM25 and dense index directories: add and delete documents without a full rebuild.

Design: a **generation swap**. An updated index directory holds complete index directories (each with its own
manifest) under ``generations/`` and a ``CURRENT`` file naming the served one::

    INDEX/CURRENT                 "gen-000002"
    INDEX/generations/gen-000002/ manifest.json, docstore.parquet, bm25s/ or vectors.faiss
    INDEX/manifest.json ...       the original build (generation 0), used while there is no CURRENT

An update writes a new generation into ``generations/.tmp-*``, renames it to ``gen-NNNNNN`` and then replaces
``CURRENT`` atomically (``os.replace``). Loaders (:func:`sleuth.index.manifest.current_generation`) read
``CURRENT`` first, so a search sees the old generation or the new one, never half of an update; a kill -9 at any
point leaves the previous generation serving (leftovers are removed by the next update or build). ``CURRENT``
records its own checksum and the served manifest's SHA-256, so an edited or damaged one is refused. Updates and
rebuilds of one directory are serialised by an ``flock`` on ``INDEX/.update.lock`` (:mod:`sleuth.index.commit`:
an update that starts during a rebuild waits and is applied on the new index). After the swap, generations older
than the previous one are deleted: the previous one is kept so a reader that read ``CURRENT`` just before the swap
can still finish loading it (a reader that loses even that race loads again:
:func:`~sleuth.index.manifest.load_generation`). Index directories built once have no ``CURRENT`` and load from the
directory itself.

Costs, per kind:

* **bm25**: bm25s has no incremental add, and BM25 scores depend on global statistics (N, document frequencies,
  average length), so the new generation is re-indexed from the stored passages (the docstore) plus the new ones:
  O(corpus) tokenisation and indexing, but no encoder and no corpus file needed. This is the simplest approach that
  gives exactly the scores of a fresh build (a delta segment would need merged statistics to be exact).
* **other kinds** (a system's, e.g. DHR's hierarchical indexes): the :class:`Updater` that a system's ``updates``
  module lists in ``UPDATERS`` under the kind its manifests record (see :class:`sleuth.plugins.System`); it runs
  under the same lock and commits through :func:`commit_generation`, so the guarantees above hold for it too.
* **sharded-bm25 / sharded-dense**: :mod:`sleuth.index.sharded_updates` (documents stay in their shard, new ones go
  to the smallest; BM25's global statistics are recomputed over all shards), one generation for the whole folder.
* **dense**: only new passages are encoded. Adding is copy-on-write: the stored FAISS index is read, the new
  vectors are appended (no retraining) and written as the new generation, so every existing vector and score is
  unchanged. Deleting rebuilds the FAISS index (same factory string) from the kept stored vectors: exact for Flat
  and HNSW; IVF is retrained on the kept vectors, and PQ codes are re-quantised from their reconstructions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bm25s
import faiss
import numpy as np

from sleuth.corpus.jsonl import fractional_id
from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError, InputError
from sleuth.index.bm25 import BM25Index, BM25Params
from sleuth.index.commit import LOCK, index_lock, publish
from sleuth.index.dense import VECTORS, DenseIndex, add_vectors, make_faiss_index, write_faiss
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import (
    GENERATION,
    GENERATIONS,
    Manifest,
    current_generation,
    generations,
    read_manifest,
    write_manifest,
)
from sleuth.index.sharded import SHARDED_BM25, ShardedDenseIndex
from sleuth.io import write_error
from sleuth.models.encoder import Encoder

__all__ = ["GENERATION", "LOCK", "Updater", "add_documents", "check_new_ids", "commit_generation", "delete_documents",
           "generations", "new_passage_encoder", "next_manifest", "passages_from_jsonl", "passages_from_records",
           "record_passage", "rows_to_delete", "system_updater", "without"]


@dataclass(frozen=True)
class Updater:
    """How a system updates its own index kind: ``add(index_dir, passages, encoder, device) -> Manifest`` (``device``:
    where the recorded encoders run when ``encoder`` is None) and
    ``delete(index_dir, ids) -> Manifest``, called with the directory's update lock held; both end with
    :func:`commit_generation`."""

    add: Callable[[Path, list[Passage], Any, str], Manifest]
    delete: Callable[[Path, list[str]], Manifest]


def system_updater(kind: str, index_dir: str | Path) -> Updater:
    """The Updater for ``kind``: the core's for sharded indexes, else a registered system's (ConfigError when none
    does)."""
    from sleuth.index.sharded_updates import UPDATERS as SHARDED
    from sleuth.plugins import system_entry

    if kind in SHARDED:
        return SHARDED[kind]
    updater = system_entry("updates", "UPDATERS", kind)
    if updater is not None:
        return updater
    raise ConfigError(f"{index_dir}: '{kind}' indexes cannot be updated (no system registers an updater for them)")


#: the keys of a document record (:func:`record_passage`)
RECORD_KEYS = ("id", "_id", "title", "text", "doc_id")


def passages_from_records(records: Iterable[dict[str, Any]], fields: Mapping[str, str] | None = None) -> list[Passage]:
    """Passages from ``{"id", "title"?, "text", "doc_id"?}`` records (the admin API, where an unknown key is refused:
    a misspelt ``titel`` lost the title unsaid), their keys named by ``fields`` where the index was built with a
    field mapping (:mod:`sleuth.index.as_built`); errors name the document by its position."""
    from sleuth.index.as_built import mapped_record

    def located(number: int) -> Callable[[str, str | None], InputError]:
        return lambda message, field: InputError(f"document {number}: " + (f"'{field}' " if field else "") + message)

    passages = []
    for number, record in enumerate(records, start=1):
        record = mapped_record(record, fields, located(number))
        unknown = sorted(set(record) - set(RECORD_KEYS)) if isinstance(record, dict) else []
        if unknown:
            known = [*(fields or {}).values(), *(key for key in RECORD_KEYS if key not in (fields or {}))]
            raise located(number)(f"unknown field(s) {unknown} (known: {', '.join(known)})"[:300], None)
        passages.append(record_passage(record, located(number)))
    return passages


def passages_from_jsonl(path: str | Path, fields: Mapping[str, str] | None = None) -> list[Passage]:
    """Passages from a JSONL file of such records (``sleuth update --add``), their keys named by ``fields`` where
    the index was built with a field mapping; errors name the file, line and field, and an id that comes twice
    names both lines."""
    from sleuth.corpus.jsonl import iter_jsonl, require_new_id
    from sleuth.index.as_built import mapped_record

    passages: list[Passage] = []
    first_lines: dict[str, int] = {}
    for line, record in iter_jsonl(path):
        def located(message: str, field: str | None, line: int = line) -> InputError:
            return InputError(message, path=path, line=line, field=field)

        passage = record_passage(mapped_record(record, fields, located), located)
        require_new_id(first_lines, passage.id, path, line, what="id")
        passages.append(passage)
    return passages


def record_passage(record: Any, error: Callable[[str, str | None], InputError]) -> Passage:
    """One ``{"id" (or "_id"), "title"?, "text", "doc_id"?}`` record as a Passage; ``error(message, field)`` makes
    the exception for what is wrong (an id may be a number, as the corpus readers take it)."""
    if not isinstance(record, dict):
        raise error("expected an object with 'id' and 'text'", None)
    if "id" in record and "_id" in record:  # before: 'id' kept, '_id' dropped unsaid
        raise error("and '_id' are both given; give one of them", "id")
    if "id" not in record and "_id" not in record:  # before: "'id' must be a non-empty string" for a docid key
        keys = ", ".join(sorted(map(str, record))[:8]) or "none"
        raise error(f"missing: each record needs 'id' or '_id' (its keys: {keys}; 'doc_id' names the passage's "
                    "document)", "id")
    item_id = record.get("id", record.get("_id"))
    if isinstance(item_id, int) and not isinstance(item_id, bool):
        item_id = str(item_id)
    if isinstance(item_id, float):  # as the corpus readers say it (sleuth.corpus.jsonl.require_id)
        raise error(fractional_id(item_id), "id")
    if not isinstance(item_id, str) or not item_id.strip():
        raise error("must be a non-empty string", "id")
    if "text" not in record:
        raise error("missing", "text")
    text, title = record["text"], record.get("title")
    title = "" if title is None else title  # not `or`: a title of 0 or false is refused, not dropped
    for field, value in (("text", text), ("title", title)):
        if not isinstance(value, str):
            raise error(f"must be a string, got {type(value).__name__}", field)
    doc_id = record.get("doc_id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if doc_id is not None and (not isinstance(doc_id, str) or not doc_id.strip()):  # was str({...}), or the id
        raise error(f"must be a non-empty string or a number, got {doc_id!r}"[:120], "doc_id")
    return Passage(item_id, doc_id or item_id, text, (title,) if title else ())


def add_documents(index_dir: str | Path, passages: Sequence[Passage], encoder=None, device: str = "cpu") -> Manifest:
    """Add passages to a bm25 or dense index directory as a new generation; returns the new manifest.

    A passage id already in the index (or twice in ``passages``) is an error; nothing changes then. ``encoder``
    (dense only: refused for a BM25 index, sharded or not) defaults to the encoder the manifest records, loaded on
    ``device``.
    """
    passages = list(passages)
    if not passages:
        raise InputError("no documents to add")
    with _locked(index_dir):
        kind = read_manifest(current_generation(index_dir)).kind
        if encoder is not None:
            refuse_encoder(kind, index_dir)
        if kind not in ("bm25", "dense"):
            return system_updater(kind, index_dir).add(Path(index_dir), passages, encoder, device)
        current = _current(index_dir)
        check_new_ids(current.docstore, passages, index_dir)
        added = DocStore.from_passages(passages)
        docstore = DocStore.concat([current.docstore, added])
        if isinstance(current, BM25Index):
            return _write_bm25(index_dir, current, docstore)
        encoder = new_passage_encoder(encoder, current, index_dir, device)
        vectors = encoder.encode_passages(added.contents(), show_progress=False)
        index = current.index  # a private copy read from disk by _current: appending leaves the served one alone
        index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        return _write_dense(index_dir, current, docstore, index)


def delete_documents(index_dir: str | Path, ids: Sequence[str]) -> Manifest:
    """Delete passages by id from a bm25 or dense index directory as a new generation; returns the new manifest.

    An id not in the index is an error naming it; nothing changes then. Deleting every passage is refused.
    """
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise InputError("no ids to delete")
    with _locked(index_dir):
        kind = read_manifest(current_generation(index_dir)).kind
        if kind not in ("bm25", "dense"):
            return system_updater(kind, index_dir).delete(Path(index_dir), ids)
        current = _current(index_dir)
        rows = rows_to_delete(current.docstore, ids, index_dir)
        docstore, keep = without(current.docstore, rows)
        if isinstance(current, BM25Index):
            return _write_bm25(index_dir, current, docstore)
        vectors = current.vectors(keep).astype(np.float32)
        index = make_faiss_index(current.loaded_manifest.params.get("factory", "Flat"), current.dim)
        add_vectors(index, vectors)
        return _write_dense(index_dir, current, docstore, index)


TEXT_ONLY_KINDS = ("bm25", SHARDED_BM25)


def refuse_encoder(kind: str, index_dir: str | Path) -> None:
    """A ConfigError when an encoder is given for an index of ``kind`` that encodes nothing (BM25, sharded or not),
    rather than ignoring it."""
    if kind in TEXT_ONLY_KINDS:
        raise ConfigError(f"an encoder is for dense indexes; {index_dir} is a {kind} index (it encodes nothing)")


def new_passage_encoder(encoder: Encoder | None, current: DenseIndex | ShardedDenseIndex, index_dir: str | Path,
                        device: str = "cpu") -> Encoder:
    """The encoder of an update's new dense passages, for sharded and unsharded indexes alike: ``encoder`` when
    given (checked by :func:`check_same_space`), else the one the index's manifest records, loaded on ``device`` as a
    search loads it (:func:`sleuth.models.registry.encoder_from_spec`: name, prefixes, normalisation, maximum
    length); a ConfigError when its dimension is not the index's."""
    spec = current.encoder_spec
    if encoder is None:
        from sleuth.models.registry import encoder_from_spec

        if not spec.get("name"):
            raise ConfigError(f"{index_dir}: the manifest records no encoder; name the encoder of new documents")
        return encoder_from_spec(spec, device)
    if encoder.dim != current.dim:
        raise ConfigError(f"encoder '{encoder.name}' gives {encoder.dim} dimensions, the index has {current.dim}")
    rows = space_sample(len(current.docstore))
    check_same_space(encoder, [current.docstore.content(row) for row in rows], current.vectors(rows),
                     spec.get("name"), index_dir)
    return encoder


#: passages of the index that a given encoder re-encodes to check it gives the index's vectors
SPACE_SAMPLE = 16


def space_sample(count: int) -> list[int]:
    """The rows :func:`check_same_space` re-encodes of an index of ``count`` passages: up to :data:`SPACE_SAMPLE`,
    evenly spaced; none under four passages (too few to tell)."""
    return [] if count < 4 else sorted({int(i) for i in np.linspace(0, count - 1, min(SPACE_SAMPLE, count))})


def check_same_space(encoder: Encoder, texts: Sequence[str], stored: np.ndarray, built: str | None,
                     index_dir: str | Path) -> None:
    """A ConfigError unless ``encoder`` puts an index's own passages where the index holds them: ``texts`` (the
    encoder inputs of the rows :func:`space_sample` picks), re-encoded, must land nearest their own ``stored``
    vector among the sample's for at least three in four (PQ's approximate vectors pass; another model of the same
    dimension, whose vectors would be searched as if they were the index's, does not). ``built`` names the encoder
    the index records. No texts: nothing to check."""
    if not texts:
        return
    fresh = np.asarray(encoder.encode_passages(list(texts), show_progress=False), dtype=np.float32)
    stored = np.array(stored, dtype=np.float32)
    fresh /= np.maximum(np.linalg.norm(fresh, axis=1, keepdims=True), 1e-12)
    stored /= np.maximum(np.linalg.norm(stored, axis=1, keepdims=True), 1e-12)
    similarity = fresh @ stored.T
    own = int((similarity.argmax(axis=1) == np.arange(len(texts))).sum())
    if own * 4 < 3 * len(texts):
        raise ConfigError(f"encoder '{encoder.name}' does not give the vectors of {index_dir}: of {len(texts)} of its "
                          f"passages re-encoded, {own} land nearest their own stored vector (mean cosine "
                          f"{float(np.diag(similarity).mean()):.2f}); the index was built with "
                          f"'{built or 'an unrecorded encoder'}' (leave out --encoder to use it)")


def check_new_ids(current: DocStore, passages: Sequence[Passage], index_dir: str | Path) -> None:
    """A ConfigError for an id already in the index or given twice."""
    seen: set[str] = set()
    for p in passages:
        if p.id in seen:
            raise ConfigError(f"duplicate passage id '{p.id}' in the documents to add")
        if current.position(p.id) is not None:
            raise ConfigError(f"duplicate passage id '{p.id}': already in the index {index_dir}")
        seen.add(p.id)


def rows_to_delete(current: DocStore, ids: Sequence[str], index_dir: str | Path) -> list[int]:
    """Global rows of ``ids``; an InputError naming an unknown id, or when nothing would be left."""
    rows = []
    for item_id in ids:
        row = current.position(item_id)
        if row is None:
            raise InputError(f"unknown passage id '{item_id}': not in the index {index_dir}")
        rows.append(row)
    if len(rows) >= len(current):
        raise InputError(f"deleting all {len(current)} passages would leave an empty index")
    return rows


def without(store: DocStore, rows: Sequence[int] | np.ndarray) -> tuple[DocStore, list[int]]:
    """``store`` less the given rows, and the kept rows (in order)."""
    gone = {int(row) for row in rows}
    keep = [i for i in range(len(store)) if i not in gone]
    return DocStore(*([column[i] for i in keep] for column in (store.ids, store.doc_ids, store.titles,
                                                                 store.texts))), keep


# --- internals ------------------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _locked(index_dir: str | Path) -> Iterator[None]:
    """Hold the index directory's lock (one update or build at a time; :func:`sleuth.index.commit.index_lock`)."""
    read_manifest(current_generation(index_dir), verify=False)  # a clear error when there is no index
    folder = Path(os.path.abspath(index_dir))
    if GENERATION.match(folder.name) and folder.parent.name == GENERATIONS:  # before: updated, never served
        raise ConfigError(f"{index_dir} is a generation of the index {folder.parent.parent}: update that folder "
                          "(an update written inside a generation is never served, and is lost with it)")
    with index_lock(index_dir):
        yield


def _current(index_dir: str | Path) -> BM25Index | DenseIndex:
    """The served generation, freshly loaded (never memory-mapped, so it can be modified)."""
    kind = read_manifest(current_generation(index_dir), verify=False).kind
    if kind == "bm25":
        return BM25Index.load(index_dir)
    if kind == "dense":
        return DenseIndex.load(index_dir)
    raise ConfigError(f"{index_dir}: '{kind}' indexes are not updated here")  # other kinds go to system_updater


def _write_bm25(index_dir: str | Path, current: BM25Index, docstore: DocStore) -> Manifest:
    """Re-index the whole docstore with the current parameters and analyser (exact global statistics)."""
    params = BM25Params(**current.loaded_manifest.params["bm25"])
    model = bm25s.BM25(method=params.method, k1=params.k1, b=params.b, delta=params.delta)
    tokens = current.analyzer.tokenize_ids(docstore.contents(), show_progress=False)
    if not tokens.vocab:
        raise InputError(f"{index_dir}: the passages left have no indexable words; an empty BM25 index is refused")
    model.index(tokens, show_progress=False)
    manifest = _next_manifest(current.loaded_manifest, docstore)

    def write(tmp: Path) -> None:
        model.save(str(tmp / "bm25s"), show_progress=False)

    return commit_generation(index_dir, manifest, write, docstore)


def _write_dense(index_dir: str | Path, current: DenseIndex, docstore: DocStore, index: faiss.Index) -> Manifest:
    manifest = _next_manifest(current.loaded_manifest, docstore)

    def write(tmp: Path) -> None:
        write_faiss(index, tmp / VECTORS)

    return commit_generation(index_dir, manifest, write, docstore)


def _next_manifest(old: Manifest, docstore: DocStore) -> Manifest:
    return next_manifest(old, len(docstore))


def next_manifest(old: Manifest, count: int, params: dict[str, Any] | None = None) -> Manifest:
    """The manifest of the next generation: ``count`` passages, the update counter incremented."""
    corpus = dict(old.corpus)
    corpus["updates"] = int(corpus.get("updates", 0)) + 1
    return Manifest(kind=old.kind, count=count, params=old.params if params is None else params, encoder=old.encoder,
                    dimensions=old.dimensions, corpus=corpus)


def commit_generation(index_dir: str | Path, manifest: Manifest, write: Callable[[Path], None],
                      docstore: DocStore | None = None) -> Manifest:
    """Write a complete generation into a temporary folder (``write(tmp)``, then ``docstore`` if given, then the
    manifest), rename it into place, switch CURRENT, collect garbage. Call it with the update lock held."""
    index_dir = Path(index_dir)
    folder = index_dir / GENERATIONS
    folder.mkdir(exist_ok=True)
    tmp = folder / f".tmp-{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir()
        write(tmp)
        if docstore is not None:
            docstore.save(tmp)
        write_manifest(tmp, manifest)
        publish(index_dir, tmp)
    except OSError as exc:
        raise write_error(exc, index_dir) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return manifest
