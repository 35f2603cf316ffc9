"""MediaWiki XML export dumps (.xml, .xml.bz2, .xml.gz): pages streamed with iterparse, wikitext turned into
Documents with a lead, a heading tree, plain text, categories and links.

Plain text comes from mwparserfromhell's ``strip_code`` after templates, references, comments, file/image links,
category and interlanguage links (and, by default, tables) are taken out; link text is kept.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mwparserfromhell
from mwparserfromhell.wikicode import Wikicode

from sleuth.corpus.model import Document, Section
from sleuth.errors import InputError
from sleuth.io import open_text

# Comments and <ref> elements are removed before parsing: they are never shown and parsing them is the slow part.
HIDDEN_MARKUP = re.compile(r"<!--.*?(?:-->|\Z)|<ref\b[^>]*/>|<ref\b[^>]*>.*?</ref\s*>", re.S | re.I)
# A heading is a line "== text ==" with the same number of '=' on both sides (MediaWiki allows 1..6).
_HEADING = re.compile(r"^(={1,6})(.+?)\1[ \t]*$", re.M)
_SPACES = re.compile(r"[ \t]{2,}")  # left where templates and references were taken out
_LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(?:-[a-z]+)*$")
FILE_NAMESPACES = frozenset({"file", "image", "media"})
CATEGORY_NAMESPACE = "category"
# Link prefixes that do not lead to articles: namespaces of the English Wikipedia and common interwiki prefixes.
NON_ARTICLE_PREFIXES = FILE_NAMESPACES | {
    CATEGORY_NAMESPACE, "talk", "user", "user talk", "wikipedia", "wp", "project", "help", "template", "portal",
    "mediawiki", "special", "book", "draft", "timedtext", "module", "wikt", "wiktionary", "commons", "wikisource",
    "s", "wikiquote", "q", "wikibooks", "b", "wikinews", "n", "wikiversity", "v", "wikivoyage", "voy", "meta", "m",
    "wikidata", "d", "species", "mw", "w", "wikispecies", "c", "simple",
}


@dataclass
class DumpStats:
    """Counts filled in while a dump is read: pages yielded, redirects and other-namespace pages skipped."""

    articles: int = 0
    redirects: int = 0
    other_namespaces: int = 0


@dataclass
class Page:
    """One ``<page>`` of a dump, before wikitext parsing."""

    title: str
    namespace: int
    page_id: str
    text: str
    redirect: str | None = None


def read_mediawiki(path: str | Path, *, include_redirects: bool = False, namespaces: tuple[int, ...] = (0,),
                   keep_tables: bool = False, stats: DumpStats | None = None) -> Iterator[Document]:
    """Stream the pages of a dump as Documents (id = page title; ``metadata``: page_id, namespace, categories,
    links, and ``redirect`` for redirect pages, which are skipped unless ``include_redirects``).

    Only pages in ``namespaces`` are read (0 = articles). Pass a :class:`DumpStats` to learn what was skipped.
    """
    stats = stats if stats is not None else DumpStats()
    for page in iter_pages(path):
        if page.redirect is not None and not include_redirects:
            stats.redirects += 1
        elif page.namespace not in namespaces:
            stats.other_namespaces += 1
        else:
            stats.articles += 1
            yield page_document(page, keep_tables=keep_tables)


def iter_pages(path: str | Path) -> Iterator[Page]:
    """Stream the ``<page>`` elements of a dump (any export schema version), freeing each one after use."""
    path = Path(path)
    try:
        with open_text(path) as handle:
            root = None
            for event, element in ET.iterparse(handle, events=("start", "end")):
                if root is None:
                    root = element
                if event == "end" and _local(element.tag) == "page":
                    yield _page(element, path)
                    root.clear()  # drop the finished page (and anything before it) from the tree
    except ET.ParseError as exc:
        raise InputError(f"malformed XML ({exc.msg})", path=path, line=exc.position[0]) from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the dump ({exc})", path=path) from None


def page_document(page: Page, keep_tables: bool = False) -> Document:
    """A parsed page: lead text, heading tree, categories and links."""
    metadata: dict[str, Any] = {"page_id": page.page_id, "namespace": page.namespace}
    if page.redirect is not None:
        return Document(id=page.title, title=page.title, metadata={**metadata, "redirect": page.redirect})
    doc = wikitext_document(page.title, page.text, keep_tables=keep_tables)
    doc.metadata = {**metadata, **doc.metadata}
    return doc


def wikitext_document(title: str, wikitext: str, keep_tables: bool = False) -> Document:
    """Parse wikitext into a Document: ``text`` = plain lead, ``sections`` = heading tree (``==`` headings are the
    top level; skipped levels nest under the nearest shallower heading), ``metadata`` = categories and links."""
    wikitext = HIDDEN_MARKUP.sub("", wikitext)
    lead, rest = split_headings(wikitext)
    render = _Renderer(keep_tables)
    text = render(lead)
    flat = [(level, render(heading), render(body)) for level, heading, body in rest]
    return Document(id=title, title=title, text=text, sections=nest_sections(flat),
                    metadata={"categories": list(dict.fromkeys(render.categories)),
                              "links": list(dict.fromkeys(render.links))})


def nest_sections(flat: list[tuple[int, str, str]]) -> list[Section]:
    """Build the heading tree from ``(heading_level, heading, text)`` in document order; ``Section.level`` is the
    depth in the tree (1 = top), so a skipped level (== then ====) becomes a direct child."""
    top: list[Section] = []
    stack: list[tuple[int, Section]] = []
    for level, heading, text in flat:
        while stack and stack[-1][0] >= level:
            stack.pop()
        section = Section(heading=heading, text=text, level=len(stack) + 1)
        (stack[-1][1].children if stack else top).append(section)
        stack.append((level, section))
    return top


class _Renderer:
    """Wikitext -> plain text, collecting the categories and article links it meets."""

    def __init__(self, keep_tables: bool):
        self.keep_tables = keep_tables
        self.categories: list[str] = []
        self.links: list[str] = []

    def __call__(self, wikitext: str) -> str:
        code = mwparserfromhell.parse(wikitext)
        self._drop_hidden_links(code)
        if not self.keep_tables:
            for tag in code.filter_tags():
                if str(tag.tag).lower() == "table":
                    tag.contents = ""
        return _SPACES.sub(" ", code.strip_code(normalize=True, collapse=True)).strip()

    def _drop_hidden_links(self, code: Wikicode) -> None:
        """Blank file, category and interlanguage links (collecting categories); record article link targets."""
        for link in code.filter_wikilinks():
            kind, name = link_kind(str(link.title))
            if kind == "article":
                self.links.append(name)
            elif kind == "category":
                self.categories.append(name)
            if kind in ("category", "hidden"):
                link.title, link.text = "", None


def link_kind(target: str) -> tuple[str, str]:
    """Classify a wikilink target: ``("article", title)``, ``("category", name)``, ``("hidden", "")`` for file and
    interlanguage links (not shown as text), or ``("shown", "")`` for other links whose text is kept (``wikt:``,
    ``Wikipedia:``, ``[[:Category:X]]``, ``[[#anchor]]``)."""
    target = " ".join(target.replace("_", " ").split())
    shown = target.startswith(":")
    raw_prefix, colon, rest = target.lstrip(":").partition(":")
    prefix = raw_prefix.strip().lower()
    language = bool(_LANGUAGE_CODE.match(raw_prefix.strip()))
    if not colon or not (prefix in NON_ARTICLE_PREFIXES or language):
        article = target.lstrip(":").partition("#")[0].strip()
        return ("article", article[:1].upper() + article[1:]) if article else ("shown", "")
    if shown:
        return "shown", ""
    if prefix == CATEGORY_NAMESPACE:
        return "category", rest.strip()
    if prefix in FILE_NAMESPACES or (language and prefix not in NON_ARTICLE_PREFIXES):
        return "hidden", ""
    return "shown", ""


def split_headings(wikitext: str) -> tuple[str, list[tuple[int, str, str]]]:
    """The lead and ``(level, heading, body)`` for each heading line, in order."""
    matches = list(_HEADING.finditer(wikitext))
    if not matches:
        return wikitext, []
    parts = []
    for match, after in zip(matches, matches[1:] + [None]):
        body = wikitext[match.end():after.start() if after else len(wikitext)]
        parts.append((len(match.group(1)), match.group(2).strip(), body))
    return wikitext[:matches[0].start()], parts


def _page(element: ET.Element, path: Path) -> Page:
    """A Page from a finished ``<page>`` element."""
    fields = {_local(child.tag): child for child in element}
    title = (fields["title"].text or "") if "title" in fields else ""
    if not title:
        raise InputError("a <page> has no <title>", path=path)
    revision = {_local(child.tag): child for child in fields.get("revision", ())}
    redirect = fields.get("redirect")
    namespace = (fields["ns"].text or "0") if "ns" in fields else "0"
    if not namespace.strip().lstrip("-").isdigit():
        raise InputError(f"page '{title}': <ns> is not a number: {namespace!r}", path=path)
    return Page(title=title, namespace=int(namespace), page_id=(fields["id"].text or "") if "id" in fields else "",
                text=(revision["text"].text or "") if "text" in revision else "",
                redirect=redirect.get("title", "") if redirect is not None else None)


def _local(tag: str) -> str:
    """An XML tag without its ``{namespace}``."""
    return tag.rpartition("}")[2]
