"""Dense index: passage vectors in a FAISS index (flat inner product by default; HNSW/IVF/PQ by factory string)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import faiss
import numpy as np

from sleuth.constraints import Check, Count
from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError, IndexError_, InputError
from sleuth.index.bm25 import check_unique
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import Manifest, build_directory, read_manifest, write_manifest
from sleuth.index.prebuilt import encode_passages
from sleuth.index.stored import StoredIndex
from sleuth.models.encoder import Encoder
from sleuth.progress import counted, progress

VECTORS = "vectors.faiss"


#: dimensions a factory string is tried on before any vector exists (PQ's M must divide the dimension)
PROBE_DIMENSIONS = (384, 768, 3840)


def faiss_reason(exc: RuntimeError) -> str:
    """The readable part of a FAISS error ("Error in <C++ signature> at file:line: Error: 'x' failed: reason")."""
    first = str(exc).splitlines()[0] if str(exc) else repr(exc)
    return re.sub(r"^Error in .*? at \S+:\d+: ", "", first).rsplit("Error: ", 1)[-1].strip()


def probe_index(factory: str) -> tuple[faiss.Index | None, str]:
    """An empty index of ``factory`` built by FAISS's own parser at the first of a few dimensions it takes (no
    vectors, milliseconds; a PQ factory needs a dimension its parts divide), and FAISS's reason where none."""
    reason = ""
    for dim in PROBE_DIMENSIONS:
        try:
            return faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT), ""
        except RuntimeError as exc:
            reason = faiss_reason(exc)
    return None, reason


def factory_problem(factory: object) -> str | None:
    """What is wrong with a FAISS factory string, found on an empty index of it (:func:`probe_index`), or None:
    used to check configs before any index is built."""
    if not isinstance(factory, str) or not factory.strip():
        return "must be a FAISS factory string (Flat, HNSW32, IVF1024,Flat, IVF1024,PQ48 ...)"
    probe, reason = probe_index(factory)
    if probe is None:
        return f"not a FAISS factory string FAISS can build ({reason}); e.g. Flat, HNSW32, IVF1024,Flat, IVF1024,PQ48"
    return None


def make_faiss_index(factory: str, dim: int) -> faiss.Index:
    """A FAISS index with inner-product metric from a factory string ("Flat", "HNSW32", "IVF1024,Flat", ...)."""
    try:
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise ConfigError(f"dense: invalid FAISS factory string '{factory}': {faiss_reason(exc)}") from None
    skip_polysemous_training(index)
    return index


def check_trainable(index: faiss.Index, factory: str, count: int) -> None:
    """Refuse, before any passage is encoded, an IVF index with more lists than passages to train them on."""
    try:
        lists = faiss.extract_index_ivf(index).nlist
    except RuntimeError:  # not an IVF index
        return
    if count < lists:
        raise ConfigError(f"dense: FAISS factory '{factory}' needs at least {lists:,} passages to train its {lists:,} "
                          f"lists, the corpus has {count:,}; choose fewer lists (e.g. IVF{max(1, count // 39)},Flat) "
                          "or Flat")


def skip_polysemous_training(index: faiss.Index) -> None:
    """Turn off PQ's polysemous training ("PQ48" does it by default, "PQ48np" not): it costs minutes whatever the
    corpus size and only serves polysemous search, which sleuth never switches on (bench/results/growth_bench.md)."""
    parts = [faiss.downcast_index(index)]
    try:
        parts.append(faiss.downcast_index(faiss.extract_index_ivf(index)))
    except RuntimeError:
        pass
    for part in parts:
        if hasattr(part, "do_polysemous_training"):
            part.do_polysemous_training = False


def add_vectors(index: faiss.Index, vectors: np.ndarray) -> None:
    """Train the index when it needs it (IVF, PQ) and add the vectors."""
    if not index.is_trained:
        try:
            index.train(vectors)
        except RuntimeError as exc:  # e.g. PQ or IVF with fewer vectors than centroids
            raise ConfigError(f"dense: the FAISS index cannot be trained on {len(vectors):,} vectors: "
                              f"{faiss_reason(exc)}") from None
    index.add(vectors)


def search_params_problem(index: faiss.Index, ef_search: int | None = None, nprobe: int | None = None) -> str | None:
    """What is wrong with setting efSearch / nprobe on ``index`` (an index type without HNSW has no efSearch, one
    without IVF no nprobe: setting them would change nothing), or None."""
    kind = type(faiss.downcast_index(index)).__name__
    if ef_search is not None and not hasattr(faiss.downcast_index(index), "hnsw"):
        return f"ef_search applies to HNSW indexes (factory HNSW32 ...); this index is {kind}, so it would change " \
               "nothing"
    if nprobe is not None:
        try:
            faiss.extract_index_ivf(index)
        except RuntimeError:
            return f"nprobe applies to IVF indexes (factory IVF1024,Flat ...); this index is {kind}, so it would " \
                   "change nothing"
    return None


def apply_search_params(index: faiss.Index, ef_search: int | None = None, nprobe: int | None = None) -> None:
    """Set HNSW efSearch / IVF nprobe; a ConfigError where the index type has no such setting
    (:func:`search_params_problem`; before, it was ignored)."""
    problem = search_params_problem(index, ef_search, nprobe)
    if problem is not None:
        raise ConfigError(f"dense: {problem}")
    if ef_search is not None:
        faiss.downcast_index(index).hnsw.efSearch = ef_search  # type: ignore[attr-defined]  # faiss stubs: Index only
    if nprobe is not None:
        faiss.extract_index_ivf(index).nprobe = nprobe


@dataclass(frozen=True)
class VectorSearch:
    """How a dense index is built and searched: the FAISS factory string, HNSW ``efSearch`` and IVF ``nprobe``.

    Declared once here; every stage builder that takes a ``VectorSearch`` accepts these fields as flat config keys
    (``factory``, ``ef_search``, ``nprobe``; see :mod:`sleuth.pipelines.registry`)."""

    factory: Annotated[str, Check(factory_problem)] = "Flat"
    ef_search: Count | None = None
    nprobe: Count | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.factory, str) or not self.factory:
            raise ConfigError(f"factory must be a FAISS factory string, got {self.factory!r}")
        for name in ("ef_search", "nprobe"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")

    def problem(self) -> str | None:
        """What is wrong with these settings together (efSearch without HNSW in the factory, nprobe without IVF),
        found on an empty index of the factory before any vector is encoded, or None."""
        if self.ef_search is None and self.nprobe is None:
            return None
        probe, _ = probe_index(self.factory)
        if probe is None:  # not a factory FAISS builds: factory_problem says so
            return None
        return search_params_problem(probe, self.ef_search, self.nprobe)

    def apply(self, index: faiss.Index) -> None:
        """Set this search's efSearch / nprobe on a FAISS index (where the index type has them)."""
        apply_search_params(index, ef_search=self.ef_search, nprobe=self.nprobe)


def write_faiss(index: faiss.Index, path: Path) -> None:
    """``faiss.write_index``, a failed write (a full disk) reported as a one-line StorageError naming the file."""
    try:
        faiss.write_index(index, str(path))
    except RuntimeError as exc:
        from sleuth.errors import StorageError
        from sleuth.io import free_space

        sizes = re.search(r"(\d+) requested and (\d+) written", str(exc))  # faiss may cut its message short
        detail = f"wrote {int(sizes[2]):,} of {int(sizes[1]):,} bytes; " if sizes else ""
        raise StorageError(f"{path}: cannot write the FAISS index ({detail}{free_space(path)}); nothing written "
                           "before was changed") from None


def save_vectors(directory: Path, index: faiss.Index, docstore: DocStore, manifest: Manifest) -> None:
    """An index directory of FAISS vectors: ``vectors.faiss``, the document store and (last) the manifest."""
    write_faiss(index, directory / VECTORS)
    docstore.save(directory)
    write_manifest(directory, manifest)


class DenseIndex(StoredIndex):
    """A loaded dense index: FAISS vectors, the encoder spec that made them, and the document store."""

    kind = "dense"

    def __init__(self, index: faiss.Index, docstore: DocStore, encoder_spec: dict, manifest: Manifest | None = None):
        self.index, self.docstore, self.encoder_spec, self.manifest = index, docstore, encoder_spec, manifest
        self._direct_map = threading.Lock()  # searches may run concurrently; making the IVF direct map may not

    @property
    def dim(self) -> int:
        return self.index.d

    @classmethod
    def build(cls, passages: Iterable[Passage], encoder: Encoder, path: str | Path | None = None,
              factory: str = "Flat", corpus_info: dict | None = None, show_progress: bool = True) -> DenseIndex:
        """Encode passages (taking the vectors of passages the encoder's prebuilt file holds from there:
        ``sleuth.index.prebuilt``) and index them; with ``path`` the index is written atomically there."""
        with build_directory(path) as tmp:
            with progress("dense index: reading", None, "passages", show_progress) as task:
                docstore = DocStore.from_passages(counted(passages, task))
            check_unique(docstore.ids)
            if not any(content.strip() for content in docstore.contents()):
                raise InputError(f"all {len(docstore):,} passages of the corpus are empty (no title, no text): "
                                 "a dense index of them would rank every query the same; nothing to index")
            index = make_faiss_index(factory, encoder.dim)
            check_trainable(index, factory, len(docstore))  # before encoding
            vectors = encode_passages(encoder, docstore.contents(), show_progress=show_progress)
            with progress(f"dense index: adding {len(docstore):,} vectors ({factory})", None, "steps",
                          show_progress) as task:
                add_vectors(index, vectors)
                manifest = Manifest(kind=cls.kind, count=len(docstore), params={"factory": factory},
                                    encoder=encoder.spec(), dimensions=encoder.dim, corpus=corpus_info or {})
                built = cls(index, docstore, encoder.spec(), manifest)
                if tmp is not None:
                    task.describe("dense index: writing")
                    built.save(tmp)
        return built

    def save(self, directory: Path) -> None:
        """Write the vectors, the document store and (last) the manifest into the existing ``directory``."""
        save_vectors(directory, self.index, self.docstore, self.loaded_manifest)

    @classmethod
    def _load(cls, path: Path, mmap: bool) -> DenseIndex:
        manifest = read_manifest(path, kind=cls.kind)
        flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if mmap else 0
        try:
            index = faiss.read_index(str(path / VECTORS), flags)
        except RuntimeError as exc:
            raise IndexError_(f"{path / VECTORS}: unreadable FAISS index ({str(exc).splitlines()[0]})") from None
        if index.d != manifest.dimensions or index.ntotal != manifest.count:
            raise IndexError_(f"{path}: vectors ({index.ntotal} x {index.d}) do not match the manifest "
                              f"({manifest.count} x {manifest.dimensions})")
        return cls(index, DocStore.load(path), manifest.encoder or {}, manifest)

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, vectors: np.ndarray, k: int = 1000) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and inner-product scores per query vector; rows of -1 mark missing results."""
        scores, positions = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), min(k, len(self)))
        return positions, scores

    def vectors(self, positions: Sequence[int] | np.ndarray) -> np.ndarray:
        """Stored vectors of the given rows (exact for flat/HNSW-flat, approximate for PQ)."""
        rows = np.asarray(positions, dtype=np.int64)
        try:
            return self.index.reconstruct_batch(rows)
        except RuntimeError:
            with self._direct_map:
                ivf = faiss.extract_index_ivf(self.index)
                if ivf.direct_map.no():  # not made yet by another thread
                    ivf.make_direct_map()
            return self.index.reconstruct_batch(rows)
