"""The optimisation step every sleuth trainer shares: AdamW with linear warm-up and decay, gradient clipping."""

from __future__ import annotations

from typing import Any


class Optimisation:
    """AdamW over ``model``'s parameters with a linear warm-up / decay schedule over ``total_steps``."""

    def __init__(self, model: Any, lr: float, total_steps: int, warmup_ratio: float = 0.1, weight_decay: float = 0.0,
                 max_grad_norm: float = 1.0):
        import torch
        from transformers import get_linear_schedule_with_warmup

        self.model, self.max_grad_norm = model, max_grad_norm
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, int(warmup_ratio * total_steps), total_steps)

    def step(self, loss: Any) -> float:
        """Back-propagate ``loss``, clip gradients, update weights and schedule; return the loss value."""
        import torch

        self.optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_grad_norm)
        self.optimizer.step()
        self.scheduler.step()
        return float(loss.detach())
