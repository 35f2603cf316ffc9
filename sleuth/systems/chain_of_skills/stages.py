"""Chain-of-Skills skills as stages (Ma et al., ACL 2023): single retrieval, expanded-query retrieval,
reranking and entity linking, all through one ``MultiExpertEncoder`` routed by skill.

Hits carry their skill's score in ``extras`` under the skill name ("retrieval", "expanded", "rerank", "link").
Passages are shown to the encoder as "title, text" in pairs and "title text" in indexes (``DocStore.contents``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from sleuth.corpus.model import Query
from sleuth.errors import ConfigError
from sleuth.stages.base import Stage
from sleuth.stages.run import Hit, Run
from sleuth.systems.chain_of_skills.skill_index import SkillIndex

if TYPE_CHECKING:  # torch is imported only when a span head is built
    from sleuth.systems.chain_of_skills.span_head import SpanProposalHead


def passage_text(hit: Hit) -> str:
    """A passage as the pair encoders read it: "title, text" (just the text when untitled)."""
    return f"{hit.title}, {hit.text or ''}" if hit.title else (hit.text or "")


def index_hits(index: SkillIndex, positions: np.ndarray, scores: np.ndarray, skill: str,
               exclude: str | None = None) -> list[Hit]:
    """Hits of one search row, best first, with the score also in ``extras[skill]``; ``exclude`` drops an id."""
    store, hits = index.docstore, []
    for row, score in zip(np.asarray(positions).tolist(), np.asarray(scores).tolist()):
        if row < 0 or store.ids[row] == exclude:
            continue
        hits.append(Hit(store.ids[row], float(score), store.doc_ids[row], store.titles[row], store.texts[row],
                        {skill: float(score)}))
    hits.sort(key=lambda h: (-h.score, h.id))
    return hits


def require_candidates(stage: str, candidates: Run | None) -> Run:
    if candidates is None:
        raise ConfigError(f"{stage}: needs candidates from an earlier stage")
    return candidates


class SingleRetrieve(Stage):
    """Skill "retrieval": the question (query expert) against passages (context expert); a first stage."""

    def __init__(self, model, index: SkillIndex, k: int = 1000, name: str = "cos_retrieve"):
        self.model, self.index, self.k, self.name = model, index, k, name

    def retrieve(self, texts: Sequence[str], k: int | None = None) -> list[list[Hit]]:
        vectors = self.model.encode(list(texts), "retrieval", side="query")
        positions, scores = self.index.search(vectors, self.k if k is None else k)
        return [index_hits(self.index, p, s, "retrieval") for p, s in zip(positions, scores)]

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is not None:
            raise ConfigError(f"{self.name}: the retrieval skill is a first stage; it takes no candidates")
        return Run({q.id: hits for q, hits in zip(queries, self.retrieve([q.text for q in queries]))})


class ExpandedRetrieve(Stage):
    """Skill "expanded": ("question", "hop-1 passage") as a text pair against passages; the hop-1 passage is
    never its own hop 2. As a stage it expands every candidate and returns the hop-2 hits (``extras["hop1"]``)."""

    def __init__(self, model, index: SkillIndex, k: int = 50, name: str = "cos_expanded"):
        self.model, self.index, self.k, self.name = model, index, k, name

    def retrieve(self, question: str, hop1: Sequence[Hit], k: int | None = None) -> list[list[Hit]]:
        if not hop1:
            return []
        vectors = self.model.encode([(question, passage_text(h)) for h in hop1], "expanded", side="query")
        positions, scores = self.index.search(vectors, (self.k if k is None else k) + 1)
        limit = self.k if k is None else k
        return [index_hits(self.index, p, s, "expanded", exclude=h.id)[:limit]
                for h, p, s in zip(hop1, positions, scores)]

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        candidates = require_candidates(self.name, candidates)
        run = Run()
        for query in queries:
            hop1 = candidates.get(query.id, [])
            hits = [h.with_score(h.score, hop1=p.id) for p, found in zip(hop1, self.retrieve(query.text, hop1))
                    for h in found]
            run[query.id] = sorted(hits, key=lambda h: (-h.score, h.id))
        return run


class Rerank(Stage):
    """Skill "reranking": score = dot(h_CLS, h_first_SEP) over the pair ("question", "title, text").

    For hop 2 the first text is "question [SEP] hop-1 passage", so the first [SEP] still closes the question."""

    def __init__(self, model, name: str = "cos_rerank", batch_size: int = 32):
        self.model, self.name, self.batch_size = model, name, batch_size

    def scores(self, firsts: Sequence[str], hits: Sequence[Hit]) -> list[float]:
        """Reranking scores of ``(firsts[i], hits[i])``."""
        if not hits:
            return []
        pairs = [(first, passage_text(hit)) for first, hit in zip(firsts, hits)]
        sep = self.model.tokenizer.sep_token
        values = []
        for states in self.model.token_states(pairs, "reranking", side="query", batch_size=self.batch_size):
            first_sep = states.tokens.index(sep)
            values.append(float(states.states[0] @ states.states[first_sep]))
        return values

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        candidates = require_candidates(self.name, candidates)
        run = Run()
        for query in queries:
            hits = candidates.get(query.id, [])
            values = self.scores([query.text] * len(hits), hits)
            out = [h.with_score(s, rerank=s, **{f"{self.name}_input_score": h.score}) for h, s in zip(hits, values)]
            run[query.id] = sorted(out, key=lambda h: (-h.score, h.id))
        return run


class EntityLink(Stage):
    """Skill "linking": mentions proposed by the span head (span expert), each mention vector = mean of its start
    and end token states (linking query expert), searched in the entity-description index (linking context
    expert). An entity's score is its best mention's; ``extras["mention"]`` names that mention."""

    def __init__(self, model, span_head: SpanProposalHead, index: SkillIndex, k: int = 5,
                 max_span_tokens: int | None = None, name: str = "cos_link"):
        from sleuth.systems.chain_of_skills.span_head import MAX_SPAN_TOKENS

        self.model, self.span_head, self.index, self.k, self.name = model, span_head, index, k, name
        self.max_span_tokens = MAX_SPAN_TOKENS if max_span_tokens is None else max_span_tokens

    def link(self, texts: Sequence[str], k: int | None = None, exclude: Sequence[str | None] | None = None
             ) -> list[list[Hit]]:
        """Linked entities of each text: top ``k`` per mention, merged by best score, best first."""
        texts = list(texts)
        if not texts:
            return []
        span_states = self.model.token_states(texts, "span", side="query")
        same_expert = self.model.expert_for("span", "query") == self.model.expert_for("linking", "query")
        # one forward pass when span proposal and mention encoding share an expert (e.g. the no-expert model)
        link_states = span_states if same_expert else self.model.token_states(texts, "linking", side="query")
        results: list = []
        for i, (text, spans_in, states_in) in enumerate(zip(texts, span_states, link_states)):
            spans = self.span_head.propose(spans_in, text, self.max_span_tokens)
            if not spans:
                results.append([])
                continue
            vectors = np.stack([(states_in.states[s.start] + states_in.states[s.end]) / 2 for s in spans])
            positions, scores = self.index.search(vectors, self.k if k is None else k)
            best: dict[str, Hit] = {}
            skip = exclude[i] if exclude else None
            for span, p, s in zip(spans, positions, scores):
                for hit in index_hits(self.index, p, s, "link", exclude=skip):
                    if hit.id not in best or hit.score > best[hit.id].score:
                        best[hit.id] = hit.with_score(hit.score, mention=span.text)
            results.append(sorted(best.values(), key=lambda h: (-h.score, h.id)))
        return results

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is not None:
            raise ConfigError(f"{self.name}: entity linking is a first stage; it takes no candidates")
        return Run({q.id: hits for q, hits in zip(queries, self.link([q.text for q in queries]))})
