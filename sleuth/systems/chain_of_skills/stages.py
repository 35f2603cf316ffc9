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
from sleuth.stages.base import ReadsNoIndex, Stage
from sleuth.stages.hits import input_score_key
from sleuth.stages.run import Hit, Run, rank_hits, ranking_key
from sleuth.systems.chain_of_skills.bucketing import MAX_BATCH_ROWS, MAX_BATCH_TOKENS, forward_batches, token_states
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
    hits.sort(key=ranking_key)
    return hits


def require_candidates(stage: str, candidates: Run | None) -> Run:
    if candidates is None:
        raise ConfigError(f"{stage}: needs candidates from an earlier stage")
    return candidates


class SingleRetrieve(Stage):
    """Skill "retrieval": the question (query expert) against passages (context expert); a first stage."""

    hits_bound, config_stage = "k", "cos_retrieve"

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
        return self.from_vectors(hop1, self.vectors(question, hop1), k)

    def vectors(self, question: str, hop1: Sequence[Hit]) -> np.ndarray:
        """Expanded-query vectors of ("question", "hop-1 passage") pairs (n, dim)."""
        pairs = [(question, passage_text(h)) for h in hop1]
        vectors = np.zeros((len(pairs), self.model.dim), dtype=np.float32)
        for batch in forward_batches(self.model, pairs, "expanded", "query"):
            vectors[batch.rows] = batch.pooled(self.model.config.pooling).float().cpu().numpy()
        return vectors

    def from_vectors(self, hop1: Sequence[Hit], vectors: np.ndarray, k: int | None = None) -> list[list[Hit]]:
        """Hop-2 hits per hop-1 passage from its expanded-query vector, itself excluded."""
        if not hop1:
            return []
        limit = self.k if k is None else k
        positions, scores = self.index.search(vectors, limit + 1)
        return [index_hits(self.index, p, s, "expanded", exclude=h.id)[:limit]
                for h, p, s in zip(hop1, positions, scores)]

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        candidates = require_candidates(self.name, candidates)
        run = Run()
        for query in queries:
            hop1 = candidates.get(query.id, [])
            hits = [h.with_score(h.score, hop1=p.id) for p, found in zip(hop1, self.retrieve(query.text, hop1))
                    for h in found]
            run[query.id] = rank_hits(hits)
        return run


class Rerank(ReadsNoIndex, Stage):
    """Skill "reranking": score = dot(h_CLS, h_first_SEP) over the pair ("question", "title, text").

    For hop 2 the first text is "question [SEP] hop-1 passage", so the first [SEP] still closes the question. All
    pairs of a call are bucketed by token length (``bucketing``); ``max_length`` caps a pair's tokens (default:
    the model's), ``max_tokens`` the padded tokens of one forward batch, ``batch_size`` its rows."""

    hits_bound, config_stage = "rescore", "cos_rerank"

    def __init__(self, model, name: str = "cos_rerank", batch_size: int = MAX_BATCH_ROWS,
                 max_length: int | None = None, max_tokens: int = MAX_BATCH_TOKENS):
        self.model, self.name, self.batch_size = model, name, batch_size
        self.max_length, self.max_tokens = max_length, max_tokens

    def scores(self, firsts: Sequence[str], hits: Sequence[Hit]) -> list[float]:
        """Reranking scores of ``(firsts[i], hits[i])``."""
        return self.score_pairs([(first, passage_text(hit)) for first, hit in zip(firsts, hits)])[0].tolist()

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        """Reranking scores (n,) of text pairs and their pooled vectors (n, dim) from the same forward pass: on
        the same pairs, the vectors are the expanded-query vectors when that skill shares the reranking expert."""
        scores = np.zeros(len(pairs), dtype=np.float32)
        vectors = np.zeros((len(pairs), self.model.dim), dtype=np.float32)
        sep = self.model.tokenizer.sep_token_id
        for batch in forward_batches(self.model, list(pairs), "reranking", "query", self.max_length,
                                     self.max_tokens, self.batch_size):
            scores[batch.rows] = batch.first_sep_scores(sep).float().cpu().numpy()
            vectors[batch.rows] = batch.pooled(self.model.config.pooling).float().cpu().numpy()
        return scores, vectors

    def expanded_vectors_reusable(self, expanded: ExpandedRetrieve) -> bool:
        """True when ``expanded`` would encode (question, passage) exactly as this reranker's forward pass does:
        same model, same expert, same token limit."""
        model = self.model
        return (expanded.model is model and self.max_length in (None, model.config.max_length)
                and model.expert_for("expanded", "query") == model.expert_for("reranking", "query"))

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        candidates = require_candidates(self.name, candidates)
        run = Run()
        for query in queries:
            hits = candidates.get(query.id, [])
            values = self.scores([query.text] * len(hits), hits)
            out = [h.with_score(s, rerank=s, **{input_score_key(self.name): h.score}) for h, s in zip(hits, values)]
            run[query.id] = rank_hits(out)
        return run


class EntityLink(Stage):
    """Skill "linking": mentions proposed by the span head (span expert), each mention vector = mean of its start
    and end token states (linking query expert), searched in the entity-description index (linking context
    expert). An entity's score is its best mention's; ``extras["mention"]`` names that mention. The linking pass
    runs only over the texts with a proposed mention, and all mentions of a call are searched at once."""

    def __init__(self, model, span_head: SpanProposalHead, index: SkillIndex, k: int = 5,
                 max_span_tokens: int | None = None, name: str = "cos_link"):
        from sleuth.systems.chain_of_skills.span_head import MAX_SPAN_TOKENS

        self.model, self.span_head, self.index, self.k, self.name = model, span_head, index, k, name
        self.max_span_tokens = MAX_SPAN_TOKENS if max_span_tokens is None else max_span_tokens

    def link(self, texts: Sequence[str], k: int | None = None, exclude: Sequence[str | None] | None = None
             ) -> list[list[Hit]]:
        """Linked entities of each text: top ``k`` per mention, merged by best score, best first; ``exclude[i]``
        (e.g. text i's own passage id) is never linked from text i and does not use up one of the ``k``."""
        from sleuth.systems.chain_of_skills.span_proposal import propose_spans

        texts = list(texts)
        if not texts:
            return []
        span_states = token_states(self.model, texts, "span", "query")
        spans = [propose_spans(self.span_head, states, text, self.max_span_tokens)
                 for text, states in zip(texts, span_states)]
        linked = [i for i, found in enumerate(spans) if found]
        if not linked:
            return [[] for _ in texts]
        # mention states: the span pass itself when span proposal and linking share an expert (the no-expert
        # model), else one linking pass over the texts that have a mention
        same_expert = self.model.expert_for("span", "query") == self.model.expert_for("linking", "query")
        link_states = ([span_states[i] for i in linked] if same_expert
                       else token_states(self.model, [texts[i] for i in linked], "linking", "query"))
        vectors = np.concatenate([np.stack([(states.states[s.start] + states.states[s.end]) / 2 for s in spans[i]])
                                  for i, states in zip(linked, link_states)])
        limit = self.k if k is None else k
        # one more per mention when an id is excluded, so that a mention of the text's own entity (a passage naming
        # its title) still yields ``limit`` links, as expanded retrieval does for its hop-1 passage
        positions, scores = self.index.search(vectors, limit + 1 if exclude else limit)
        results: list[list[Hit]] = [[] for _ in texts]
        row = 0
        for i in linked:
            best: dict[str, Hit] = {}
            skip = exclude[i] if exclude else None
            for span in spans[i]:
                for hit in index_hits(self.index, positions[row], scores[row], "link", exclude=skip)[:limit]:
                    if hit.id not in best or hit.score > best[hit.id].score:
                        best[hit.id] = hit.with_score(hit.score, mention=span.text)
                row += 1
            results[i] = rank_hits(best.values())
        return results

    def transform(self, queries: Sequence[Query], candidates: Run | None = None) -> Run:
        if candidates is not None:
            raise ConfigError(f"{self.name}: entity linking is a first stage; it takes no candidates")
        return Run({q.id: hits for q, hits in zip(queries, self.link([q.text for q in queries]))})
