"""Corpora: the document model, streaming readers for public formats, passage splitters, the bundled default."""

from sleuth.corpus.model import Document, Passage, Qrels, Query, Section

__all__ = ["Document", "Passage", "Qrels", "Query", "Section"]
