"""Token-length bucketing of the Chain-of-Skills encoder passes on real HotpotQA dev paragraphs (untrained MiniLM
experts): batch shapes, and scores, vectors and token states equal to the unbatched per-text computation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from sleuth.corpus.model import Passage
from sleuth.errors import SleuthError
from sleuth.stages.run import Hit
from sleuth.systems.chain_of_skills.bucketing import forward_batches, token_batches, token_states
from sleuth.systems.chain_of_skills.model import MultiExpertEncoder
from sleuth.systems.chain_of_skills.skill_index import SkillIndex
from sleuth.systems.chain_of_skills.span_head import SpanProposalHead
from sleuth.systems.chain_of_skills.span_proposal import factorisable, propose_spans
from sleuth.systems.chain_of_skills.stages import ExpandedRetrieve, Rerank, passage_text


@pytest.fixture(scope="module")
def hotpot(two_dev_questions):
    """Two dev questions, their 20 context paragraphs as hits, and the untrained multi-expert model."""
    questions, docs = two_dev_questions
    hits = [Hit(d.id, 0.0, d.id, d.id, "".join(d.metadata["sentences"]).strip()) for d in docs]
    return questions, hits, MultiExpertEncoder.from_backbone("minilm")


def passages(hits: list[Hit]) -> list[Passage]:
    return [Passage(h.id, h.id, h.text or "", (h.title or h.id,)) for h in hits]


def per_pair_rerank(model, first: str, hit: Hit) -> float:
    """The reranking score computed for one pair alone: dot(h_CLS, h_first_SEP) of its token states."""
    (states,) = model.token_states([(first, passage_text(hit))], "reranking", side="query")
    return float(states.states[0] @ states.states[states.tokens.index(model.tokenizer.sep_token)])


def test_token_batches_respect_the_budget_longest_first():
    lengths = [5, 200, 17, 256, 256, 3, 90, 90, 90, 1, 40]
    batches = token_batches(lengths, max_tokens=400, max_rows=3)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    firsts = [lengths[b[0]] for b in batches]
    assert firsts == sorted(firsts, reverse=True)
    for batch in batches:
        assert len(batch) <= 3 and lengths[batch[0]] == max(lengths[i] for i in batch)
        assert len(batch) * lengths[batch[0]] <= 400 or len(batch) == 1
    assert token_batches([500, 10], max_tokens=100) == [[0], [1]]  # a text over the budget gets its own batch
    with pytest.raises(SleuthError, match="batch limits"):
        token_batches(lengths, max_tokens=0)
    with pytest.raises(SleuthError, match="min_fill=1.5"):
        token_batches(lengths, min_fill=1.5)


def test_token_batches_close_before_a_much_shorter_text():
    # 30 hop-1 passages fit one 8,192-token batch; padded to the longest they would be 58 % padding
    lengths = [256, 250, 200, 190, 150, 100, 90, 40]
    assert token_batches(lengths, min_fill=0) == [list(range(8))]
    assert token_batches(lengths, min_fill=0.75) == [[0, 1, 2], [3, 4], [5, 6], [7]]
    batches = token_batches(lengths)  # MIN_FILL 0.85
    assert batches == [[0, 1], [2, 3], [4], [5, 6], [7]]
    for batch in batches:
        assert min(lengths[i] for i in batch) >= 0.85 * lengths[batch[0]]
    padded = sum(len(b) * lengths[b[0]] for b in batches)
    assert padded < 0.85 * len(lengths) * max(lengths) and padded <= 1.25 * sum(lengths)


def test_batched_reranking_equals_the_per_pair_scores(hotpot):
    questions, hits, model = hotpot
    question = questions[0].text
    hop1 = hits[:10]
    # hop-2 triples as the chain builds them: "question [SEP] hop-1 passage" against a hop-2 passage
    triples = [(f"{question} [SEP] {passage_text(a)}", b) for a, b in itertools.permutations(hits[:4], 2)]
    firsts = [question] * len(hop1) + [first for first, _ in triples]
    seconds = hop1 + [b for _, b in triples]
    expected = np.array([per_pair_rerank(model, f, h) for f, h in zip(firsts, seconds)])
    small = Rerank(model, max_tokens=1024, batch_size=5)  # several buckets of mixed pairs and triples
    batches = list(forward_batches(model, [(f, passage_text(h)) for f, h in zip(firsts, seconds)], "reranking",
                                   max_tokens=1024, max_rows=5))
    assert len(batches) > 3 and all(b.input_ids.numel() <= 1024 or len(b.rows) == 1 for b in batches)
    np.testing.assert_allclose(small.scores(firsts, seconds), expected, rtol=1e-5, atol=0)  # scores ~10-25
    np.testing.assert_allclose(Rerank(model).scores(firsts, seconds), expected, rtol=1e-5, atol=0)
    assert np.ptp(expected) > 1  # the scores differ between pairs: the comparison can fail
    assert Rerank(model).scores([], []) == []


def test_the_hop1_reranking_pass_gives_the_expanded_query_vectors(hotpot):
    questions, hits, model = hotpot
    question, hop1 = questions[1].text, hits[:6]
    index = SkillIndex.build(passages(hits), model, "retrieval")
    expanded, rerank = ExpandedRetrieve(model, index, k=4), Rerank(model)
    _, vectors = rerank.score_pairs([(question, passage_text(h)) for h in hop1])
    alone = np.stack([model.encode([(question, passage_text(h))], "expanded", side="query")[0] for h in hop1])
    np.testing.assert_allclose(vectors, alone, rtol=1e-5, atol=1e-5)
    assert rerank.expanded_vectors_reusable(expanded)
    assert not Rerank(model, max_length=64).expanded_vectors_reusable(expanded)  # other truncation
    reused = expanded.from_vectors(hop1, vectors)
    assert [[h.id for h in found] for found in reused] == [[h.id for h in found]
                                                             for found in expanded.retrieve(question, hop1)]
    assert all(h.id not in {x.id for x in found} for h, found in zip(hop1, reused))


def test_bucketed_token_states_equal_the_model_s(hotpot):
    questions, hits, model = hotpot
    texts = [q.text for q in questions] + [h.text or "" for h in hits[:5]]
    mine, theirs = token_states(model, texts, "span"), model.token_states(texts, "span")
    for a, b in zip(mine, theirs):
        assert a.tokens == b.tokens
        np.testing.assert_array_equal(a.offsets, b.offsets)
        np.testing.assert_allclose(a.states, b.states, rtol=1e-5, atol=1e-5)


def test_factorised_span_proposal_equals_the_head_s(hotpot):
    questions, hits, model = hotpot
    texts = [q.text for q in questions] + [h.text or "" for h in hits[:8]]
    proposed = 0
    for seed in (0, 1):
        head = SpanProposalHead(model.dim, seed=seed)
        assert factorisable(head)
        for text, states in zip(texts, token_states(model, texts, "span")):
            spans = propose_spans(head, states, text)
            assert [(s.start, s.end, s.text) for s in spans] == [(s.start, s.end, s.text)
                                                                 for s in head.propose(states, text)]
            assert np.allclose([s.score for s in spans], [s.score for s in head.propose(states, text)], atol=1e-5)
            proposed += len(spans)
    assert proposed > len(texts)  # the seeded untrained heads accept spans: the comparison can fail
