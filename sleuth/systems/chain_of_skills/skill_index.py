"""A dense index of passages encoded by the Chain-of-Skills multi-expert encoder on the context side of one skill.

Retrieval and expanded retrieval share the context expert (passages: "title text"); entity linking searches an
index of entity descriptions (title + first paragraph, i.e. the passage as stored) encoded with the linking skill's
context expert; where both skills read passages through the same weights (``MultiExpertConfig.shares_context``:
the shipped model's experts 1 and 3 are both the frozen backbone), the retrieval index serves linking too. Held
in memory (FAISS + DocStore from ``sleuth.index.dense`` / ``docstore``), and optionally saved as an index directory
like the other kinds: ``vectors.faiss``, the document store and a manifest (kind ``cos-skill``, params ``skill`` and
``factory``, ``encoder`` = the model it was encoded with), built atomically.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from sleuth.corpus.model import Passage
from sleuth.errors import IndexError_
from sleuth.index.bm25 import check_unique
from sleuth.index.dense import VECTORS, add_vectors, make_faiss_index, save_vectors
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import Manifest, build_directory, load_generation, read_manifest
from sleuth.progress import progress

KIND = "cos-skill"


def model_info(model_name: str) -> dict[str, Any]:
    """What identifies the encoder of a skill index: "minilm", or a model directory with its weights' size and
    modification time (retraining into the same directory changes it)."""
    if model_name == "minilm":
        return {"model": "minilm"}
    from sleuth.systems.chain_of_skills.model import weights_file

    weights = weights_file(model_name)
    stat = weights.stat() if weights.is_file() else None
    return {"model": str(Path(model_name).resolve()), "weights_bytes": stat.st_size if stat else None,
            "weights_mtime_ns": stat.st_mtime_ns if stat else None}


class SkillIndex:
    """FAISS inner-product vectors of a DocStore's passages, encoded for ``skill`` on the context side."""

    kind = KIND

    def __init__(self, index: faiss.Index, docstore: DocStore, skill: str, manifest: Manifest | None = None):
        self.index, self.docstore, self.skill, self.manifest = index, docstore, skill, manifest

    @classmethod
    def build(cls, passages: Iterable[Passage], model, skill: str = "retrieval", factory: str = "Flat",
              batch_size: int = 32, path: str | Path | None = None, encoder: dict[str, Any] | None = None,
              corpus_info: dict[str, Any] | None = None, show_progress: bool = False) -> SkillIndex:
        """Encode ``passages`` with ``model.encode(..., skill, side="context")`` and index them; with ``path`` the
        index is also written there atomically (``encoder`` and ``corpus_info`` go into its manifest); ``show_progress``:
        the passages encoded (:mod:`sleuth.progress`)."""
        with build_directory(path) as tmp:
            docstore = DocStore.from_passages(passages)
            check_unique(docstore.ids)
            with progress(f"cos {skill} index: encoding", len(docstore), "passages", show_progress) as task:
                vectors = model.encode(docstore.contents(), skill, side="context", batch_size=batch_size, task=task)
            index = make_faiss_index(factory, model.dim)
            if len(docstore):
                add_vectors(index, np.ascontiguousarray(vectors, dtype=np.float32))
            manifest = Manifest(kind=KIND, count=len(docstore), params={"skill": skill, "factory": factory},
                                encoder=encoder or {}, dimensions=model.dim, corpus=corpus_info or {})
            if tmp is not None:
                save_vectors(tmp, index, docstore, manifest)
        return cls(index, docstore, skill, manifest)

    @classmethod
    def load(cls, path: str | Path) -> SkillIndex:
        """Load and validate a saved skill index directory (IndexError_ naming the path on any problem)."""
        return load_generation(path, cls._load)

    @classmethod
    def _load(cls, path: Path) -> SkillIndex:
        manifest = read_manifest(path, kind=KIND)
        skill = manifest.params.get("skill")
        if not isinstance(skill, str):
            raise IndexError_(f"{path}: manifest params lack the skill name")
        try:
            index = faiss.read_index(str(path / VECTORS))
        except RuntimeError as exc:
            raise IndexError_(f"{path / VECTORS}: unreadable FAISS index ({str(exc).splitlines()[0]})") from None
        if index.ntotal != manifest.count or (manifest.count and index.d != manifest.dimensions):
            raise IndexError_(f"{path}: vectors ({index.ntotal} x {index.d}) do not match the manifest "
                              f"({manifest.count} x {manifest.dimensions})")
        return cls(index, DocStore.load(path), skill, manifest)

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and inner-product scores per query vector (rows of -1 mark missing results)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if len(self) == 0 or k < 1:
            empty = np.zeros((len(vectors), 0))
            return empty.astype(np.int64), empty.astype(np.float32)
        scores, positions = self.index.search(vectors, min(k, len(self)))
        return positions, scores
