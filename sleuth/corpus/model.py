"""The corpus data model: documents with an optional heading tree, passages, queries and relevance judgements."""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Section:
    """A node of a document's heading tree: a heading, the text directly under it, and its subsections."""

    heading: str
    text: str = ""
    children: list[Section] = field(default_factory=list)
    level: int = 1

    def walk(self, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Section]]:
        """Yield ``(heading_path, section)`` for this section and all descendants, in pre-order."""
        here = path + (self.heading,)
        yield here, self
        for child in self.children:
            yield from child.walk(here)


@dataclass
class Document:
    """A document: id, title, lead text, optional heading tree, free metadata (categories, links, url ...).

    ``text`` is the lead (text before the first heading) for structured documents, or the whole body for flat ones.
    """

    id: str
    title: str = ""
    text: str = ""
    sections: list[Section] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    def walk_sections(self) -> Iterator[tuple[tuple[str, ...], Section]]:
        """Every section with its heading path (without the title), in document order."""
        for section in self.sections:
            yield from section.walk()

    def headings(self) -> list[str]:
        """The table of contents: every heading in pre-order."""
        return [path[-1] for path, _ in self.walk_sections()]

    def full_text(self) -> str:
        """Lead text and every section's text, joined by blank lines."""
        parts = [self.text] + [section.text for _, section in self.walk_sections()]
        return "\n\n".join(p for p in parts if p)


@dataclass
class Passage:
    """A retrievable unit: its own id, the id of its document, a title path and the text."""

    id: str
    doc_id: str
    text: str
    title_path: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """The document title (first element of the title path), or ''."""
        return self.title_path[0] if self.title_path else ""

    def full_title(self, separator: str = ", ") -> str:
        """The hierarchical passage title: document title and heading path joined by ``separator``."""
        return separator.join(t for t in self.title_path if t)

    @classmethod
    def from_document(cls, doc: Document) -> Passage:
        """A flat document as one passage with the same id (BEIR-style corpora)."""
        return cls(id=doc.id, doc_id=doc.id, text=doc.full_text(), title_path=(doc.title,) if doc.title else (),
                   metadata=dict(doc.metadata))


@dataclass(frozen=True)
class Query:
    """A query: id, text, and optional extra fields (answers, template, ...)."""

    id: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


def id_string(value: Any) -> str | None:
    """``value`` as an id: a string as it is, a whole number (numpy's too; not a bool) written as one; None for
    anything else (None, a float, NaN), which is not an id."""
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    return None


# Relevance judgements: query id -> document id -> graded relevance.
Qrels = dict[str, dict[str, int]]
