"""Documents held in memory (a pandas DataFrame, or a list of dicts, as PyTerrier's ``IterDictIndexer`` and bm25s
take them) made a corpus file: written once as JSON Lines under ``$SLEUTH_HOME/corpora/``, named by a hash of its
content, so that the same documents reuse their indexes and changed ones get new ones."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from sleuth.corpus.frames import is_frame
from sleuth.corpus.jsonl import ID_KEYS
from sleuth.errors import ConfigError
from sleuth.io import atomic_write_text


def is_in_memory(corpus: object) -> bool:
    """Whether ``corpus`` is documents in memory (a frame, or an iterable of mappings) rather than a path."""
    return is_frame(corpus) or (isinstance(corpus, Iterable) and not isinstance(corpus, (str, bytes, Path, Mapping)))


def corpus_file(documents: Any, folder: Path, fields: Mapping[str, str] | None = None) -> tuple[Path, dict | None]:
    """The JSON Lines file of in-memory ``documents`` under ``folder`` (written if new; record N is line N, which
    errors name), and the field mapping to read it with: ``fields`` as given, else PyTerrier's ``docno`` as the id
    where the records have no other id key."""
    if is_frame(documents):
        text = documents.to_json(orient="records", lines=True, force_ascii=False)
        keys = [str(column) for column in documents.columns]
    else:
        records = list(documents)
        for number, record in enumerate(records, start=1):
            if not isinstance(record, Mapping):
                raise ConfigError(f"document {number:,} of the list is a {type(record).__name__}, not a dict "
                                  "({'id': ..., 'text': ...})")
        text = "".join(json.dumps(dict(record), ensure_ascii=False, default=str) + "\n" for record in records)
        keys = list(records[0]) if records else []
    if not text.strip():
        raise ConfigError("no documents: the corpus given is empty")
    text = text if text.endswith("\n") else text + "\n"
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.jsonl"
    if not path.is_file():
        atomic_write_text(path, text)
    if fields is None and "docno" in keys and not any(key in keys for key in ID_KEYS):
        fields = {"id": "docno"}
    return path, dict(fields) if fields is not None else None
