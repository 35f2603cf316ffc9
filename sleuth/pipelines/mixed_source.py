"""A corpus mixed with distractor corpora: the documents of the main corpus followed by those of each distractor
(read with its own detected format), indexed together. Evaluating on one's own documents plus a background
collection: ``sleuth eval --corpus MINE --distractors BACKGROUND``."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from sleuth.corpus.model import Document
from sleuth.errors import ConfigError
from sleuth.pipelines.workspace import CorpusSource


@dataclass
class MixedCorpusSource(CorpusSource):
    """``CorpusSource`` plus ``distractors`` (paths, format detected per path); the splitter applies to all."""

    distractors: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        super().__post_init__()
        for path in self.distractors:
            if not Path(path).exists():
                raise ConfigError(f"distractor corpus not found: {path}")

    def documents(self) -> Iterator[Document]:
        from sleuth.corpus.formats import read_documents

        yield from super().documents()
        for path in self.distractors:
            yield from read_documents(path)

    def fingerprint(self) -> str:
        parts = [super().fingerprint()] + [CorpusSource(Path(p)).fingerprint() for p in self.distractors]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]

    def info(self) -> dict[str, Any]:
        return {**super().info(), "distractors": [str(p) for p in self.distractors]}


def with_distractors(source: CorpusSource, distractors: Sequence[Path] | None) -> CorpusSource:
    """``source`` with the ``distractors`` corpora mixed in (``source`` itself when there are none)."""
    if not distractors:
        return source
    return MixedCorpusSource(**{f.name: getattr(source, f.name) for f in fields(source)},
                             distractors=tuple(distractors))
