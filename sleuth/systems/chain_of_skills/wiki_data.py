"""Chain-of-Skills self-supervised pretraining data from a Wikipedia dump (Ma et al., ACL 2023, §3 "Multi-task
Self-supervision" and appendix B "Pretraining"): pages and the hyperlinks among them, no annotation.

Articles are cut into passages by DHR's section splitter (``SectionSplitter``: ~100-word chunks of the lead and of
each section); an article's *entity description* is its first passage with its title ("title text", as the entity
index stores it). Anchors are the displayed texts of the wikilinks of each part (lead or section) of an article; an anchor (with
MediaWiki's link trail: ``[[anarchist]]s`` shows "anarchists") is found in the passages of its own part by exact,
case-sensitive match on word boundaries (the first occurrence per passage, which may be an unlinked repeat).
Link targets are resolved through the dump's redirects; only targets that are articles of the dump give examples.

* ``retrieval`` (Contriever-style, as the paper): two independent random crops of one passage (consecutive words,
  10-50% of it each); the first is the query, the second (with the article title, the context side) the positive.
  The paper keeps the crop in the positive view, so no text is removed. Hard negatives: crops of other articles.
* ``linking`` (BLINK-style): a passage with an anchor whose target is in the dump -> the target's description;
  ``mention`` is the anchor's span in the passage. An anchor target is used at most 10 times per source article.
* ``expanded``: (a random crop of article A's first passage, "A, passage of A with an anchor to B") -> B's
  description: the paper's pseudo query (a sampled passage with hyperlinks and the page's first passage) in the
  ("question", hop-1 passage) form of the supervised data.
* ``span``: each passage with anchors -> all its (non-overlapping) anchor spans, whatever their targets.

Hard negatives (``negatives`` per retrieval / linking / expanded example) are drawn from other articles with a
seeded ``random.Random``; the same documents and seed give the same examples.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import mwparserfromhell

from sleuth.corpus.mediawiki import HIDDEN_MARKUP, iter_pages, link_kind, page_document, split_headings
from sleuth.corpus.model import Document, Passage
from sleuth.corpus.splitters import SectionSplitter
from sleuth.systems.chain_of_skills.training_data import CosExample, context_text, pair_text, tagged

CROP_RATIO = (0.1, 0.5)  # Contriever's crop length, as a fraction of the passage's words
MIN_CROP_WORDS = 5
WIKI_SKILLS = ("retrieval", "expanded", "linking", "span")  # no reranking: the paper pretrains bi-encoder skills
MAX_LINKS_PER_TARGET = 10  # paper: an anchor entity is used at most 10 times per source page
Anchor = tuple[str, str]  # (displayed text, target title)
_LINK_TRAIL = re.compile(r"(\[\[(?:[^\[\]]|\[\[[^\[\]]*\]\])*\]\])([a-z]+)")  # a link and the letters after it


def wikitext_anchors(wikitext: str) -> list[Anchor]:
    """(displayed text, target title) of every article wikilink in ``wikitext``, in order, without duplicates; the
    text is rendered as the corpus reader renders it (mwparserfromhell ``strip_code``), plus the link trail of
    lowercase letters that MediaWiki shows as part of the link (``[[anarchist]]s`` -> "anarchists")."""
    trails = {match.group(1): match.group(2) for match in _LINK_TRAIL.finditer(wikitext)}
    anchors = []
    for link in mwparserfromhell.parse(wikitext).filter_wikilinks():
        kind, target = link_kind(str(link.title))
        if kind != "article":
            continue
        shown = mwparserfromhell.parse(str(link)).strip_code(normalize=True, collapse=True)
        shown = " ".join(shown.split())
        if shown:
            anchors.append((shown + trails.get(str(link), ""), target))
    return list(dict.fromkeys(anchors))


def load_wikipedia(path: str | Path, max_articles: int | None = None) -> tuple[list[Document], dict[str, str]]:
    """Articles of a MediaWiki dump (the first ``max_articles`` when given) with their anchors (see
    :func:`wikitext_anchors`) in ``metadata["anchors"]`` (the whole page) and ``metadata["section_anchors"]`` (one
    list for the lead, then one per section in ``Document.walk_sections`` order), and the dump's redirects (title ->
    target)."""
    documents: list[Document] = []
    redirects: dict[str, str] = {}
    for page in iter_pages(path):
        if page.redirect is not None:
            redirects[page.title] = page.redirect
        elif page.namespace == 0 and (max_articles is None or len(documents) < max_articles):
            doc = page_document(page)
            lead, sections = split_headings(HIDDEN_MARKUP.sub("", page.text))  # the reader's own split: lead, sections
            units = [wikitext_anchors(lead)] + [wikitext_anchors(body) for _, _, body in sections]
            doc.metadata["anchors"] = list(dict.fromkeys(a for unit in units for a in unit))
            doc.metadata["section_anchors"] = units
            documents.append(doc)
    return documents, redirects


def find_anchor(anchor: str, text: str) -> tuple[int, int] | None:
    """Span of the first exact (case-sensitive) occurrence of ``anchor`` in ``text`` on word boundaries, or None."""
    if anchor not in text:
        return None
    match = re.search(rf"(?<!\w){re.escape(anchor)}(?!\w)", text)
    return (match.start(), match.end()) if match else None


def random_crop(words: Sequence[str], rng: random.Random) -> str:
    """A span of consecutive words covering 10-50% of ``words`` (at least :data:`MIN_CROP_WORDS`)."""
    size = min(len(words), max(MIN_CROP_WORDS, round(rng.uniform(*CROP_RATIO) * len(words))))
    start = rng.randrange(len(words) - size + 1)
    return " ".join(words[start:start + size])


def article_anchors(doc: Document, redirects: dict[str, str]) -> dict[tuple[str, ...], list[Anchor]]:
    """Heading path -> anchors (targets resolved through ``redirects``) of that part of the article, from
    ``metadata["section_anchors"]``; else every path gets the whole page's ``metadata["anchors"]``, or, without
    those, each ``metadata["links"]`` target as its own anchor text."""
    paths = [()] + [path for path, _ in doc.walk_sections()]
    units = doc.metadata.get("section_anchors")
    if units is None or len(units) != len(paths):
        whole = doc.metadata.get("anchors") or [(t, t) for t in doc.metadata.get("links", [])]
        units = [whole] * len(paths)
    out: dict[tuple[str, ...], list[Anchor]] = {}
    for path, anchors in zip(paths, units):
        out.setdefault(tuple(path), []).extend((text, redirects.get(t, t)) for text, t in anchors)
    return out


def passage_mentions(passage: Passage, anchors: Sequence[Anchor]) -> list[tuple[tuple[int, int], str]]:
    """(span, target) of every anchor found in the passage text, overlaps resolved in favour of the longer span."""
    found = [(span, target) for text, target in anchors if (span := find_anchor(text, passage.text))]
    found.sort(key=lambda item: (item[0][0] - item[0][1], item[0][0]))
    kept: list[tuple[tuple[int, int], str]] = []
    for span, target in found:
        if all(span[1] <= other[0] or span[0] >= other[1] for other, _ in kept):
            kept.append((span, target))
    return sorted(kept)


def wikipedia_examples(documents: Iterable[Document], negatives: int = 1, seed: int = 13,
                       max_per_article: int = 30, redirects: dict[str, str] | None = None,
                       splitter: SectionSplitter | None = None) -> dict[str, list[CosExample]]:
    """Self-supervised examples per skill (keys of :data:`WIKI_SKILLS`; see the module docstring) from Wikipedia
    articles (:func:`load_wikipedia`; anchors per part of the article as :func:`article_anchors` finds them, so
    plain ``read_mediawiki`` documents work too, their link titles serving as anchor texts). Per article at most ``max_per_article`` examples of each skill, from passages
    sampled without replacement (the paper samples 30 passages with hyperlinks per page)."""
    rng = random.Random(seed)
    redirects = redirects or {}
    splitter = splitter or SectionSplitter()
    docs = list(documents)
    passages = {doc.id: splitter.split(doc) for doc in docs}
    passages = {title: parts for title, parts in passages.items() if parts}
    titles = sorted(passages)
    entities = {title: context_text(Document(title, title, passages[title][0].text)) for title in titles}
    out: dict[str, list[CosExample]] = {skill: [] for skill in WIKI_SKILLS}

    def others(exclude: set[str]) -> list[str]:
        pool = [t for t in titles if t not in exclude]
        return rng.sample(pool, min(negatives, len(pool)))

    def crop_view(title: str) -> tuple[str, str]:
        passage = rng.choice(passages[title])
        return context_text(Document(passage.id, title, random_crop(passage.text.split(), rng))), passage.id

    for doc in docs:
        if doc.id not in passages:
            continue
        own = passages[doc.id]
        anchors = article_anchors(doc, redirects)
        for passage in rng.sample(own, min(max_per_article, len(own))):
            words = passage.text.split()
            views = [crop_view(t) for t in others({doc.id})]
            positive = context_text(Document(passage.id, doc.title, random_crop(words, rng)))
            out["retrieval"].append(CosExample("retrieval", random_crop(words, rng), positive, passage.id,
                                               [text for text, _ in views], [pid for _, pid in views]))
        used: dict[str, int] = {}
        linked = expanded = spans = 0
        for passage in rng.sample(own, len(own)):
            mentions = passage_mentions(passage, anchors.get(tuple(passage.metadata.get("headings", ())), []))
            if not mentions:
                continue
            if spans < max_per_article:
                spans += 1
                out["span"].append(CosExample("span", passage.text, spans=[span for span, _ in mentions]))
            targets = [(span, t) for span, t in mentions if t in passages and t != doc.id
                       and used.get(t, 0) < MAX_LINKS_PER_TARGET]
            for span, target in targets:
                if linked >= max_per_article:
                    break
                used[target] = used.get(target, 0) + 1
                linked += 1
                hard = others({doc.id, target})
                out["linking"].append(CosExample("linking", passage.text, entities[target], target,
                                                 [entities[t] for t in hard], list(hard), mention=span))
            if targets and expanded < max_per_article:
                _, target = rng.choice(targets)
                expanded += 1
                hard = others({doc.id, target})
                query = (random_crop(own[0].text.split(), rng), pair_text(Document(passage.id, doc.title,
                                                                                    passage.text)))
                out["expanded"].append(CosExample("expanded", query, entities[target], target,
                                                  [entities[t] for t in hard], list(hard)))
    return tagged(out, "wikipedia")

