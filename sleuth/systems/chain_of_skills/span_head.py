"""The Chain-of-Skills entity span proposal head (Ma et al., ACL 2023, §3.1).

A span (i, j) of token states h is represented by m = tanh(W [h_i; h_j]) (W: 2d -> d, no bias); a learned anchor
s scores it as s . m. The [CLS] state is the learned threshold: a span's score is s . m - s . h_CLS and the span
is accepted when that score is > 0. Candidates are all spans of at most 10 tokens over the text's own tokens
(special tokens and padding excluded); accepted spans are kept greedily by score without overlap, and spans whose
text is purely numeric (digits and number punctuation only) are dropped. Training loss = mean of L_pos (gold span
against [CLS] + negative spans) and L_cls ([CLS] against the negative spans), each a softmax cross-entropy.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from sleuth.errors import SleuthError
from sleuth.systems.chain_of_skills.model import TokenStates

MAX_SPAN_TOKENS = 10
NUMERIC = re.compile(r"[\d\s.,:/%+\-]*\d[\d\s.,:/%+\-]*")


@dataclass(frozen=True)
class Span:
    """A proposed span: token positions (inclusive), character offsets in the text, its text and score."""

    start: int
    end: int
    char_start: int
    char_end: int
    text: str
    score: float


def candidate_spans(positions: Sequence[int], max_tokens: int = MAX_SPAN_TOKENS) -> list[tuple[int, int]]:
    """All (i, j) with i <= j among consecutive ``positions`` and at most ``max_tokens`` tokens long."""
    positions = list(positions)
    return [(positions[a], positions[b]) for a in range(len(positions))
            for b in range(a, min(a + max_tokens, len(positions)))]


def is_numeric(text: str) -> bool:
    """True for purely numeric span text such as "1984", "3.5", "1,200" or "12/03"."""
    return NUMERIC.fullmatch(text) is not None


def select_spans(spans: Sequence[Span]) -> list[Span]:
    """Accepted (score > 0), non-numeric spans kept greedily by descending score without overlap, in text order."""
    kept: list[Span] = []
    for span in sorted(spans, key=lambda s: (-s.score, s.start, s.end)):
        if span.score <= 0 or is_numeric(span.text):
            continue
        if all(span.end < other.start or span.start > other.end for other in kept):
            kept.append(span)
    return sorted(kept, key=lambda s: s.start)


class SpanProposalHead(nn.Module):
    """Parameters W (2d -> d) and anchor s (d); scores spans of one sequence of token states."""

    def __init__(self, dim: int, seed: int | None = None):
        super().__init__()
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        self.project = nn.Linear(2 * dim, dim, bias=False)
        self.anchor = nn.Parameter(0.02 * torch.randn(dim, generator=generator))
        if generator is not None:
            with torch.no_grad():
                bound = (1.0 / (2 * dim)) ** 0.5
                self.project.weight.uniform_(-bound, bound, generator=generator)

    def span_similarity(self, states: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
        """s . tanh(W [h_i; h_j]) for spans (m, 2) of states (n, d): shape (m,)."""
        pairs = torch.cat([states[spans[:, 0]], states[spans[:, 1]]], dim=-1)
        return torch.tanh(self.project(pairs)) @ self.anchor

    def cls_similarity(self, states: torch.Tensor) -> torch.Tensor:
        """s . h_CLS (the threshold), a scalar."""
        return states[0] @ self.anchor

    def scores(self, states: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
        """Span scores relative to the [CLS] threshold: > 0 means accepted."""
        return self.span_similarity(states, spans) - self.cls_similarity(states)

    def loss(self, states: torch.Tensor, gold: Sequence[tuple[int, int]],
             negatives: Sequence[tuple[int, int]]) -> torch.Tensor:
        """(L_pos + L_cls) / 2 for one sequence; L_pos averages over the gold spans."""
        cls = self.cls_similarity(states).reshape(1)
        negative = (self.span_similarity(states, torch.tensor(list(negatives), dtype=torch.long))
                    if negatives else states.new_zeros(0))
        target = torch.zeros(1, dtype=torch.long, device=states.device)
        l_cls = nn.functional.cross_entropy(torch.cat([cls, negative]).unsqueeze(0), target)
        if not gold:
            return l_cls
        positive = self.span_similarity(states, torch.tensor(list(gold), dtype=torch.long))
        others = torch.cat([cls, negative]).unsqueeze(0).expand(len(gold), -1)
        l_pos = nn.functional.cross_entropy(torch.cat([positive.unsqueeze(1), others], dim=1),
                                            target.expand(len(gold)))
        return (l_pos + l_cls) / 2

    def propose(self, tokens: TokenStates, text: str, max_tokens: int = MAX_SPAN_TOKENS) -> list[Span]:
        """Entity spans of ``text`` from its token states (``MultiExpertEncoder.token_states`` of one text)."""
        positions = [k for k, (a, b) in enumerate(np.asarray(tokens.offsets).tolist()) if b > a]
        candidates = candidate_spans(positions, max_tokens)
        if not candidates:
            return []
        states = torch.as_tensor(tokens.states, dtype=self.anchor.dtype, device=self.anchor.device)
        with torch.no_grad():
            values = self.scores(states, torch.tensor(candidates, dtype=torch.long)).tolist()
        spans = []
        for (i, j), score in zip(candidates, values):
            start, end = int(tokens.offsets[i][0]), int(tokens.offsets[j][1])
            spans.append(Span(i, j, start, end, text[start:end], float(score)))
        return select_spans(spans)


SPAN_HEAD_FILE = "span_head.safetensors"


def save_span_head(head: SpanProposalHead, directory: str | Path) -> Path:
    """Write the head's weights into a (multi-expert model) directory as ``span_head.safetensors``."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous().cpu() for k, v in head.state_dict().items()}, str(directory / SPAN_HEAD_FILE))
    return directory / SPAN_HEAD_FILE


def load_span_head(directory: str | Path, dim: int, device: str = "cpu") -> SpanProposalHead | None:
    """The head saved in ``directory`` (None when it holds none); unreadable or mismatched weights raise one
    SleuthError line."""
    from safetensors.torch import load_file

    path = Path(directory) / SPAN_HEAD_FILE
    if not path.is_file():
        return None
    head = SpanProposalHead(dim)
    try:
        head.load_state_dict(load_file(str(path)), strict=True)
    except Exception as error:  # safetensors / torch raise their own error types
        raise SleuthError(f"{path}: not a span head of dimension {dim} "
                          f"({str(error).splitlines()[0] if str(error) else type(error).__name__})") from None
    return head.to(device).eval()


def model_span_head(model_path: str, dim: int, device: str = "cpu", seed: int = 0) -> SpanProposalHead:
    """The span head of a model (``model.model_path``'s result): the one saved in its directory, else an untrained
    head seeded with ``seed`` (always for the untrained "minilm" model)."""
    from sleuth.systems.chain_of_skills.model import UNTRAINED

    saved = load_span_head(model_path, dim, device) if model_path != UNTRAINED else None
    return saved if saved is not None else SpanProposalHead(dim, seed=seed).to(device)
