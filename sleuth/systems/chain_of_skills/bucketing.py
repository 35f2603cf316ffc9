"""Token-length bucketing for the multi-expert encoder at inference: every text of a call is tokenised once, texts
are sorted by their token count and cut into batches under a budget of padded tokens, and each batch is padded
only to its own longest text. One call covers a whole hop (all its pairs or triples), so a batch never mixes a
20-token question with a 256-token triple, and padding (masked: the states do not depend on it) costs little. A
batch also closes when the next text is shorter than ``min_fill`` of its longest: without that, 30 hop-1 passages of
40-256 tokens (under the budget together) went through linking as one batch padded to 256, 58 % padding.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sleuth.errors import SleuthError
from sleuth.stages.cancel import check_cancelled

#: padded tokens per forward batch (rows x longest row); 8,192 = 32 triples of 256 tokens
MAX_BATCH_TOKENS = 8192
#: rows per forward batch at most (short texts)
MAX_BATCH_ROWS = 128
#: a text joins a batch only if it has at least this share of the batch's longest text's tokens (<= 15 % padding);
#: at the paper's limits 0.85 was faster than 0.75 (bench/results/cos_bench_paper_merged.md)
MIN_FILL = 0.85

Text = str | tuple[str, str]


@dataclass
class Batch:
    """One forward batch: positions of its rows in the caller's list, the padded input and the last hidden states."""

    rows: list[int]
    input_ids: Any  # (b, n) long
    attention_mask: Any  # (b, n) long
    states: Any  # (b, n, d) float
    offsets: list[list[tuple[int, int]]] | None = None  # per row, unpadded, when asked for

    def pooled(self, pooling: str) -> Any:
        """(b, d) text vectors as ``MultiExpertEncoder.encode`` pools them: [CLS], or the masked mean."""
        if pooling == "cls":
            return self.states[:, 0]
        mask = self.attention_mask.unsqueeze(-1).to(self.states.dtype)
        return (self.states * mask).sum(1) / mask.sum(1).clamp(min=1)

    def first_sep_scores(self, sep_id: int) -> Any:
        """(b,) dot(h_CLS, h_first_SEP): the reranking score of each row."""
        import torch

        first_sep = (self.input_ids == sep_id).int().argmax(dim=1)
        rows = torch.arange(len(first_sep), device=self.states.device)
        return (self.states[:, 0] * self.states[rows, first_sep]).sum(-1)


def token_batches(lengths: Sequence[int], max_tokens: int = MAX_BATCH_TOKENS,
                  max_rows: int = MAX_BATCH_ROWS, min_fill: float | None = None) -> list[list[int]]:
    """Index batches, longest first; a batch grows while (rows + 1) x its longest length stays within
    ``max_tokens`` (a single longer text still gets a batch of its own), it has fewer than ``max_rows`` rows and the
    next text has at least ``min_fill`` (default :data:`MIN_FILL`) x its longest length (0: no such limit)."""
    min_fill = MIN_FILL if min_fill is None else min_fill
    if max_tokens < 1 or max_rows < 1 or not 0 <= min_fill <= 1:
        raise SleuthError(f"batch limits must be max_tokens >= 1, max_rows >= 1, 0 <= min_fill <= 1, got "
                          f"max_tokens={max_tokens}, max_rows={max_rows}, min_fill={min_fill}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    for i in order:
        longest = lengths[batches[-1][0]] if batches else 0
        if (batches and len(batches[-1]) < max_rows and (len(batches[-1]) + 1) * longest <= max_tokens
                and lengths[i] >= min_fill * longest):
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def forward_batches(model: Any, texts: Sequence[Text], skill: str, side: str = "query",
                    max_length: int | None = None, max_tokens: int = MAX_BATCH_TOKENS,
                    max_rows: int = MAX_BATCH_ROWS, offsets: bool = False, min_fill: float | None = None
                    ) -> Iterator[Batch]:
    """Forward passes of ``texts`` (all single texts or all pairs) through ``model`` (a ``MultiExpertEncoder``)
    routed by ``skill`` and ``side``, in token-length buckets; pairs are truncated longest-first to
    ``max_length`` tokens (default: the model's)."""
    import torch

    if not texts:
        return
    pairs = [isinstance(t, tuple) for t in texts]
    if any(pairs) and not all(pairs):
        raise SleuthError("a batch must hold either all single texts or all (text, text) pairs")
    first = [t[0] if isinstance(t, tuple) else t for t in texts]
    second = [t[1] for t in texts] if all(pairs) else None
    limit = model.config.max_length if max_length is None else max_length
    encoded = model.tokenizer(first, second, truncation=True, max_length=limit, return_offsets_mapping=offsets,
                              return_attention_mask=False)
    ids: list[list[int]] = encoded["input_ids"]
    types: list[list[int]] | None = encoded.get("token_type_ids")
    pad = model.tokenizer.pad_token_id or 0
    expert = model.expert_for(skill, side)
    for rows in token_batches([len(i) for i in ids], max_tokens, max_rows, min_fill):
        check_cancelled()  # a search given up (past the service's time limit) stops between batches
        width = len(ids[rows[0]])
        input_ids = torch.full((len(rows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        type_ids = torch.zeros((len(rows), width), dtype=torch.long)
        for r, i in enumerate(rows):
            n = len(ids[i])
            input_ids[r, :n] = torch.tensor(ids[i])
            mask[r, :n] = 1
            if types is not None:
                type_ids[r, :n] = torch.tensor(types[i])
        input_ids, mask, type_ids = (t.to(model.device) for t in (input_ids, mask, type_ids))
        with torch.inference_mode():
            states = model.forward(input_ids, mask, expert, type_ids if types is not None else None)
        yield Batch(rows, input_ids, mask, states,
                    [list(map(tuple, encoded["offset_mapping"][i])) for i in rows] if offsets else None)


def token_states(model: Any, texts: Sequence[Text], skill: str, side: str = "query") -> list[Any]:
    """``MultiExpertEncoder.token_states`` of ``texts`` through bucketed forward passes: per text its wordpiece
    tokens, character offsets and states, padding removed."""
    import numpy as np

    from sleuth.systems.chain_of_skills.model import TokenStates

    result: list[Any] = [None] * len(texts)
    for batch in forward_batches(model, texts, skill, side, offsets=True):
        lengths = batch.attention_mask.sum(1).tolist()
        states = batch.states.float().cpu().numpy()
        for row, (position, length) in enumerate(zip(batch.rows, lengths)):
            ids = batch.input_ids[row, :length].tolist()
            offsets = np.asarray(batch.offsets[row] if batch.offsets else [], dtype=np.int64).reshape(-1, 2)
            result[position] = TokenStates(model.tokenizer.convert_ids_to_tokens(ids), offsets, states[row, :length])
    return result
