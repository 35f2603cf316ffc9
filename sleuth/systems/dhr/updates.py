"""Incremental add and delete for hierarchical (DHR) index directories, through the core's generation swap
(:mod:`sleuth.index.updates`: atomic CURRENT switch, kill -9 safe, one update at a time under its lock).

- **add**: new passages are grouped by ``doc_id``. A new document's representation is its title and lead (its first
  passage's text), as for a flat corpus grouped by title; only new passages and new documents are encoded. Passages
  for a document already in the index are appended to it (its document vector is kept). Every other vector is
  copied, so untouched documents and their passages score exactly as before.
- **delete**: ids are passage ids or document ids (a document id deletes all its passages); a document left without
  passages is removed. The document FAISS index is rebuilt from the kept document vectors (same factory string).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sleuth.corpus.model import Document, Passage
from sleuth.errors import ConfigError, InputError
from sleuth.index.dense import add_vectors, make_faiss_index
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import Manifest
from sleuth.index.updates import Updater, check_same_space, commit_generation, next_manifest, space_sample
from sleuth.models.encoder import Encoder
from sleuth.models.registry import encoder_from_spec
from sleuth.systems.dhr.index import HierarchicalIndex, passage_offsets, passage_text, with_title
from sleuth.systems.dhr.structure import DEFAULT_SEPARATOR, document_representation


def take(store: DocStore, rows: Sequence[int]) -> DocStore:
    """The given rows of a store, in that order."""
    return DocStore(*([getattr(store, name)[i] for i in rows] for name in ("ids", "doc_ids", "titles", "texts")))


def encoders(index: HierarchicalIndex, encoder: Encoder | None, index_dir: Path, separator: str = DEFAULT_SEPARATOR,
             device: str = "cpu") -> tuple[Encoder, Encoder]:
    """Document and passage encoders: the given one for passages (and for documents when the index used one model
    for both), else the ones the manifest records, on ``device``; dimensions are checked, and a given encoder must
    give the index's passage vectors (:func:`sleuth.index.updates.check_same_space`)."""
    shared = index.document_encoder_spec == index.passage_encoder_spec
    passage = encoder or encoder_from_spec(index.passage_encoder_spec, device)
    document = passage if shared else encoder_from_spec(index.document_encoder_spec, device)
    for what, model, dim in (("passage", passage, index.passage_vectors.shape[1]),
                             ("document", document, index.document_vectors.shape[1])):
        if model.dim != dim:
            raise ConfigError(f"{what} encoder '{model.name}' gives {model.dim} dimensions, the index has {dim}")
    if encoder is not None:  # before: only its dimension was checked
        rows = space_sample(len(index.passages))
        texts = [with_title(index.passages.titles[row], index.passages.texts[row], separator) for row in rows]
        check_same_space(encoder, texts, index.passage_vectors[rows], index.passage_encoder_spec.get("name"),
                         index_dir)
    return document, passage


def add(index_dir: Path, passages: list[Passage], encoder: Encoder | None = None, device: str = "cpu") -> Manifest:
    """Add passages (grouped into documents by ``doc_id``) as a new generation."""
    current = HierarchicalIndex.load(index_dir, mmap=False)
    seen: set[str] = set()
    for p in passages:
        if current.passages.position(p.id) is not None:
            raise ConfigError(f"duplicate passage id '{p.id}': already in the index {index_dir}")
        if p.id in seen:
            raise ConfigError(f"duplicate passage id '{p.id}' in the documents to add")
        seen.add(p.id)
    separator = current.loaded_manifest.params.get("separator", DEFAULT_SEPARATOR)
    groups: dict[str, list[Passage]] = {}
    for p in passages:
        groups.setdefault(p.doc_id, []).append(p)
    new_docs = [doc_id for doc_id in groups if current.documents.position(doc_id) is None]
    document_encoder, passage_encoder = encoders(current, encoder, index_dir, separator, device)
    firsts = [groups[doc_id][0] for doc_id in new_docs]
    representations = [document_representation(Document(p.doc_id, p.title, p.text), separator) for p in firsts]
    added_passages = DocStore.from_passages(passages, title_separator=separator)
    added_vectors = passage_encoder.encode_passages([passage_text(p, separator) for p in passages])
    added_documents = document_encoder.encode_passages(representations) if new_docs else np.zeros(
        (0, current.document_vectors.shape[1]), dtype=np.float32)
    # new passage layout: each old document's rows, then its added rows; then the new documents' rows
    added_row = {p.id: len(current) + i for i, p in enumerate(passages)}
    order, counts = [], []
    for d, doc_id in enumerate(current.documents.ids):
        rows = list(range(current.offsets[d], current.offsets[d + 1])) + [added_row[p.id] for p in
                                                                          groups.get(doc_id, [])]
        order += rows
        counts.append(len(rows))
    for doc_id in new_docs:
        order += [added_row[p.id] for p in groups[doc_id]]
        counts.append(len(groups[doc_id]))
    all_passages = take(DocStore.concat([current.passages, added_passages]), order)
    vectors = np.concatenate([np.asarray(current.passage_vectors, dtype=np.float32), added_vectors])[order]
    documents = DocStore.concat([current.documents, DocStore(new_docs, new_docs, [p.title for p in firsts],
                                                             representations)])
    document_vectors = np.concatenate([current.document_vectors, added_documents]).astype(np.float32)
    return commit(index_dir, current, documents, document_vectors, all_passages, vectors, passage_offsets(counts))


def delete(index_dir: Path, ids: list[str]) -> Manifest:
    """Delete passages, or whole documents by document id, as a new generation."""
    current = HierarchicalIndex.load(index_dir, mmap=False)
    gone: set[int] = set()
    for item_id in ids:
        row = current.passages.position(item_id)
        if row is not None:
            gone.add(row)
            continue
        doc = current.documents.position(item_id)
        if doc is None:
            raise InputError(f"unknown passage or document id '{item_id}': not in the index {index_dir}")
        gone.update(range(current.offsets[doc], current.offsets[doc + 1]))
    if len(gone) >= len(current):
        raise InputError(f"deleting all {len(current)} passages would leave an empty index")
    keep = np.array([i for i in range(len(current)) if i not in gone], dtype=np.int64)
    kept_per_doc = np.bincount(current.passage_document[keep], minlength=current.num_documents)
    docs = np.flatnonzero(kept_per_doc)
    return commit(index_dir, current, take(current.documents, docs.tolist()), current.document_vectors[docs],
                  take(current.passages, keep.tolist()), np.asarray(current.passage_vectors)[keep],
                  passage_offsets(kept_per_doc[docs]))


def commit(index_dir: Path, current: HierarchicalIndex, documents: DocStore, document_vectors: np.ndarray,
           passages: DocStore, passage_vectors: np.ndarray, offsets: np.ndarray) -> Manifest:
    """Write the updated index as the next generation."""
    document_index = make_faiss_index(current.loaded_manifest.params.get("factory", "Flat"), document_vectors.shape[1])
    add_vectors(document_index, np.ascontiguousarray(document_vectors, dtype=np.float32))
    manifest = next_manifest(current.loaded_manifest, len(passages), {**current.loaded_manifest.params, "documents": len(documents)})
    updated = HierarchicalIndex(document_index, document_vectors, passage_vectors, offsets, documents, passages,
                                current.document_encoder_spec, current.passage_encoder_spec, manifest)
    updated.validate(index_dir)
    return commit_generation(index_dir, manifest, updated.write_files)


UPDATERS = {HierarchicalIndex.kind: Updater(add=add, delete=delete)}
