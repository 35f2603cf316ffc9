"""Structured documents for hierarchical retrieval (Liu et al., EMNLP Findings 2021): a document's summary representation and its
passages, grouped per document.

- :func:`document_representation`: title + lead ("abstract") + table of contents (headings in pre-order), joined by
  ``separator`` (", " by default: the paper found a comma better than [SEP]).
- :func:`split_documents`: each structured document with its section-aware passages (DHR's ``SectionSplitter``),
  whose ``title_path`` is (title, heading path) -- :meth:`Passage.full_title` is the hierarchical passage title.
- :func:`group_passages_into_documents`: flat corpora (NQ) where a document is the set of passages sharing a title;
  the lead is the first passage's text and there is no table of contents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sleuth.corpus.model import Document, Passage
from sleuth.corpus.splitters import DEFAULT_SKIP_HEADINGS, SectionSplitter
from sleuth.errors import InputError

DEFAULT_SEPARATOR = ", "


@dataclass
class DocumentPassages:
    """One document and its passages, in document order (every passage's ``doc_id`` is the document's id)."""

    document: Document
    passages: list[Passage]


def table_of_contents(doc: Document, skip_headings: Iterable[str] = DEFAULT_SKIP_HEADINGS) -> list[str]:
    """The document's headings in pre-order, leaving out sections (with their subsections) under a skipped heading.

    Skipping the same headings as the splitter matches the authors' code, which builds the table of contents from the
    heading paths of the kept passages; pass ``skip_headings=()`` for the full table of contents.
    """
    skipped = frozenset(h.strip().casefold() for h in skip_headings)
    return [path[-1] for path, _ in doc.walk_sections()
            if path[-1].strip() and not any(h.strip().casefold() in skipped for h in path)]


def document_representation(doc: Document, separator: str = DEFAULT_SEPARATOR, *, include_lead: bool = True,
                            include_toc: bool = True, skip_headings: Iterable[str] = DEFAULT_SKIP_HEADINGS,
                            max_lead_words: int | None = None) -> str:
    """DHR's document summary: ``title SEP lead SEP heading_1 SEP heading_1.1 SEP ...`` (empty parts left out).

    ``include_lead`` / ``include_toc`` switch the abstract and the table of contents (Table 3's "+T" ablation);
    ``max_lead_words`` truncates a long lead (None: the encoder's own token limit truncates).
    """
    parts = [doc.title.strip()]
    if include_lead:
        words = doc.text.split()
        parts.append(" ".join(words[:max_lead_words] if max_lead_words is not None else words))
    if include_toc:
        parts.extend(table_of_contents(doc, skip_headings))
    return separator.join(part for part in parts if part)


def split_documents(docs: Iterable[Document], splitter: Callable[[Document], list[Passage]] | None = None,
                    keep_empty: bool = False) -> Iterator[DocumentPassages]:
    """Each document with its passages from ``splitter`` (default: DHR's :class:`SectionSplitter`).

    Documents without any passage are left out unless ``keep_empty`` (a document stage could still find them, but
    no passage could be returned for them).
    """
    split = splitter or SectionSplitter().split
    for doc in docs:
        passages = split(doc)
        for passage in passages:
            if passage.doc_id != doc.id:
                raise InputError(f"passage '{passage.id}' names document '{passage.doc_id}', not '{doc.id}'")
        if passages or keep_empty:
            yield DocumentPassages(doc, passages)


def group_passages_into_documents(passages: Iterable[Passage]) -> list[DocumentPassages]:
    """Flat passages grouped into documents by title, in order of first appearance (untitled ones stand alone).

    The document id and title are the passage title; the lead is the first passage's text; there are no sections.
    Passages get the document id as ``doc_id`` (their own ids are kept).
    """
    groups: dict[str, list[Passage]] = {}
    for passage in passages:
        key = passage.title or f"\x00{passage.id}"  # an untitled passage is a document of its own
        groups.setdefault(key, []).append(passage)
    grouped = []
    for members in groups.values():
        doc_id = members[0].title or members[0].id
        doc = Document(id=doc_id, title=members[0].title, text=members[0].text)
        grouped.append(DocumentPassages(doc, [Passage(p.id, doc_id, p.text, p.title_path or (), dict(p.metadata))
                                              for p in members]))
    return grouped


def note_merged_titles(groups: Iterable[DocumentPassages]) -> tuple[int, int]:
    """Say on stderr how many distinct input documents grouping by title merged (9 Cranfield papers with one title
    become one document; SciFact's three "Summary" abstracts too): ``(documents merged, titles they share)``.
    Paragraphs their reader declares to be of one article (``metadata["article"]``, SQuAD's) are meant to be
    grouped and are not counted."""
    import sys

    shared = [ids for g in groups if len(ids := {p.id for p in g.passages}) > 1 and not one_article(g.passages)]
    merged = sum(len(ids) for ids in shared)
    if shared:
        print(f"note: dhr groups passages by title (grouping 'title', or 'auto' on a corpus without sections): "
              f"{merged:,} documents with distinct ids share {len(shared):,} title(s) and were merged; "
              "grouping: document keeps every document apart", file=sys.stderr)
    return merged, len(shared)


def one_article(passages: list[Passage]) -> bool:
    """Whether the reader put every passage in one article (the same non-empty ``metadata["article"]``)."""
    articles = {p.metadata.get("article") for p in passages}
    return len(articles) == 1 and bool(next(iter(articles)))


def documents_to_groups(docs: Iterable[Document], splitter: Callable[[Document], list[Passage]] | None,
                        grouping: str = "auto") -> list[DocumentPassages]:
    """Documents and passages of a corpus for a hierarchical index.

    ``grouping``: "document" keeps each input document (split by ``splitter``, or one passage per document when
    ``splitter`` is None); "title" turns every input document into one passage and groups passages by title (NQ);
    "auto" picks "title" when there is no splitter and no document has sections, else "document". Grouping by title
    says on stderr how many distinct documents it merged (:func:`note_merged_titles`).
    """
    docs = list(docs)
    if grouping not in ("auto", "title", "document"):
        from sleuth.errors import ConfigError

        raise ConfigError(f"unknown grouping '{grouping}' (known: auto, title, document)")
    if grouping == "auto":
        grouping = "title" if splitter is None and not any(d.sections for d in docs) else "document"
    if grouping == "title":
        groups = group_passages_into_documents(Passage.from_document(d) for d in docs)
        note_merged_titles(groups)
        return groups
    return list(split_documents(docs, splitter or (lambda d: [Passage.from_document(d)])))
