"""Documents added to an index read as its corpus was: with the field mapping (``--field``) and the splitter
(``--splitter``) its manifest records, so that an update gives what a fresh build over the same documents gives.

Before, ``sleuth update --add`` and ``POST /admin/documents`` read ``{id, title, text}`` records whatever the build
read: an index built with ``--field id=docno`` refused documents in its own format, and one built with ``--splitter
window`` took a 250-word document as one passage where a build made three (``z#0``, ``z#1``, ``z#2``). Only the
flat kinds (bm25, dense, sharded) split here; a system's kind (DHR's hierarchical indexes) takes passages that name
their document (``doc_id``) as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.corpus.model import Document, Passage
from sleuth.corpus.splitters import splitter_named
from sleuth.errors import InputError
from sleuth.index.manifest import current_generation, read_manifest
from sleuth.index.sharded import SHARDED_BM25, SHARDED_DENSE

#: the kinds whose added documents are split as the build split its corpus
FLAT_KINDS = ("bm25", "dense", SHARDED_BM25, SHARDED_DENSE)


@dataclass(frozen=True)
class CorpusReading:
    """How an index's corpus became passages: its JSONL field mapping (None: the default keys) and splitter name
    (``none``, ``sections``, ``window100``)."""

    fields: dict[str, str] | None = None
    splitter: str = "none"

    @classmethod
    def of(cls, index_dir: str | Path) -> CorpusReading:
        """The reading the manifest of ``index_dir`` records (a kind that is not flat: no splitter)."""
        manifest = read_manifest(current_generation(index_dir), verify=False)
        corpus = manifest.corpus or {}
        fields = corpus.get("fields") or None
        splitter = str(corpus.get("splitter") or "none") if manifest.kind in FLAT_KINDS else "none"
        return cls(dict(fields) if fields else None, splitter)

    def describe(self) -> str:
        """``--field id=docno --splitter window100`` (empty when both are the defaults)."""
        parts = [f"--field {name}={key}" for name, key in (self.fields or {}).items()]
        return " ".join(parts + ([f"--splitter {self.splitter}"] if self.splitter != "none" else []))


def mapped_record(record: Any, fields: Mapping[str, str] | None,
                  error: Callable[[str, str | None], InputError]) -> Any:
    """``record`` with the keys ``fields`` maps (``{"id": "docno"}``) renamed to sleuth's (``id``, ``title``,
    ``text``); a mapped id or text key the record lacks is ``error(message, key)``."""
    if not fields or not isinstance(record, dict):
        return record
    renamed = dict(record)
    for name, key in fields.items():
        if key in renamed:
            renamed[name] = renamed.pop(key)
        elif name in ("id", "text"):
            found = ", ".join(sorted(map(str, record))[:8]) or "none"
            raise error(f"missing (the record's keys: {found}; the index reads {name} from '{key}')", key)
    return renamed


def split_as_built(passages: list[Passage], splitter: str, source: str | Path | None = None) -> list[Passage]:
    """Each added document split as the index's corpus was (``splitter``, its recorded name); unchanged for
    ``none``. A record naming another document (``doc_id``) or a document that gives no passage is an InputError
    naming ``source``."""
    split = splitter_named(splitter)
    if split is None:
        return passages
    out: list[Passage] = []
    for passage in passages:
        if passage.doc_id != passage.id:
            raise InputError(f"'{passage.id}' names document '{passage.doc_id}' (doc_id), but this index splits its "
                             f"documents into passages (--splitter {splitter}): add whole documents", path=source)
        document = Document(passage.id, passage.title_path[0] if passage.title_path else "", passage.text)
        pieces = split(document)
        if not pieces:
            drops = str(getattr(getattr(split, "__self__", split), "drops", ""))
            raise InputError(f"document '{passage.id}' gives no passage with --splitter {splitter}"
                             + (f" ({drops})" if drops else ""), path=source)
        out.extend(pieces)
    return out
