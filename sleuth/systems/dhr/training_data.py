"""DHR training data from QA questions: positives (paper section 4.3), hard negatives (sections 3.2-3.4), splits.

- Positive passage: the annotated gold passage when the question names one that the corpus holds; otherwise the
  top-ranked BM25 passage (within ``POSITIVE_DEPTH``) that contains an answer; otherwise the question is dropped.
  Positive document: the positive passage's document.
- Document negatives: "abstract" (top BM25 documents over title + lead) and "all-text" (top BM25 documents over
  title + every passage) whose whole content holds no answer.
- Passage negatives: BM25 (top BM25 passages without an answer), In-Doc (same document, no answer) and In-Sec (same
  heading path, no answer). Where a document has no In-Doc/In-Sec candidate, the next BM25 negative fills the slot.
- Round 2 (ANCE-style): negatives mined with the round-1 encoders (top-ranked answer-free documents / passages)
  are added to the round-1 negatives.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from sleuth.corpus.model import Passage, Query
from sleuth.errors import ConfigError
from sleuth.eval.answers import answer_matcher
from sleuth.index.bm25 import BM25Index
from sleuth.systems.dhr.index import passage_text
from sleuth.systems.dhr.structure import DEFAULT_SEPARATOR, DocumentPassages, document_representation
from sleuth.train.contrastive import ContrastiveExample

POSITIVE_DEPTH = 100  # BM25 passages searched for an answer-bearing positive (the paper's top 100)
NEGATIVE_DEPTH = 100  # BM25 / mined candidates searched for negatives
DOCUMENT_NEGATIVE_KINDS = ("abstract", "all-text")
PASSAGE_NEGATIVE_KINDS = ("bm25", "in-doc", "in-sec")


@dataclass
class DHRCorpus:
    """A corpus as the trainer sees it: passages in document order, their documents and encoder input texts."""

    groups: list[DocumentPassages]
    separator: str = DEFAULT_SEPARATOR
    show_progress: bool = False
    passages: list[Passage] = field(init=False)
    passage_document: list[int] = field(init=False)
    document_rows: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self.passages, self.passage_document, self.document_rows = [], [], []
        for d, group in enumerate(self.groups):
            self.document_rows.append(list(range(len(self.passages), len(self.passages) + len(group.passages))))
            self.passages.extend(group.passages)
            self.passage_document.extend([d] * len(group.passages))
        self.passage_row = {p.id: i for i, p in enumerate(self.passages)}

    def passage_input(self, row: int) -> str:
        """The passage encoder's input for a passage row: hierarchical title, separator, text."""
        return passage_text(self.passages[row], self.separator)

    def document_input(self, d: int) -> str:
        """The document encoder's input: title, lead and table of contents."""
        return document_representation(self.groups[d].document, self.separator)

    def document_text(self, d: int) -> str:
        """Every passage text of a document (what "contains the answer" is checked on for documents)."""
        return "\n".join(self.passages[r].text for r in self.document_rows[d])

    @cached_property
    def passage_bm25(self) -> BM25Index:
        return BM25Index.build(self.passages, show_progress=self.show_progress)

    @cached_property
    def abstract_bm25(self) -> BM25Index:
        """BM25 over title + lead of every document (abstract negatives)."""
        docs = [Passage(str(d), str(d), g.document.text, (g.document.title,)) for d, g in enumerate(self.groups)]
        return BM25Index.build(docs, show_progress=self.show_progress)

    @cached_property
    def all_text_bm25(self) -> BM25Index:
        """BM25 over title + all passage texts of every document (all-text negatives)."""
        docs = [Passage(str(d), str(d), self.document_text(d), (g.document.title,)) for d, g in enumerate(self.groups)]
        return BM25Index.build(docs, show_progress=self.show_progress)

    def bm25_passages(self, question: str, depth: int) -> list[int]:
        rows, scores = self.passage_bm25.search([question], k=depth)
        return [int(r) for r, s in zip(rows[0], scores[0]) if s > 0]

    def bm25_documents(self, question: str, kind: str, depth: int) -> list[int]:
        index = self.abstract_bm25 if kind == "abstract" else self.all_text_bm25
        rows, scores = index.search([question], k=depth)
        return [int(index.docstore.ids[r]) for r, s in zip(rows[0], scores[0]) if s > 0]


@dataclass
class LabelledQuestion:
    """A training question with its positive passage and document rows and an answer test."""

    query: Query
    positive: int
    document: int
    has_answer: Callable[[str], bool]


def no_answer(text: str) -> bool:
    """The answer test of an unanswerable question (SQuAD 2.0): no text holds an answer."""
    return False


def label_questions(questions: Iterable[Query], corpus: DHRCorpus, gold_field: str = "gold_passage",
                    depth: int = POSITIVE_DEPTH) -> list[LabelledQuestion]:
    """Positives per section 4.3 (gold passage, else top BM25 passage with an answer); questions without one are
    dropped. An unanswerable question (no answers) keeps its gold passage: it still belongs to its paragraph."""
    labelled = []
    for query in questions:
        answers = query.metadata.get("answers") or []
        positive = corpus.passage_row.get(query.metadata.get(gold_field) or "")
        if not answers and positive is None:
            continue
        matches = answer_matcher(answers) if answers else no_answer
        if positive is None:
            positive = next((r for r in corpus.bm25_passages(query.text, depth) if matches(corpus.passages[r].text)),
                            None)
        if positive is not None:
            labelled.append(LabelledQuestion(query, positive, corpus.passage_document[positive], matches))
    return labelled


def passage_negatives(item: LabelledQuestion, corpus: DHRCorpus, kinds: dict[str, int], rng: random.Random,
                      depth: int = NEGATIVE_DEPTH) -> list[int]:
    """Hard negative passage rows: ``kinds`` maps "bm25" / "in-doc" / "in-sec" to how many of each.

    In-Doc/In-Sec slots a document cannot fill are filled by further BM25 negatives.
    """
    unknown = set(kinds) - set(PASSAGE_NEGATIVE_KINDS)
    if unknown:
        raise ConfigError(f"unknown passage negative kind(s) {sorted(unknown)} (known: {PASSAGE_NEGATIVE_KINDS})")

    def negative(row: int) -> bool:
        return row != item.positive and not item.has_answer(corpus.passages[row].text)

    chosen: list[int] = []
    positive_path = corpus.passages[item.positive].title_path
    siblings = [r for r in corpus.document_rows[item.document] if negative(r)]
    pools = {"in-doc": siblings, "in-sec": [r for r in siblings if corpus.passages[r].title_path == positive_path]}
    missing = 0
    for kind in ("in-sec", "in-doc"):
        pool = [r for r in pools[kind] if r not in chosen]
        take = min(kinds.get(kind, 0), len(pool))
        chosen.extend(rng.sample(pool, take))
        missing += kinds.get(kind, 0) - take
    return chosen + first_negatives(corpus.bm25_passages(item.query.text, depth), negative,
                                    kinds.get("bm25", 0) + missing, exclude=chosen)


def document_negatives(item: LabelledQuestion, corpus: DHRCorpus, kinds: dict[str, int],
                       depth: int = NEGATIVE_DEPTH) -> list[int]:
    """Hard negative documents: top BM25 documents ("abstract" or "all-text" index) whose content has no answer."""
    unknown = set(kinds) - set(DOCUMENT_NEGATIVE_KINDS)
    if unknown:
        raise ConfigError(f"unknown document negative kind(s) {sorted(unknown)} (known: {DOCUMENT_NEGATIVE_KINDS})")
    chosen: list[int] = []
    for kind, count in kinds.items():
        taken = 0
        for d in corpus.bm25_documents(item.query.text, kind, depth):
            if taken >= count:
                break
            if d != item.document and d not in chosen and not item.has_answer(corpus.document_text(d)):
                chosen.append(d)
                taken += 1
    return chosen


def first_negatives(ranked: Iterable[int], is_negative: Callable[[int], bool], count: int,
                    exclude: Iterable[int] = ()) -> list[int]:
    """The first ``count`` rows of a ranking that are negatives and not excluded (ANCE-style mining)."""
    excluded, chosen = set(exclude), list[int]()
    for row in ranked:
        if len(chosen) >= count:
            break
        if row not in excluded and is_negative(row):
            chosen.append(row)
    return chosen


def mine_with_ranking(items: Sequence[LabelledQuestion], corpus: DHRCorpus, passage_rankings: Sequence[Sequence[int]],
                      document_rankings: Sequence[Sequence[int]], count: int = 1
                      ) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """Mined negatives per question id from a model's passage and document rankings (rows, best first)."""
    passages: dict[str, list[int]] = {}
    documents: dict[str, list[int]] = {}
    for item, p_rank, d_rank in zip(items, passage_rankings, document_rankings):

        def passage_negative(r: int, item: LabelledQuestion = item) -> bool:
            return not item.has_answer(corpus.passages[r].text)

        def document_negative(d: int, item: LabelledQuestion = item) -> bool:
            return not item.has_answer(corpus.document_text(d))

        passages[item.query.id] = first_negatives(p_rank, passage_negative, count, exclude=[item.positive])
        documents[item.query.id] = first_negatives(d_rank, document_negative, count, exclude=[item.document])
    return passages, documents


def passage_examples(items: Sequence[LabelledQuestion], corpus: DHRCorpus, kinds: dict[str, int], seed: int = 13,
                     mined: dict[str, list[int]] | None = None) -> list[ContrastiveExample]:
    """Training examples of the passage encoder (hard negatives of ``kinds`` plus ``mined`` ones)."""
    rng = random.Random(seed)
    examples = []
    for item in items:
        rows = passage_negatives(item, corpus, kinds, rng)
        rows += [r for r in (mined or {}).get(item.query.id, []) if r not in rows]
        examples.append(ContrastiveExample(item.query.text, corpus.passage_input(item.positive),
                                           [corpus.passage_input(r) for r in rows],
                                           corpus.passages[item.positive].id, [corpus.passages[r].id for r in rows]))
    return examples


def document_examples(items: Sequence[LabelledQuestion], corpus: DHRCorpus, kinds: dict[str, int],
                      mined: dict[str, list[int]] | None = None) -> list[ContrastiveExample]:
    """Training examples of the document encoder (BM25 abstract / all-text negatives plus ``mined`` ones)."""
    examples = []
    for item in items:
        docs = document_negatives(item, corpus, kinds)
        docs += [d for d in (mined or {}).get(item.query.id, []) if d not in docs]
        examples.append(ContrastiveExample(item.query.text, corpus.document_input(item.document),
                                           [corpus.document_input(d) for d in docs],
                                           corpus.groups[item.document].document.id,
                                           [corpus.groups[d].document.id for d in docs]))
    return examples


def rankings_from_run(rows: np.ndarray) -> list[list[int]]:
    """Rows of a search result matrix as lists (FAISS -1 padding removed)."""
    return [[int(r) for r in row if r >= 0] for row in np.asarray(rows)]
