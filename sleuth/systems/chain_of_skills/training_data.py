"""Chain-of-Skills training data (Ma et al., ACL 2023, §3): one example list per skill.

From HotpotQA (questions with supporting facts and context, plus a title -> sentences corpus):

* ``retrieval``: question -> each supporting passage (a context distractor as hard negative);
* ``expanded``: ("question", hop-1 passage) -> hop-2 passage. Bridge questions: hop 1 is the supporting title the
  question mentions (when exactly one is mentioned), else both orders; comparison questions: both orders;
* ``reranking``: question -> supporting passage, the context distractors as hard negatives;
* ``linking``: a supporting title found verbatim (case-insensitive) in the question gives a mention span -> that
  entity's passage;
* ``span``: the question with all its gold mention spans (character offsets).

From MuSiQue (questions with ``question_decomposition`` and 20 paragraphs each; hop k's paragraph is its
``paragraph_support_idx``), see :func:`musique_examples`:

* ``retrieval``: question -> hop-1 paragraph, and each sub-question (``#k`` replaced by hop k's answer) -> its hop's
  paragraph, the question's non-supporting paragraphs as hard negatives;
* ``expanded``: ("question", hop-k paragraph) -> hop-(k+1) paragraph;
* ``reranking``: question -> each supporting paragraph, every non-supporting paragraph as a hard negative;
* ``linking``: a supporting title found in the question -> that paragraph (as HotpotQA); and passage links: hop k's
  answer found in the hop-k paragraph text, when it is the title of the hop-(k+1) paragraph -> that paragraph;
* ``span``: the question, and each hop paragraph text with a passage link, with their mention spans.

From NQ (questions JSONL with ``gold_passage``, corpus JSONL): ``retrieval`` and ``reranking`` examples, hard
negatives being other passages of the gold passage's article (else seeded random passages).

Texts follow the inference stages: context-side passages are "title text" (``DocStore.contents``), reranking and
expanded-query passages "title, text" (``sleuth.systems.chain_of_skills.stages.passage_text``). Ids (passage ids / titles) let the
trainer mask in-batch false negatives.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sleuth.corpus.hotpotqa import read_hotpotqa_corpus, read_hotpotqa_questions
from sleuth.corpus.model import Document, Query
from sleuth.errors import InputError

SKILLS = ("retrieval", "expanded", "reranking", "linking", "span")
Text = str | tuple[str, str]


@dataclass
class CosExample:
    """One training example of ``skill``.

    ``query`` is a text or a (text, text) pair; ``positive``/``negatives`` are candidate texts with ids;
    ``mention`` is the (start, end) character span of the linked mention in ``query`` (linking); ``spans`` are the
    gold mention spans of ``query`` (span proposal)."""

    skill: str
    query: Text
    positive: str = ""
    positive_id: str | None = None
    negatives: list[str] = field(default_factory=list)
    negative_ids: list[str | None] = field(default_factory=list)
    mention: tuple[int, int] | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)


def context_text(doc: Document) -> str:
    """A passage as the context side is indexed: "title text"."""
    return f"{doc.title} {doc.text}" if doc.title else doc.text


def pair_text(doc: Document) -> str:
    """A passage as pair inputs read it: "title, text"."""
    return f"{doc.title}, {doc.text}" if doc.title else doc.text


def mention_span(title: str, question: str) -> tuple[int, int] | None:
    """Character span of ``title`` in ``question`` (case-insensitive, on word boundaries), or None."""
    match = re.search(rf"(?<!\w){re.escape(title)}(?!\w)", question, flags=re.IGNORECASE)
    return (match.start(), match.end()) if match and title.strip() else None


def hotpotqa_examples(questions: Iterable[Query], corpus: dict[str, Document], negatives: int = 1,
                      seed: int = 13) -> dict[str, list[CosExample]]:
    """Examples per skill (keys of :data:`SKILLS`) from HotpotQA questions; ``corpus`` maps title -> Document
    (titles missing from it are skipped). ``negatives`` hard negatives per retrieval/expanded example; reranking
    examples take every context distractor."""
    rng = random.Random(seed)
    out: dict[str, list[CosExample]] = {skill: [] for skill in SKILLS}
    for query in questions:
        gold = [t for t in query.metadata.get("supporting_titles", []) if t in corpus]
        if not gold:
            continue
        distractors = [t for t in query.metadata.get("context_titles", []) if t not in gold and t in corpus]
        rng.shuffle(distractors)
        q = query.text
        for title in gold:
            hard = distractors[:negatives]
            out["retrieval"].append(CosExample("retrieval", q, context_text(corpus[title]), title,
                                               [context_text(corpus[t]) for t in hard], list(hard)))
            out["reranking"].append(CosExample("reranking", q, pair_text(corpus[title]), title,
                                               [pair_text(corpus[t]) for t in distractors], list(distractors)))
        if len(gold) == 2:
            mentioned = [t for t in gold if mention_span(t, q)]
            bridge = query.metadata.get("type") == "bridge" and len(mentioned) == 1
            orders = [(mentioned[0], next(t for t in gold if t != mentioned[0]))] if bridge else [
                (gold[0], gold[1]), (gold[1], gold[0])]
            for first, second in orders:
                hard = distractors[:negatives]
                out["expanded"].append(CosExample("expanded", (q, pair_text(corpus[first])),
                                                  context_text(corpus[second]), second,
                                                  [context_text(corpus[t]) for t in hard], list(hard)))
        add_question_links(out, q, [corpus[title] for title in gold])
    return out


def add_question_links(out: dict[str, list[CosExample]], question: str, documents: Sequence[Document]) -> None:
    """Linking examples for every document whose title the question mentions, and one span-proposal example with
    all those mentions (HotpotQA and MuSiQue alike)."""
    spans = []
    for doc in documents:
        span = mention_span(doc.title, question)
        if span is not None:
            spans.append(span)
            out["linking"].append(CosExample("linking", question, context_text(doc), doc.id, mention=span))
    if spans:
        out["span"].append(CosExample("span", question, spans=sorted(set(spans))))


def load_hotpotqa(questions_path: str | Path, corpus_path: str | Path | None = None) -> tuple[list[Query],
                                                                                              dict[str, Document]]:
    """Questions and title -> Document (from ``corpus_path``, else from the questions' own contexts)."""
    from sleuth.corpus.hotpotqa import hotpotqa_context_documents

    questions = list(read_hotpotqa_questions(questions_path))
    documents = read_hotpotqa_corpus(corpus_path) if corpus_path else hotpotqa_context_documents(questions_path)
    return questions, {doc.id: doc for doc in documents}


HOP_REFERENCE = re.compile(r"#(\d+)")


def sub_question(text: str, answers: Sequence[str]) -> str:
    """A MuSiQue sub-question made self-contained: ``#k`` -> hop k's answer, Wikidata-style "X >> relation" -> "X
    relation"."""
    def answer(match: re.Match) -> str:
        k = int(match.group(1))
        return answers[k - 1] if 1 <= k <= len(answers) else match.group(0)

    return " ".join(HOP_REFERENCE.sub(answer, text).replace(">>", " ").split())


def same_entity(a: str, b: str) -> bool:
    """Title match of an answer and a title: case-insensitive, a leading "the " and a "(...)" suffix ignored."""
    def norm(text: str) -> str:
        text = re.sub(r"\s*\([^)]*\)$", "", text.strip().lower())
        return text[4:] if text.startswith("the ") else text

    return bool(a.strip()) and norm(a) == norm(b)


def musique_examples(questions: Iterable[Query], corpus: dict[str, Document] | None = None, negatives: int = 1,
                     seed: int = 13) -> dict[str, list[CosExample]]:
    """Examples per skill from MuSiQue questions (``read_musique_questions``; see the module docstring).

    ``corpus`` maps paragraph id -> Document (``read_musique_corpus``); paragraphs missing from it come from the
    question's own ``paragraphs``. Hops without a supporting paragraph are skipped, and so are expanded pairs whose
    two hops share a paragraph."""
    from sleuth.corpus.musique import paragraph_document

    rng = random.Random(seed)
    corpus = corpus or {}
    out: dict[str, list[CosExample]] = {skill: [] for skill in SKILLS}
    for query in questions:
        paragraphs = query.metadata.get("paragraphs", [])
        docs = {p["idx"]: corpus.get(p["id"]) or paragraph_document(p["title"], p["text"]) for p in paragraphs}
        supporting = [docs[p["idx"]] for p in paragraphs if p["is_supporting"]]
        distractors = [docs[p["idx"]] for p in paragraphs if not p["is_supporting"]]
        rng.shuffle(distractors)
        hard = distractors[:negatives]
        steps = query.metadata.get("question_decomposition", [])
        answers = [str(step.get("answer", "")) for step in steps]
        hops = [(step, docs.get(step.get("paragraph_support_idx"))) for step in steps]
        q = query.text

        def retrieval(text: str, doc: Document, hard: list[Document] = hard) -> CosExample:
            return CosExample("retrieval", text, context_text(doc), doc.id, [context_text(d) for d in hard],
                              [d.id for d in hard])

        if hops and hops[0][1] is not None:
            out["retrieval"].append(retrieval(q, hops[0][1]))
        for step, doc in hops:
            text = sub_question(str(step.get("question", "")), answers)
            if doc is not None and text:
                out["retrieval"].append(retrieval(text, doc))
        for doc in supporting:
            out["reranking"].append(CosExample("reranking", q, pair_text(doc), doc.id,
                                               [pair_text(d) for d in distractors], [d.id for d in distractors]))
        for (step, first), (_, second) in zip(hops, hops[1:]):
            if first is None or second is None or first.id == second.id:
                continue
            out["expanded"].append(CosExample("expanded", (q, pair_text(first)), context_text(second), second.id,
                                              [context_text(d) for d in hard], [d.id for d in hard]))
            span = mention_span(str(step.get("answer", "")), first.text)
            if span is not None and same_entity(str(step.get("answer", "")), second.title):
                out["linking"].append(CosExample("linking", first.text, context_text(second), second.id,
                                                 mention=span))
                out["span"].append(CosExample("span", first.text, spans=[span]))
        add_question_links(out, q, list(dict((d.id, d) for d in supporting).values()))
    return out


def load_musique(questions_path: str | Path, corpus_path: str | Path | None = None) -> tuple[list[Query],
                                                                                            dict[str, Document]]:
    """MuSiQue questions and paragraph id -> Document (from ``corpus_path``, else from the questions' paragraphs)."""
    from sleuth.corpus.musique import musique_context_documents, read_musique_corpus, read_musique_questions

    questions = list(read_musique_questions(questions_path))
    documents = read_musique_corpus(corpus_path) if corpus_path else musique_context_documents(questions_path)
    return questions, {doc.id: doc for doc in documents}


def read_jsonl(path: str | Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError:
                    raise InputError("not valid JSON", path=f"{path}:{number}") from None
    return rows


def nq_examples(questions_path: str | Path, corpus_path: str | Path, negatives: int = 1,
                limit: int | None = None, seed: int = 13) -> dict[str, list[CosExample]]:
    """NQ ``retrieval`` and ``reranking`` examples (questions with a ``gold_passage`` found in the corpus)."""
    rng = random.Random(seed)
    corpus = {}
    for row in read_jsonl(corpus_path):
        pid = str(row.get("_id", row.get("id", "")))
        corpus[pid] = Document(id=pid, title=row.get("title", ""), text=row.get("text", ""))
    by_title: dict[str, list[str]] = defaultdict(list)
    for pid, doc in corpus.items():
        by_title[doc.title].append(pid)
    ids = sorted(corpus)
    out: dict[str, list[CosExample]] = {"retrieval": [], "reranking": []}
    for row in read_jsonl(questions_path)[:limit]:
        gold = row.get("gold_passage")
        if gold not in corpus:
            continue
        pool = [p for p in by_title[corpus[gold].title] if p != gold]
        rng.shuffle(pool)
        while len(pool) < negatives and len(ids) > 1:
            pick = rng.choice(ids)
            if pick != gold and pick not in pool:
                pool.append(pick)
        hard = pool[:negatives]
        out["retrieval"].append(CosExample("retrieval", row["question"], context_text(corpus[gold]), gold,
                                           [context_text(corpus[p]) for p in hard], list(hard)))
        out["reranking"].append(CosExample("reranking", row["question"], pair_text(corpus[gold]), gold,
                                           [pair_text(corpus[p]) for p in hard], list(hard)))
    return out


def merge(*parts: dict[str, list[CosExample]]) -> dict[str, list[CosExample]]:
    """Example lists per skill, concatenated over sources (skills without examples left out)."""
    out: dict[str, list[CosExample]] = defaultdict(list)
    for part in parts:
        for skill, examples in part.items():
            out[skill].extend(examples)
    return {skill: examples for skill, examples in out.items() if examples}


def counts(data: Mapping[str, Sequence[CosExample]]) -> dict[str, int]:
    return {skill: len(examples) for skill, examples in data.items()}
