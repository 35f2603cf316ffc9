"""Hierarchical index (DHR): document vectors in FAISS, passage vectors grouped by document, and the mapping between.

Directory layout (kind "hierarchical")::

    documents.faiss        document vectors (flat inner product by default; HNSW/IVF by FAISS factory string)
    documents.npy          the same document vectors, float32 (exact document scores for the parallel mode)
    passages.npy           passage vectors, float32, memory-mapped on load; document i's passages are the rows
                           offsets[i] .. offsets[i+1]-1
    offsets.npy            int64, length documents + 1
    documents/docstore.parquet   document ids, titles and representations (row i = document i)
    passages/docstore.parquet    passage ids, document ids, hierarchical titles and texts (row j = passage j)
    manifest.json          encoder specs of the document and passage encoders, counts, parameters, checksums

Stage 2 of DHR gathers the passage rows of the k1 retrieved documents and scores them with one matrix product.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import faiss
import numpy as np

from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError, IndexError_
from sleuth.index.bm25 import check_unique
from sleuth.index.dense import add_vectors, make_faiss_index
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import Manifest, build_directory, read_manifest, write_manifest
from sleuth.index.stored import StoredIndex
from sleuth.models.encoder import Encoder
from sleuth.systems.dhr.structure import DEFAULT_SEPARATOR, DocumentPassages, document_representation

DOCUMENT_INDEX = "documents.faiss"
DOCUMENT_VECTORS = "documents.npy"
PASSAGE_VECTORS = "passages.npy"
OFFSETS = "offsets.npy"
DOCUMENTS_DIR = "documents"
PASSAGES_DIR = "passages"
DOCUMENT_VECTOR_KINDS = ("summary", "centroid")  # document scores from vectors
DOCUMENT_SCORES = DOCUMENT_VECTOR_KINDS + ("max",)  # ... or from the document's best passage score
COMBINATIONS = ("add", "gate")
SCAN_CHUNK = 65536  # passages scored per block in exhaustive scans (bounds the temporary score matrix)


def passage_offsets(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """``[0, c0, c0+c1, ...]``: the first passage row of each document, and the total at the end."""
    return np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))]).astype(np.int64)


def rows_of_documents(offsets: np.ndarray, documents: Sequence[int] | np.ndarray) -> np.ndarray:
    """The passage rows of the given documents, document by document (each document's rows in order)."""
    doc_rows = np.asarray(documents, dtype=np.int64)
    if doc_rows.size == 0:
        return np.zeros(0, dtype=np.int64)
    starts, ends = offsets[doc_rows], offsets[doc_rows + 1]
    lengths = ends - starts
    # rows = start of the owning document + position within it, built without a Python loop
    owner_start = np.repeat(starts, lengths)
    within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return owner_start + within


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores of a vector, best first (ties: lower position first)."""
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    return part[np.lexsort((part, -scores[part]))]


class HierarchicalIndex(StoredIndex):
    """A loaded hierarchical index: FAISS document index, passage matrix, offsets, two docstores, two encoder specs."""

    kind = "hierarchical"

    def __init__(self, document_index: faiss.Index, document_vectors: np.ndarray, passage_vectors: np.ndarray,
                 offsets: np.ndarray, documents: DocStore, passages: DocStore, document_encoder_spec: dict,
                 passage_encoder_spec: dict, manifest: Manifest | None = None):
        self.document_index, self.document_vectors = document_index, document_vectors
        self.passage_vectors, self.offsets = passage_vectors, offsets
        self.documents, self.passages = documents, passages
        self.document_encoder_spec, self.passage_encoder_spec = document_encoder_spec, passage_encoder_spec
        self.manifest = manifest
        self._passage_document: np.ndarray | None = None
        self._centroids: np.ndarray | None = None

    # ------------------------------------------------------------------ building and loading
    @classmethod
    def build(cls, groups: Iterable[DocumentPassages], document_encoder: Encoder, passage_encoder: Encoder,
              path: str | Path | None = None, factory: str = "Flat", separator: str = DEFAULT_SEPARATOR,
              corpus_info: dict | None = None, show_progress: bool = True) -> HierarchicalIndex:
        """Encode document representations and passages (with hierarchical titles joined by ``separator``) and index
        them; with ``path`` the index is written atomically there. Documents without passages are left out."""
        groups = [g for g in groups if g.passages]
        if not groups:
            raise ConfigError("hierarchical index: the corpus has no passages")
        with build_directory(path) as tmp:
            documents = DocStore([g.document.id for g in groups], [g.document.id for g in groups],
                                 [g.document.title for g in groups],
                                 [document_representation(g.document, separator) for g in groups])
            passages = DocStore.from_passages((p for g in groups for p in g.passages), title_separator=separator)
            check_unique(documents.ids)
            check_unique(passages.ids)
            offsets = passage_offsets([len(g.passages) for g in groups])
            document_index = make_faiss_index(factory, document_encoder.dim)  # a bad factory fails before encoding
            document_vectors, passage_vectors = encode_both(document_encoder, documents.texts, passage_encoder,
                                                            passage_texts(passages, separator), show_progress)
            add_vectors(document_index, document_vectors)
            manifest = Manifest(kind=cls.kind, count=len(passages), dimensions=passage_encoder.dim,
                                encoder={"document": document_encoder.spec(), "passage": passage_encoder.spec()},
                                params={"factory": factory, "separator": separator, "documents": len(documents),
                                        "document_dimensions": document_encoder.dim},
                                corpus=corpus_info or {})
            built = cls(document_index, document_vectors, passage_vectors, offsets, documents, passages,
                        document_encoder.spec(), passage_encoder.spec(), manifest)
            if tmp is not None:
                built.write_files(tmp)
                write_manifest(tmp, manifest)
        return built

    def write_files(self, directory: Path) -> None:
        """Write everything but the manifest into the existing ``directory`` (the manifest goes last)."""
        faiss.write_index(self.document_index, str(directory / DOCUMENT_INDEX))
        np.save(directory / DOCUMENT_VECTORS, np.asarray(self.document_vectors, dtype=np.float32))
        np.save(directory / PASSAGE_VECTORS, np.asarray(self.passage_vectors, dtype=np.float32))
        np.save(directory / OFFSETS, self.offsets)
        for name, store in ((DOCUMENTS_DIR, self.documents), (PASSAGES_DIR, self.passages)):
            (directory / name).mkdir()
            store.save(directory / name)

    @classmethod
    def load(cls, path: str | Path, mmap: bool = True) -> HierarchicalIndex:
        """:meth:`StoredIndex.load`; passage vectors are memory-mapped unless ``mmap`` is False."""
        return super().load(path, mmap)

    @classmethod
    def _load(cls, path: Path, mmap: bool) -> HierarchicalIndex:
        manifest = read_manifest(path, kind=cls.kind)
        encoders = manifest.encoder or {}
        if not {"document", "passage"} <= set(encoders):
            raise IndexError_(f"{path}: the manifest lacks the document and passage encoder specs")
        try:
            document_index = faiss.read_index(str(path / DOCUMENT_INDEX))
        except RuntimeError as exc:
            raise IndexError_(f"{path / DOCUMENT_INDEX}: unreadable FAISS index ({str(exc).splitlines()[0]})") from None
        document_vectors = load_array(path / DOCUMENT_VECTORS, mmap=False)
        passage_vectors = load_array(path / PASSAGE_VECTORS, mmap=mmap)
        offsets = load_array(path / OFFSETS, mmap=False)
        documents, passages = DocStore.load(path / DOCUMENTS_DIR), DocStore.load(path / PASSAGES_DIR)
        index = cls(document_index, document_vectors, passage_vectors, offsets, documents, passages,
                    encoders["document"], encoders["passage"], manifest)
        index.validate(path)
        return index

    def validate(self, where: str | Path = "hierarchical index") -> None:
        """Check that counts, shapes and offsets agree with each other and the manifest (IndexError_ otherwise)."""
        n_docs, n_passages = len(self.documents), len(self.passages)
        checks = [
            (self.document_index.ntotal == n_docs, f"document index holds {self.document_index.ntotal} vectors, "
                                                   f"the document store {n_docs}"),
            (self.document_vectors.shape[0] == n_docs, f"documents.npy has {self.document_vectors.shape[0]} rows, "
                                                       f"the document store {n_docs}"),
            (self.passage_vectors.ndim == 2 and self.passage_vectors.shape[0] == n_passages,
             f"passages.npy has shape {self.passage_vectors.shape}, the passage store {n_passages} rows"),
            (self.offsets.shape == (n_docs + 1,), f"offsets has shape {self.offsets.shape}, expected ({n_docs + 1},)"),
        ]
        if self.offsets.shape == (n_docs + 1,):
            checks += [(self.offsets[0] == 0 and self.offsets[-1] == n_passages and bool(np.all(np.diff(self.offsets)
                                                                                              >= 0)),
                        "offsets are not a non-decreasing range from 0 to the passage count")]
        if self.manifest is not None:
            checks += [(self.manifest.count == n_passages, f"manifest counts {self.manifest.count} passages, "
                                                           f"found {n_passages}"),
                       (self.manifest.dimensions == self.passage_vectors.shape[-1],
                        f"manifest says {self.manifest.dimensions}-d passages, found {self.passage_vectors.shape[-1]}")]
        for ok, message in checks:
            if not ok:
                raise IndexError_(f"{where}: {message}")

    # ------------------------------------------------------------------ properties
    @property
    def num_documents(self) -> int:
        return len(self.documents)

    def __len__(self) -> int:
        return len(self.passages)

    @property
    def docstore(self) -> DocStore:
        """The passage store (what shard actors fetch hit passages from)."""
        return self.passages

    @property
    def document_dim(self) -> int:
        return int(self.document_vectors.shape[1])

    @property
    def passage_dim(self) -> int:
        return int(self.passage_vectors.shape[1])

    @property
    def passage_document(self) -> np.ndarray:
        """Document row of every passage row."""
        if self._passage_document is None:
            self._passage_document = np.repeat(np.arange(self.num_documents), np.diff(self.offsets))
        return self._passage_document

    # ------------------------------------------------------------------ search
    def search_documents(self, query_vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k document rows and scores per query vector from the FAISS document index (-1 pads missing rows)."""
        scores, rows = self.document_index.search(np.ascontiguousarray(query_vectors, dtype=np.float32),
                                                  min(k, self.num_documents))
        return rows, scores

    def passage_rows(self, documents: Sequence[int] | np.ndarray) -> np.ndarray:
        """The passage rows of these document rows (-1 entries are ignored)."""
        doc_rows = np.asarray(documents, dtype=np.int64)
        return rows_of_documents(self.offsets, doc_rows[doc_rows >= 0])

    def score_passages(self, query_vector: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Inner products of one query vector with the given passage rows: one gather, one matrix product."""
        if rows.size == 0:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self.passage_vectors[rows], dtype=np.float32) @ np.asarray(query_vector, dtype=np.float32)

    @property
    def centroids(self) -> np.ndarray:
        """Each document's passage vectors averaged and scaled to unit length (no encoder needed; computed once)."""
        if self._centroids is None:
            self._centroids = unit_centroids(self.passage_vectors, self.offsets)
        return self._centroids

    def length_prior(self, beta: float) -> np.ndarray:
        """Per document, :func:`document_length_prior` of its passage count."""
        return document_length_prior(np.diff(self.offsets), beta)

    def document_matrix(self, document: str = "summary") -> np.ndarray:
        """The document vectors a document score uses: "summary" (the encoded representation, title + lead + table
        of contents) or "centroid" (the unit mean of the document's passage vectors)."""
        if document == "summary":
            return self.document_vectors
        if document == "centroid":
            return self.centroids
        raise ConfigError(f"unknown document vectors '{document}' (known: {', '.join(DOCUMENT_VECTOR_KINDS)})")

    def document_scores(self, query_vectors: np.ndarray, document: str = "summary") -> np.ndarray:
        """Exact scores of every document for every query, shape (queries, documents): the inner product with the
        document's vector (summary, centroid), or its best passage score (max; ``query_vectors`` must then be the
        passage encoder's)."""
        if document == "max":
            return self.max_passage_scores(query_vectors)
        return np.asarray(query_vectors, dtype=np.float32) @ self.document_matrix(document).T

    def max_passage_scores(self, query_vectors: np.ndarray) -> np.ndarray:
        """Each document's best passage score for every query (-inf for a document without passages), computed
        block by block over the passage matrix."""
        queries = np.asarray(query_vectors, dtype=np.float32)
        best = np.full((len(queries), self.num_documents), -np.inf, dtype=np.float32)
        for start in range(0, len(self), SCAN_CHUNK):
            stop = min(start + SCAN_CHUNK, len(self))
            block = queries @ np.asarray(self.passage_vectors[start:stop], dtype=np.float32).T
            owners = self.passage_document[start:stop]
            firsts = np.concatenate([[0], np.flatnonzero(np.diff(owners)) + 1])  # each document's first column
            docs = owners[firsts]
            best[:, docs] = np.maximum(best[:, docs], np.maximum.reduceat(block, firsts, axis=1))
        return best

    def scan_passages(self, query_vectors: np.ndarray, k: int, document_weight: float = 0.0,
                      document_scores: np.ndarray | None = None,
                      combine: str = "add", document_prior: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exhaustive top-k over all passages of the passage score combined with ``document_weight`` times the
        document score by :func:`combine_scores` (``combine``: add or gate), plus ``document_prior`` when given: one
        value per document (e.g. :meth:`length_prior`), or per query and document (queries x documents).

        With ``document_weight`` 0 this is flat passage search (DHR-P alone); otherwise ``document_scores``
        (queries x documents) must be given: the parallel mode of DHR. Passages are scored in blocks of SCAN_CHUNK.
        """
        queries = np.asarray(query_vectors, dtype=np.float32)
        if document_weight and document_scores is None:
            raise ConfigError("scan_passages: a document weight needs document scores")
        k = min(k, len(self))
        best_rows = np.zeros((len(queries), 0), dtype=np.int64)
        best_scores = np.zeros((len(queries), 0), dtype=np.float32)
        for start in range(0, len(self), SCAN_CHUNK):
            stop = min(start + SCAN_CHUNK, len(self))
            block = queries @ np.asarray(self.passage_vectors[start:stop], dtype=np.float32).T
            if document_weight and document_scores is not None:  # checked above: a weight comes with scores
                block = combine_scores(block, document_scores[:, self.passage_document[start:stop]],
                                       document_weight, combine)
            if document_prior is not None:  # one value per document, or per query and document
                block = block + document_prior[..., self.passage_document[start:stop]]
            rows = np.concatenate([best_rows, np.broadcast_to(np.arange(start, stop), block.shape)], axis=1)
            scores = np.concatenate([best_scores, block], axis=1)
            keep = np.stack([top_k(row, k) for row in scores])
            best_rows = np.take_along_axis(rows, keep, axis=1)
            best_scores = np.take_along_axis(scores, keep, axis=1)
        return best_rows, best_scores


def unit_centroids(passage_vectors: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per document (passages ``offsets[i]`` .. ``offsets[i+1]-1``), the mean of its passage vectors scaled to unit
    length; zeros for an empty document."""
    sums = np.add.reduceat(np.asarray(passage_vectors, dtype=np.float32), offsets[:-1], axis=0)
    sums[np.diff(offsets) == 0] = 0.0  # reduceat gives an empty document its next row; it has none
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def document_length_prior(counts: np.ndarray, beta: float) -> np.ndarray:
    """``beta * log(count)`` per document (0 for a one-passage or empty document): a document prior that favours the
    passages of long documents, added to every passage of the document."""
    return (np.float32(beta) * np.log(np.maximum(counts, 1)).astype(np.float32)).astype(np.float32)


def prior_applies(best_passage_scores: np.ndarray | float, below: float | None) -> np.ndarray:
    """Whether the length prior is added, per query with these best passage scores: always without a gate (``below``
    None), else only below it (compared in float64, so a float32 score equal to the gate's float32 is below it)."""
    best = np.asarray(best_passage_scores, dtype=np.float64)
    return np.ones(best.shape, dtype=bool) if below is None else best < below


def combine_scores(passage_scores: np.ndarray, document_scores: np.ndarray, lam: float,
                   combine: str = "add") -> np.ndarray:
    """Final passage scores, element-wise. ``add`` is Eq. 3 of the paper, ``p + lam * d``. ``gate`` adds the
    document score only where it exceeds the passage's own, ``p + lam * max(d - p, 0)``: a document can lift its
    passages but never sink them, and a one-passage document, whose representation is its passage, adds about nothing
    (under ``add`` it adds ``lam * p``, which favours short documents over the passages of long ones)."""
    p = np.asarray(passage_scores, dtype=np.float32)
    d = np.asarray(document_scores, dtype=np.float32)
    if combine == "add":
        return p + np.float32(lam) * d
    if combine == "gate":
        return p + np.float32(lam) * np.maximum(d - p, np.float32(0))
    raise ConfigError(f"unknown score combination '{combine}' (known: {', '.join(COMBINATIONS)})")


def encode_both(document_encoder: Encoder, document_texts: list[str], passage_encoder: Encoder,
                passage_texts_: list[str], show_progress: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Document and passage vectors; when one encoder does both, each distinct text is encoded once (in a flat
    corpus a one-passage document's representation is often its passage's text)."""
    if document_encoder is not passage_encoder:
        return (document_encoder.encode_passages(document_texts, show_progress=show_progress),
                passage_encoder.encode_passages(passage_texts_, show_progress=show_progress))
    unique = list(dict.fromkeys(document_texts + passage_texts_))
    vectors = document_encoder.encode_passages(unique, show_progress=show_progress)
    row = {text: i for i, text in enumerate(unique)}
    return (vectors[[row[t] for t in document_texts]].reshape(len(document_texts), -1),
            vectors[[row[t] for t in passage_texts_]].reshape(len(passage_texts_), -1))


def with_title(title: str, text: str, separator: str = DEFAULT_SEPARATOR) -> str:
    """What the passage encoder reads: ``hierarchical title SEP text`` (the paper's passage representation)."""
    return f"{title}{separator}{text}" if title else text


def passage_texts(passages: DocStore, separator: str = DEFAULT_SEPARATOR) -> list[str]:
    """The encoder inputs of every row of a passage store (titles there are already hierarchical)."""
    return [with_title(title, text, separator) for title, text in zip(passages.titles, passages.texts)]


def passage_text(passage: Passage, separator: str = DEFAULT_SEPARATOR) -> str:
    """The encoder input of one passage."""
    return with_title(passage.full_title(separator), passage.text, separator)


def load_array(path: Path, mmap: bool) -> np.ndarray:
    """A .npy array (memory-mapped read-only when ``mmap``); an unreadable file is an IndexError_."""
    try:
        return np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise IndexError_(f"{path}: unreadable array ({exc})") from None
