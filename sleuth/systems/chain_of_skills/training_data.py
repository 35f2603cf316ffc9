"""Chain-of-Skills training data (Ma et al., ACL 2023, §3): one example list per skill.

From HotpotQA (questions with supporting facts and context, plus a title -> sentences corpus):

* ``retrieval``: question -> each supporting passage (a context distractor as hard negative);
* ``expanded``: ("question", hop-1 passage) -> hop-2 passage. Bridge questions: hop 1 is the supporting title the
  question mentions (when exactly one is mentioned), else both orders; comparison questions: both orders;
* ``reranking``: question -> supporting passage, the context distractors as hard negatives; and hop 2 as the chain
  reranks it: "question [SEP] hop-1 passage" -> hop-2 passage (the orders of ``expanded``), the same negatives;
* ``linking``: a supporting title found verbatim (case-insensitive) in the question gives a mention span -> that
  entity's passage;
* ``span``: the question with all its gold mention spans (character offsets).

From MuSiQue (questions with ``question_decomposition`` and 20 paragraphs each; hop k's paragraph is its
``paragraph_support_idx``), see :func:`musique_examples`:

* ``retrieval``: question -> hop-1 paragraph, and each sub-question (``#k`` replaced by hop k's answer) -> its hop's
  paragraph, the question's non-supporting paragraphs as hard negatives;
* ``expanded``: ("question", hop-k paragraph) -> hop-(k+1) paragraph;
* ``reranking``: question -> each supporting paragraph, every non-supporting paragraph as a hard negative; and
  "question [SEP] hop-k paragraph" -> hop-(k+1) paragraph;
* ``linking``: a supporting title found in the question -> that paragraph (as HotpotQA); and passage links: hop k's
  answer found in the hop-k paragraph text, when it is the title of the hop-(k+1) paragraph -> that paragraph;
* ``span``: the question, and each hop paragraph text with a passage link, with their mention spans.

From 2WikiMultihopQA (HotpotQA's layout plus ``evidences`` triples, :func:`twowiki_examples`): HotpotQA's examples,
hop 1 -> hop 2 being the supporting titles an evidence triple joins ("X, director, Y": X then Y; comparison
questions: both orders; bridge-comparison questions have two such pairs), plus MuSiQue's passage links (the triple's
object found in hop 1's paragraph and naming hop 2's).

From NQ (questions JSONL with ``gold_passage``, corpus JSONL; ``split`` "train" = the seeded train side that
``sleuth dhr`` uses, 80 %): ``retrieval`` and ``reranking`` examples, hard negatives being other passages of the gold
passage's article (else seeded random passages).

From SQuAD (v1.1 / v2.0 JSON, :func:`squad_examples`): ``retrieval`` and ``reranking`` examples, question -> its
paragraph, hard negatives being other paragraphs of the same article (unanswerable v2.0 questions were written
against their paragraph too, so they count).

From OTT-QA (tables with hyperlinked cells and the linked passages, :func:`ottqa_examples`): a table row ("title;
header: cell; ...") with a cell that links to one passage gives ``linking`` (the cell as mention -> the passage,
other passages of the table as hard negatives) and ``span`` (the row with its linked cells); questions of a traced
file (``dev.traced.json``) whose answer is a linked passage give ``expanded`` ("question", "title, row") -> passage.

Every example carries its ``source`` (hotpotqa, 2wiki, musique, nq, squad, ottqa, wikipedia): the trainer batches by source.

Texts follow the inference stages: context-side passages are "title text" (``DocStore.contents``), reranking and
expanded-query passages "title, text" (``sleuth.systems.chain_of_skills.stages.passage_text``). Ids (passage ids / titles) let the
trainer mask in-batch false negatives.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sleuth.corpus.hotpotqa import read_hotpotqa_corpus, read_hotpotqa_questions
from sleuth.corpus.jsonl import iter_jsonl
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
    source: str = "data"  # the data set it comes from (batches hold one source)


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


def tagged(data: dict[str, list[CosExample]], source: str) -> dict[str, list[CosExample]]:
    """``data`` with every example's ``source`` set."""
    for examples in data.values():
        for example in examples:
            example.source = source
    return data


def hop2_query(question: str, hop1: Document) -> str:
    """The first text of a hop-2 reranking pair, as the chain writes it: "question [SEP] title, text"."""
    return f"{question} [SEP] {pair_text(hop1)}"


def hotpotqa_orders(query: Query, gold: Sequence[str]) -> list[tuple[str, str]]:
    """HotpotQA's (hop 1, hop 2) title pairs of a question with two supporting titles: a bridge question's mentioned
    title first (when exactly one is mentioned), else both orders."""
    if len(gold) != 2:
        return []
    mentioned = [t for t in gold if mention_span(t, query.text)]
    if query.metadata.get("type") == "bridge" and len(mentioned) == 1:
        return [(mentioned[0], next(t for t in gold if t != mentioned[0]))]
    return [(gold[0], gold[1]), (gold[1], gold[0])]


def hotpotqa_examples(questions: Iterable[Query], corpus: dict[str, Document], negatives: int = 1,
                      seed: int = 13, orders: Callable[[Query, Sequence[str]], list[tuple[str, str]]] =
                      hotpotqa_orders) -> dict[str, list[CosExample]]:
    """Examples per skill (keys of :data:`SKILLS`) from HotpotQA questions; ``corpus`` maps title -> Document
    (titles missing from it are skipped). ``negatives`` hard negatives per retrieval/expanded example; reranking
    examples take every context distractor. ``orders`` gives a question's (hop 1, hop 2) supporting title pairs
    (:func:`hotpotqa_orders`; 2WikiMultihopQA's come from its evidences, :func:`twowiki_examples`)."""
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
        if len(gold) >= 2:
            for first, second in orders(query, gold):
                hard = distractors[:negatives]
                out["expanded"].append(CosExample("expanded", (q, pair_text(corpus[first])),
                                                  context_text(corpus[second]), second,
                                                  [context_text(corpus[t]) for t in hard], list(hard)))
                out["reranking"].append(CosExample("reranking", hop2_query(q, corpus[first]),
                                                   pair_text(corpus[second]), second,
                                                   [pair_text(corpus[t]) for t in distractors], list(distractors)))
        add_question_links(out, q, [corpus[title] for title in gold])
    return tagged(out, "hotpotqa")


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


def add_passage_link(out: dict[str, list[CosExample]], first: Document, second: Document, name: str) -> None:
    """A passage link from hop 1 to hop 2 (MuSiQue, 2WikiMultihopQA): when ``name`` (hop 1's answer, the entity
    that leads on) is found in hop 1's text and names hop 2's passage, a linking example (that mention -> hop 2)
    and a span example (hop 1's text with the mention)."""
    span = mention_span(name, first.text)
    if span is not None and same_entity(name, second.title):
        out["linking"].append(CosExample("linking", first.text, context_text(second), second.id, mention=span))
        out["span"].append(CosExample("span", first.text, spans=[span]))


def load_hotpotqa(questions_paths: str | Path | Sequence[str | Path],
                  corpus_paths: str | Path | Sequence[str | Path] | None = None) -> tuple[list[Query],
                                                                                         dict[str, Document]]:
    """Questions of one or several HotpotQA-format files (2WikiMultihopQA too; a question id seen before is
    skipped) and title -> Document: the title -> sentences corpora of ``corpus_paths`` first, then the questions'
    own context paragraphs for titles the corpora lack (first occurrence wins)."""
    from sleuth.corpus.hotpotqa import hotpotqa_context_documents

    def paths(given: str | Path | Sequence[str | Path] | None) -> list[str | Path]:
        return [] if given is None else [given] if isinstance(given, (str, Path)) else list(given)

    questions: dict[str, Query] = {}
    corpus: dict[str, Document] = {}
    for path in paths(corpus_paths):
        for doc in read_hotpotqa_corpus(path):
            corpus.setdefault(doc.id, doc)
    for path in paths(questions_paths):
        for query in read_hotpotqa_questions(path):
            questions.setdefault(query.id, query)
        for doc in hotpotqa_context_documents(path):
            corpus.setdefault(doc.id, doc)
    return list(questions.values()), corpus


def twowiki_orders(query: Query, gold: Sequence[str]) -> list[tuple[str, str]]:
    """2WikiMultihopQA's (hop 1, hop 2) pairs: an evidence triple whose subject and object are both supporting
    titles (compositional, inference, bridge-comparison: "X, director, Y" -> X then Y); without one (comparison),
    HotpotQA's rule (both orders of two titles)."""
    pairs = []
    for subject, _, obj in query.metadata.get("evidences", []):
        first = next((t for t in gold if same_entity(subject, t)), None)
        second = next((t for t in gold if same_entity(obj, t)), None)
        if first is not None and second is not None and first != second and (first, second) not in pairs:
            pairs.append((first, second))
    return pairs or hotpotqa_orders(query, gold)


def twowiki_examples(questions: Iterable[Query], corpus: dict[str, Document], negatives: int = 1,
                     seed: int = 13) -> dict[str, list[CosExample]]:
    """Examples per skill from 2WikiMultihopQA questions (``load_hotpotqa`` reads them): HotpotQA's builder with
    hop pairs from the evidences (:func:`twowiki_orders`), plus a passage link per pair whose evidence object is
    found in hop 1's paragraph (as MuSiQue's)."""
    questions = list(questions)
    out = hotpotqa_examples(questions, corpus, negatives, seed, orders=twowiki_orders)
    for query in questions:
        gold = [t for t in query.metadata.get("supporting_titles", []) if t in corpus]
        evidences = query.metadata.get("evidences", [])
        for first, second in twowiki_orders(query, gold) if len(gold) >= 2 else []:
            name = next((o for s, _, o in evidences if same_entity(s, first) and same_entity(o, second)), None)
            if name is not None:
                add_passage_link(out, corpus[first], corpus[second], name)
    return tagged(out, "2wiki")


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
            out["reranking"].append(CosExample("reranking", hop2_query(q, first), pair_text(second), second.id,
                                               [pair_text(d) for d in distractors], [d.id for d in distractors]))
            add_passage_link(out, first, second, str(step.get("answer", "")))
        add_question_links(out, q, list(dict((d.id, d) for d in supporting).values()))
    return tagged(out, "musique")


def load_musique(questions_path: str | Path, corpus_path: str | Path | None = None) -> tuple[list[Query],
                                                                                            dict[str, Document]]:
    """MuSiQue questions and paragraph id -> Document (from ``corpus_path``, else from the questions' paragraphs)."""
    from sleuth.corpus.musique import musique_context_documents, read_musique_corpus, read_musique_questions

    questions = list(read_musique_questions(questions_path))
    documents = read_musique_corpus(corpus_path) if corpus_path else musique_context_documents(questions_path)
    return questions, {doc.id: doc for doc in documents}


NQ_SPLITS = ("all", "train", "dev")


def nq_examples(questions_path: str | Path, corpus_path: str | Path, negatives: int = 1,
                limit: int | None = None, seed: int = 13, split: str = "all") -> dict[str, list[CosExample]]:
    """NQ ``retrieval`` and ``reranking`` examples (questions with a ``gold_passage`` found in the corpus); ``split``
    "train" / "dev" keeps one side of the seeded 80/20 split of ``sleuth dhr`` (``split_questions``, seed 13)."""
    if split not in NQ_SPLITS:
        raise InputError(f"unknown NQ split '{split}' (use one of {', '.join(NQ_SPLITS)})")
    rng = random.Random(seed)
    corpus = {}
    for _, row in iter_jsonl(corpus_path):
        pid = str(row.get("_id", row.get("id", "")))
        corpus[pid] = Document(id=pid, title=row.get("title", ""), text=row.get("text", ""))
    by_title: dict[str, list[str]] = defaultdict(list)
    for pid, doc in corpus.items():
        by_title[doc.title].append(pid)
    ids = sorted(corpus)
    out: dict[str, list[CosExample]] = {"retrieval": [], "reranking": []}
    rows = [row for _, row in iter_jsonl(questions_path)]
    if split != "all":
        from sleuth.corpus.question_split import split_questions

        train, dev = split_questions([Query(id=str(r.get("id", i)), text="") for i, r in enumerate(rows)])
        keep = {q.id for q in (train if split == "train" else dev)}
        rows = [r for i, r in enumerate(rows) if str(r.get("id", i)) in keep]
    for row in rows[:limit]:
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
    return tagged(out, "nq")


def squad_examples(path: str | Path, negatives: int = 1, rerank_negatives: int = 8, seed: int = 13,
                   limit: int | None = None) -> dict[str, list[CosExample]]:
    """SQuAD ``retrieval`` and ``reranking`` examples (see the module docstring): ``negatives`` /
    ``rerank_negatives`` other paragraphs of the same article per question (seeded)."""
    from sleuth.corpus.squad import read_squad_documents, read_squad_questions

    rng = random.Random(seed)
    paragraphs = {doc.id: doc for doc in read_squad_documents(path)}
    by_article: dict[str, list[str]] = defaultdict(list)
    for doc in paragraphs.values():
        by_article[doc.metadata["article"]].append(doc.id)
    out: dict[str, list[CosExample]] = {"retrieval": [], "reranking": []}
    for query in list(read_squad_questions(path))[:limit]:
        gold = query.metadata["gold_passage"]
        pool = [p for p in by_article[query.metadata["article"]] if p != gold]
        picked = rng.sample(pool, min(max(negatives, rerank_negatives), len(pool)))
        hard, rerank = picked[:negatives], picked[:rerank_negatives]
        out["retrieval"].append(CosExample("retrieval", query.text, context_text(paragraphs[gold]), gold,
                                           [context_text(paragraphs[p]) for p in hard], list(hard)))
        out["reranking"].append(CosExample("reranking", query.text, pair_text(paragraphs[gold]), gold,
                                           [pair_text(paragraphs[p]) for p in rerank], list(rerank)))
    return tagged(out, "squad")


def table_row_text(title: str, header: Sequence[str], cells: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """An OTT-QA row as "title; header: cell; header: cell" and each cell's character span in it (empty cells:
    (-1, -1))."""
    text, spans = title, []
    for i, cell in enumerate(cells):
        if not cell:
            spans.append((-1, -1))
            continue
        text += f"; {header[i] if i < len(header) and header[i] else f'column {i + 1}'}: "
        spans.append((len(text), len(text) + len(cell)))
        text += cell
    return text, spans


def ottqa_examples(folder: str | Path, questions_path: str | Path | None = None, negatives: int = 1,
                   rows_per_table: int = 5, seed: int = 13) -> dict[str, list[CosExample]]:
    """OTT-QA ``linking``, ``span`` and ``expanded`` examples (see the module docstring) from ``folder/tables`` and
    ``folder/passages``; at most ``rows_per_table`` rows with links per table (sampled); ``questions_path`` (a traced
    question file such as dev.traced.json) adds the ``expanded`` examples."""
    from sleuth.corpus.jsonfile import load_json_object
    from sleuth.corpus.ottqa import link_title, read_ottqa_questions, read_ottqa_tables

    rng = random.Random(seed)
    folder = Path(folder)
    out: dict[str, list[CosExample]] = {"linking": [], "span": [], "expanded": []}
    tables = {}
    for table in read_ottqa_tables(folder):
        passages_file = folder / "passages" / f"{table.id}.json"
        linked = load_json_object(passages_file) if passages_file.is_file() else {}
        entities = {link: context_text(Document(link, link_title(link), text)) for link, text in linked.items()
                    if isinstance(text, str)}
        tables[table.id] = (table, entities)
        rows = []
        for cells, links in zip(table.metadata["rows"], table.metadata["links"]):
            text, spans = table_row_text(table.title, table.metadata["header"], cells)
            single = [(span, cell_links[0]) for span, cell_links in zip(spans, links)
                      if len(cell_links) == 1 and span[0] >= 0 and cell_links[0] in entities]
            complete = all(len(cell_links) <= 1 for cell_links in links)
            if single:
                rows.append((text, single, complete))
        for text, single, complete in rng.sample(rows, min(rows_per_table, len(rows))):
            if complete:
                out["span"].append(CosExample("span", text, spans=[span for span, _ in single]))
            span, link = rng.choice(single)
            pool = [other for other in entities if other != link]
            hard = rng.sample(pool, min(negatives, len(pool)))
            out["linking"].append(CosExample("linking", text, entities[link], link, [entities[h] for h in hard],
                                             list(hard), mention=span))
    if questions_path is not None:
        for query in read_ottqa_questions(questions_path):
            found = tables.get(query.metadata["table_id"])
            if found is None:
                continue
            table, entities = found
            for _, (row, _), link, kind in query.metadata.get("answer_nodes", [])[:1]:
                if kind != "passage" or link not in entities or not 0 <= row < len(table.metadata["rows"]):
                    continue
                text, _ = table_row_text(table.title, table.metadata["header"], table.metadata["rows"][row])
                pool = [other for other in entities if other != link]
                hard = rng.sample(pool, min(negatives, len(pool)))
                out["expanded"].append(CosExample("expanded", (query.text, text), entities[link], link,
                                                  [entities[h] for h in hard], list(hard)))
    return tagged(out, "ottqa")


def merge(*parts: dict[str, list[CosExample]]) -> dict[str, list[CosExample]]:
    """Example lists per skill, concatenated over sources (skills without examples left out)."""
    out: dict[str, list[CosExample]] = defaultdict(list)
    for part in parts:
        for skill, examples in part.items():
            out[skill].extend(examples)
    return {skill: examples for skill, examples in out.items() if examples}


def counts(data: Mapping[str, Sequence[CosExample]]) -> dict[str, int]:
    return {skill: len(examples) for skill, examples in data.items()}
