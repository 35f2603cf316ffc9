"""Passage splitters: section-aware chunks as in DHR, and fixed word windows."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator

from sleuth.corpus.model import Document, Passage
from sleuth.errors import ConfigError

DEFAULT_SKIP_HEADINGS = ("See also", "Notes", "Footnotes", "References", "External links", "Further reading")
MIN_WORDS = 10  # DHR's: a lead or section of 10 words or fewer makes no passage


class Splitter(ABC):
    """Turns a Document into Passages with ids ``"{doc.id}#{index}"`` (index counts from 0 within the document)."""

    @abstractmethod
    def split(self, doc: Document) -> list[Passage]:
        """The passages of one document, in document order."""

    def __call__(self, docs: Iterable[Document]) -> Iterator[Passage]:
        """Stream the passages of many documents."""
        for doc in docs:
            yield from self.split(doc)


class SectionSplitter(Splitter):
    """DHR's section-aware splitting.

    The text under each heading path (the lead has path ``()``) is split into ``n = words // chunk_words`` chunks of
    as equal a size as possible (so ``chunk_words`` .. ``2 * chunk_words - 1`` words each); a text shorter than
    ``chunk_words`` is kept whole when it has more than ``min_words`` words and dropped otherwise. Sections whose
    heading is in ``skip_headings`` (case-insensitive) are skipped with all their subsections.
    ``Passage.title_path`` = (document title,) + heading path; ``metadata["headings"]`` = the heading path.
    """

    def __init__(self, chunk_words: int = 100, min_words: int = MIN_WORDS,
                 skip_headings: Iterable[str] = DEFAULT_SKIP_HEADINGS):
        if chunk_words < 1 or min_words < 0:
            raise ConfigError("chunk_words must be >= 1 and min_words >= 0")
        self.chunk_words, self.min_words = chunk_words, min_words
        #: what gives no passage, in words (``sleuth index`` says how many documents that left out)
        self.drops = f"a lead or section of {min_words} words or fewer gives no passage"
        self.skip_headings = frozenset(h.strip().casefold() for h in skip_headings)

    def split(self, doc: Document) -> list[Passage]:
        passages: list[Passage] = []
        for path, text in self.units(doc):
            for chunk in self.chunks(text.split()):
                passages.append(Passage(id=f"{doc.id}#{len(passages)}", doc_id=doc.id, text=" ".join(chunk),
                                        title_path=(doc.title,) + path, metadata={"headings": list(path)}))
        return passages

    def units(self, doc: Document) -> Iterator[tuple[tuple[str, ...], str]]:
        """``(heading_path, text)`` for the lead and every section not under a skipped heading, in order."""
        yield (), doc.text
        for path, section in doc.walk_sections():
            if not any(heading.strip().casefold() in self.skip_headings for heading in path):
                yield path, section.text

    def chunks(self, words: list[str]) -> list[list[str]]:
        """Split one unit's words: ``len(words) // chunk_words`` near-equal chunks, the whole unit, or nothing."""
        count = len(words) // self.chunk_words
        if count == 0:
            return [words] if len(words) > self.min_words else []
        size, extra = divmod(len(words), count)  # the first `extra` chunks get one word more
        bounds = [i * size + min(i, extra) for i in range(count + 1)]
        return [words[start:end] for start, end in zip(bounds, bounds[1:])]


class WindowSplitter(Splitter):
    """Fixed windows of ``words`` words over ``Document.full_text()``, starting every ``stride`` words (default:
    ``words``, i.e. no overlap); the last window may be shorter. ``title_path`` = (document title,)."""

    def __init__(self, words: int = 100, stride: int | None = None):
        stride = words if stride is None else stride
        if words < 1 or stride < 1:
            raise ConfigError("words and stride must be >= 1")
        self.words, self.stride = words, stride

    def split(self, doc: Document) -> list[Passage]:
        tokens = doc.full_text().split()
        passages: list[Passage] = []
        for start in range(0, len(tokens), self.stride):
            passages.append(Passage(id=f"{doc.id}#{len(passages)}", doc_id=doc.id,
                                    text=" ".join(tokens[start:start + self.words]), title_path=(doc.title,)))
            if start + self.words >= len(tokens):
                break
        return passages


def splitter_named(name: str):
    """The split function an index manifest's recorded splitter name stands for: ``none`` -> None (one passage per
    document), ``sections`` -> :class:`SectionSplitter`, ``window<N>`` -> :class:`WindowSplitter` of N words."""
    if name == "none":
        return None
    if name == "sections":
        return SectionSplitter().split
    words = name.removeprefix("window")
    if name.startswith("window") and words.isdigit() and int(words) > 0:
        return WindowSplitter(words=int(words)).split
    raise ConfigError(f"unknown splitter '{name}' (known: none, sections, window<words>)")
