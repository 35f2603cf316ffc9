"""Chain-of-Skills span proposal: score formula, candidates, greedy selection, loss, and a tiny trained head."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import torch

from sleuth.systems.chain_of_skills.model import MultiExpertEncoder, TokenStates
from sleuth.systems.chain_of_skills.span_head import Span, SpanProposalHead, candidate_spans, is_numeric, select_spans

TINY = Path(importlib.util.find_spec("cognition").submodule_search_locations[0]) / "model"


def test_score_is_anchor_dot_tanh_projection_minus_cls():
    head = SpanProposalHead(4, seed=1)
    states = torch.randn(6, 4, generator=torch.Generator().manual_seed(2))
    w, s, h = head.project.weight.detach().numpy(), head.anchor.detach().numpy(), states.numpy()
    spans = [(1, 1), (1, 3), (2, 5)]
    expected = [s @ np.tanh(w @ np.concatenate([h[i], h[j]])) - s @ h[0] for i, j in spans]
    got = head.scores(states, torch.tensor(spans)).detach().numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_candidates_are_all_spans_of_at_most_ten_tokens():
    spans = candidate_spans(range(1, 13))  # 12 text tokens after [CLS]
    assert len(spans) == 3 * 10 + sum(range(1, 10)) == 75
    assert max(j - i + 1 for i, j in spans) == 10 and (1, 10) in spans and (1, 11) not in spans
    assert candidate_spans([1, 2], max_tokens=1) == [(1, 1), (2, 2)]


def test_numeric_spans():
    for text in ("1984", "3.5", "1,200", "12/03", "50 %"):
        assert is_numeric(text), text
    for text in ("1984 Olympics", "B-52", "Apollo 11", ""):
        assert not is_numeric(text), text


def test_greedy_non_overlapping_selection_drops_rejected_and_numeric():
    spans = [Span(1, 3, 0, 12, "New York City", 2.0), Span(2, 3, 4, 12, "York City", 3.0),
             Span(1, 1, 0, 3, "New", 1.5), Span(5, 5, 20, 24, "1984", 9.0), Span(7, 8, 30, 38, "Dr. Who", -0.1),
             Span(9, 9, 40, 45, "Paris", 0.5)]
    kept = select_spans(spans)
    assert [s.text for s in kept] == ["New", "York City", "Paris"]


def test_loss_matches_the_two_softmax_terms():
    head = SpanProposalHead(4, seed=3)
    states = torch.randn(8, 4, generator=torch.Generator().manual_seed(4))
    gold, negatives = [(1, 2), (4, 4)], [(2, 3), (5, 7)]
    sim = head.span_similarity(states, torch.tensor(gold + negatives)).detach().numpy()
    cls = float(head.cls_similarity(states).detach())

    def nll(first: float, rest: list[float]) -> float:
        values = np.array([first, *rest])
        return float(np.log(np.exp(values).sum()) - first)

    rest = [cls, *sim[2:]]
    l_pos = np.mean([nll(sim[0], rest), nll(sim[1], rest)])
    l_cls = nll(cls, list(sim[2:]))
    assert float(head.loss(states, gold, negatives).detach()) == pytest.approx((l_pos + l_cls) / 2, rel=1e-5)
    assert float(head.loss(states, [], negatives).detach()) == pytest.approx(l_cls, rel=1e-5)


def _token_span(tokens: TokenStates, start: int, end: int) -> tuple[int, int]:
    """Token positions covering characters [start, end)."""
    inside = [k for k, (a, b) in enumerate(tokens.offsets.tolist()) if b > a and a >= start and b <= end]
    return inside[0], inside[-1]


def test_tiny_trained_head_proposes_the_gold_entities():
    encoder = MultiExpertEncoder.from_backbone(TINY)
    data = [("Barack Obama was born in Hawaii in 1961.", ["Barack Obama", "Hawaii"]),
            ("The Eiffel Tower is in Paris.", ["Eiffel Tower", "Paris"]),
            ("it rained all day and we stayed inside.", []),
            ("Marie Curie worked in Warsaw and Paris.", ["Marie Curie", "Warsaw", "Paris"])]
    rows = encoder.token_states([text for text, _ in data], "span")
    examples = []
    for (text, entities), tokens in zip(data, rows):
        positions = [k for k, (a, b) in enumerate(tokens.offsets.tolist()) if b > a]
        gold = []
        for entity in entities:
            start = text.index(entity)
            gold.append(_token_span(tokens, start, start + len(entity)))
        negatives = [span for span in candidate_spans(positions) if span not in gold]
        examples.append((torch.as_tensor(tokens.states), gold, negatives))
    head = SpanProposalHead(encoder.dim, seed=0)
    assert [[s.text for s in head.propose(tokens, text)] for (text, _), tokens in zip(data, rows)] != \
        [entities for _, entities in data]
    optimiser = torch.optim.Adam(head.parameters(), lr=0.01)
    for _ in range(60):
        optimiser.zero_grad()
        loss = sum(head.loss(states, gold, negatives) for states, gold, negatives in examples) / len(examples)
        loss.backward()
        optimiser.step()
    for (text, entities), tokens in zip(data, rows):
        assert [span.text for span in head.propose(tokens, text)] == entities, text
