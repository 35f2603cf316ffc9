"""BM25 index: bm25s scoring over analysed passages, stored as an index directory with a manifest."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np

from sleuth.corpus.model import Passage
from sleuth.errors import ConfigError, IndexError_, InputError
from sleuth.index.docstore import DocStore
from sleuth.index.manifest import Manifest, build_directory, read_manifest, write_manifest
from sleuth.index.stored import StoredIndex
from sleuth.index.tokenize import Analyzer
from sleuth.progress import counted, progress

METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


@dataclass(frozen=True)
class BM25Params:
    """BM25 variant and constants; the default is Lucene's formula with Anserini's k1=0.9, b=0.4.

    Checked on creation: k1 >= 0 (term-frequency saturation), 0 <= b <= 1 (length normalisation), delta >= 0."""

    method: str = "lucene"
    k1: float = 0.9
    b: float = 0.4
    delta: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(f"bm25: unknown method '{self.method}' (known: {', '.join(METHODS)})")
        for name in ("k1", "b", "delta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
                raise ConfigError(f"bm25: {name} must be a number, got {value!r}")
        if self.k1 < 0 or self.delta < 0:
            raise ConfigError(f"bm25: k1 and delta must be >= 0, got k1={self.k1}, delta={self.delta}")
        if not 0 <= self.b <= 1:
            raise ConfigError(f"bm25: b must be between 0 and 1 (length normalisation), got {self.b}")


class BM25Index(StoredIndex):
    """A loaded BM25 index: the bm25s model, the analyser and the document store."""

    kind = "bm25"

    def __init__(self, model: bm25s.BM25, analyzer: Analyzer, docstore: DocStore, manifest: Manifest | None = None):
        self.model, self.analyzer, self.docstore, self.manifest = model, analyzer, docstore, manifest

    @classmethod
    def build(cls, passages: Iterable[Passage], path: str | Path | None = None, params: BM25Params = BM25Params(),
              analyzer: Analyzer = Analyzer(), corpus_info: dict | None = None, show_progress: bool = True) -> BM25Index:
        """Index passages; with ``path`` the index is written atomically there (an old index stays until done)."""
        with build_directory(path) as tmp, progress("bm25 index: reading", None, "passages", show_progress) as task:
            docstore = DocStore.from_passages(counted(passages, task))
            check_unique(docstore.ids)
            task.describe(f"bm25 index: tokenizing {len(docstore):,} passages")
            tokens = analyzer.tokenize_ids(docstore.contents())
            if not tokens.vocab:
                raise InputError("the corpus has no indexable words (all stopwords?); an empty BM25 index is refused")
            model = bm25s.BM25(method=params.method, k1=params.k1, b=params.b, delta=params.delta)
            task.describe(f"bm25 index: indexing {len(docstore):,} passages")
            model.index(tokens, show_progress=False)
            manifest = Manifest(kind=cls.kind, count=len(docstore), corpus=corpus_info or {},
                                params={"bm25": vars(params), "analyzer": analyzer.to_dict()})
            built = cls(model, analyzer, docstore, manifest)
            if tmp is not None:
                task.describe("bm25 index: writing")
                built.save(tmp)
        return built

    def save(self, directory: Path) -> None:
        """Write the bm25s model, the document store and (last) the manifest into the existing ``directory``."""
        self.model.save(str(directory / "bm25s"), show_progress=False)
        self.docstore.save(directory)
        write_manifest(directory, self.loaded_manifest)

    @classmethod
    def _load(cls, path: Path, mmap: bool) -> BM25Index:
        manifest = read_manifest(path, kind=cls.kind)
        model = bm25s.BM25.load(str(path / "bm25s"), mmap=mmap, show_progress=False)
        try:
            analyzer = Analyzer(**manifest.params["analyzer"])
        except (ConfigError, TypeError) as exc:  # an edited or foreign manifest: name the index, not a config
            raise IndexError_(f"{path}: manifest.json: analyzer: {exc}") from None
        return cls(model, analyzer, DocStore.load(path), manifest)

    def __len__(self) -> int:
        return len(self.docstore)

    def search(self, texts: Sequence[str], k: int = 1000, n_threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and scores for each query text, as (positions, scores) arrays of shape (len(texts), k')."""
        k = min(k, len(self.docstore))
        if not texts:  # bm25s fails on an empty batch
            return np.zeros((0, k), dtype=np.int64), np.zeros((0, k), dtype=np.float32)
        tokens = self.analyzer.tokenize(list(texts))
        return topk_rows(self.model, tokens, k, self.docstore.ids, n_threads)

    def score(self, text: str, positions: Sequence[int]) -> np.ndarray:
        """BM25 scores of one query against the given rows (for rescoring candidates)."""
        tokens = self.analyzer.tokenize([text])[0]
        ids = self.model.get_tokens_ids(tokens)
        if not ids:
            return np.zeros(len(positions), dtype=np.float32)
        return self.model.get_scores_from_ids(ids)[np.asarray(positions, dtype=np.int64)]


def topk_rows(model: bm25s.BM25, tokens: list[list[str]], k: int, ids: Sequence[str],
              n_threads: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """bm25s's top ``k`` rows and scores of each tokenised query over the documents ``ids``, ties at the cut
    broken as every ranking breaks them, by id (:func:`sleuth.stages.run.ranking_key`). bm25s chooses among
    documents tied at the cut as its selection falls, so a top 100 was not the first 100 of a top 1,000 (2 of 150
    SciFact queries) and a sharded index could disagree at rank 100: the top ``k + 1`` is asked for, and a query
    whose ``k``-th and ``k + 1``-th scores tie (rare) is cut from all its scores."""
    count = len(ids)
    k = min(k, count)
    deeper = min(k + 1, count)
    positions, scores = model.retrieve(tokens, k=deeper, show_progress=False, n_threads=n_threads)
    positions, scores = np.asarray(positions, dtype=np.int64), np.asarray(scores, dtype=np.float32)
    if deeper == k:
        return positions, scores
    for row in np.flatnonzero(scores[:, k] == scores[:, k - 1]):
        token_ids = model.get_tokens_ids(tokens[row])
        every = model.get_scores_from_ids(token_ids) if token_ids else np.zeros(count, dtype=np.float32)
        positions[row, :k], scores[row, :k] = cut_by_id(np.asarray(every, dtype=np.float32), k, ids)
    return positions[:, :k], scores[:, :k]


def cut_by_id(scores: np.ndarray, k: int, ids: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows of one query's ``scores`` (one per document), best first, of those tied at the cut the
    ones of the smallest ids."""
    threshold = np.partition(scores, len(scores) - k)[len(scores) - k]
    above = np.flatnonzero(scores > threshold)
    tied = sorted(np.flatnonzero(scores == threshold).tolist(), key=ids.__getitem__)[:k - len(above)]
    rows = np.concatenate([above, np.asarray(tied, dtype=np.int64)])
    rows = rows[np.argsort(-scores[rows], kind="stable")]
    return rows, scores[rows]


def check_unique(ids: list[str]) -> None:
    """Raise a ConfigError naming the first duplicated id, an InputError when there are no ids at all or one is
    empty."""
    if not ids:
        raise InputError("the corpus has no passages; nothing to index")
    seen: set[str] = set()
    for position, item_id in enumerate(ids, start=1):
        if not str(item_id).strip():
            raise InputError(f"passage {position:,} of the corpus has an empty id; every passage needs an id")
        if item_id in seen:
            raise ConfigError(f"duplicate passage id '{item_id}' in the corpus")
        seen.add(item_id)
