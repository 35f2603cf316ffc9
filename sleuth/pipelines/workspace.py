"""A Workspace binds pipelines to one corpus: it builds (once) and caches the indexes their stages ask for."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sleuth.corpus.model import Document, Passage
from sleuth.errors import InputError
from sleuth.folders import removed_if_failed
from sleuth.index.bm25 import BM25Index, BM25Params
from sleuth.index.dense import DenseIndex
from sleuth.index.tokenize import Analyzer
from sleuth.models.device import check_device
from sleuth.models.passage_memo import DEFAULT_MEMO_BYTES
from sleuth.paths import home_dir

if TYPE_CHECKING:
    from sleuth.stages.base import Stage

T = TypeVar("T")


@dataclass
class CorpusSource:
    """Where a corpus comes from and how it becomes passages (reader format, field mapping, splitter).
    ``path`` may be given as a string."""

    path: Path
    format: str | None = None
    fields: dict[str, str] | None = None
    splitter: Callable[[Document], list[Passage]] | None = None
    splitter_name: str = "none"
    #: of the last pass over the corpus: documents read, and those the splitter gave no passage
    documents_read: int = field(default=0, compare=False, repr=False)
    documents_left_out: int = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def documents(self) -> Iterator[Document]:
        from sleuth.corpus.formats import read_documents

        return read_documents(self.path, self.format, self.fields)

    def check(self) -> None:
        """Raise now what reading would raise first: an undetectable or unknown format, a folder without its corpus
        file, a field mapping on a format other than jsonl. Reads at most a file's first lines."""
        self.documents()  # the readers check their format at the call and read nothing until iterated

    def passages(self) -> Iterator[Passage]:
        """The corpus's passages in order; a corpus that yields none, or a passage id that comes twice, is an
        InputError naming its path."""
        seen: set[str] = set()
        for number, passage in self.numbered_passages():
            if passage.id in seen:
                first = next(n for n, earlier in self.numbered_passages() if earlier.id == passage.id)
                raise InputError(f"duplicate passage id '{passage.id}' (documents {first:,} and {number:,})",
                                 path=self.path)
            seen.add(passage.id)
            yield passage
        if not seen and self.documents_left_out:  # before: "has no passages", of a corpus of documents with text
            raise InputError(f"none of the {self.documents_read:,} documents gives a passage with --splitter "
                             f"{self.splitter_name} ({self.splitter_drops()}), so there is nothing to index",
                             path=self.path)
        if not seen:
            raise InputError("the corpus has no passages; nothing to index", path=self.path)

    def splitter_drops(self) -> str:
        """What the splitter gives no passage for, in words (a splitter's ``drops``), else ``""``."""
        return str(getattr(getattr(self.splitter, "__self__", self.splitter), "drops", ""))

    def numbered_passages(self) -> Iterator[tuple[int, Passage]]:
        """``(document number from 1, passage)`` for each passage, in order; counts the documents read and those
        without a passage (``documents_read``, ``documents_left_out``)."""
        self.documents_read = self.documents_left_out = 0
        for number, doc in enumerate(self.documents(), start=1):
            passages = [Passage.from_document(doc)] if self.splitter is None else self.splitter(doc)
            self.documents_read, self.documents_left_out = number, self.documents_left_out + (not passages)
            for passage in passages:
                yield number, passage

    def checked_passages(self) -> list[Passage]:
        """All passages, read before an encoder is loaded: an empty corpus or a repeated id fails at once."""
        return list(self.passages())

    def fingerprint(self) -> str:
        """A key that changes when the files, their reading or their splitting change."""
        files = [self.path] if self.path.is_file() else sorted(p for p in self.path.rglob("*") if p.is_file())
        stats = [(str(p.resolve()), p.stat().st_size, p.stat().st_mtime_ns) for p in files]
        key = json.dumps([stats, self.format, self.fields, self.splitter_name], sort_keys=True)
        return hashlib.sha256(key.encode()).hexdigest()[:16]

    def info(self) -> dict[str, Any]:
        return {"path": str(self.path), "format": self.format, "fields": self.fields, "splitter": self.splitter_name,
                "fingerprint": self.fingerprint()}


def params_key(kind: str, params: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{kind}-{digest}"


@dataclass
class Workspace:
    """Indexes of one corpus, built on first use under ``home/indexes/<corpus>/`` and reused afterwards.

    Its encoders remember passage vectors by text (up to ``passage_memo_bytes`` each; 0: off), so indexes that read
    the same passages with the same encoder (``dense`` and ``dhr``) encode them once."""

    corpus: CorpusSource | None = None
    home: Path = field(default_factory=home_dir)
    device: str = "cpu"
    show_progress: bool = True
    passage_memo_bytes: int = DEFAULT_MEMO_BYTES
    _loaded: dict[str, Any] = field(default_factory=dict, repr=False)
    #: seconds each index built (not loaded from the cache) by this workspace took, by cache key
    build_seconds: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_device(self.device)

    def pipeline(self, source: str | Path, **keys: Any) -> Stage:
        """A pipeline bound to this workspace: a built-in name, a YAML file or a stage name; ``keys`` set the keys of
        its stage (one-stage pipelines), checked like a YAML config's: ``ws.pipeline("bm25", k=100)``."""
        from sleuth.pipelines.config import load_pipeline

        return load_pipeline(source, self, **keys)

    def index_dir(self, key: str) -> Path:
        """Where the index cached under ``key`` lives for this corpus."""
        return self.home / "indexes" / self.source().fingerprint() / key

    def memo(self, key: str, factory: Callable[[], T]) -> T:
        """The object remembered under ``key``, made by ``factory()`` on first use: one loaded model or index per
        workspace, shared by every stage built in it."""
        if key not in self._loaded:
            self._loaded[key] = factory()
        return self._loaded[key]

    def cached_index(self, key: str, load: Callable[[Path], Any], build: Callable[[Path], Any]) -> Any:
        """Load the index cached under ``key``, or build it there first (for stage modules with their own kinds)."""

        def load_or_build() -> Any:
            path = self.index_dir(key)
            if (path / "manifest.json").is_file():
                return load(path)
            start = time.perf_counter()
            with removed_if_failed(path):  # a failed build leaves no empty cache folders behind
                built = build(path)
            self.build_seconds[key] = time.perf_counter() - start
            return built

        return self.memo(key, load_or_build)

    @staticmethod
    def bm25_key(params: BM25Params = BM25Params(), analyzer: Analyzer = Analyzer()) -> str:
        """Cache folder name of a BM25 index with these parameters."""
        return params_key("bm25", {"bm25": vars(params), "analyzer": analyzer.to_dict()})

    @staticmethod
    def dense_key(encoder: str = "minilm", factory: str = "Flat") -> str:
        """Cache folder name of a dense index with this encoder (a model folder by its weights:
        :func:`~sleuth.models.registry.encoder_identity`) and FAISS factory string."""
        from sleuth.models.registry import encoder_identity

        return params_key("dense", {"encoder": encoder_identity(encoder), "factory": factory})

    def source(self) -> CorpusSource:
        """The workspace corpus (a ConfigError when there is none)."""
        if self.corpus is None:
            from sleuth.errors import ConfigError

            raise ConfigError("this pipeline needs an index: give a corpus, or an 'index:' path in the stage")
        return self.corpus

    def bm25(self, params: BM25Params = BM25Params(), analyzer: Analyzer = Analyzer()) -> BM25Index:
        """The corpus's BM25 index with these parameters."""
        corpus = self.source()
        return self.cached_index(self.bm25_key(params, analyzer), BM25Index.load, lambda path: BM25Index.build(
            corpus.passages(), path, params, analyzer, corpus.info(), self.show_progress))

    def dense(self, encoder: str = "minilm", factory: str = "Flat") -> DenseIndex:
        """The corpus's dense index for this encoder and FAISS factory string."""
        corpus = self.source()
        return self.cached_index(self.dense_key(encoder, factory), DenseIndex.load, lambda path: DenseIndex.build(
            corpus.checked_passages(), self.encoder(encoder), path, factory, corpus.info(), self.show_progress))

    def encoder(self, name: str):
        """A loaded encoder, shared by every stage of this workspace, remembering the passages it encodes."""
        from sleuth.models.registry import load_encoder

        def load() -> Any:
            encoder = load_encoder(name, device=self.device)
            encoder.remember_passages(self.passage_memo_bytes)
            return encoder

        return self.memo(f"encoder:{name}", load)
