"""Learning-rate schedules: ``f(optimizer, total_steps, ...) -> LRScheduler``, stepped per
optimizer step. They scale the optimizer's tensor LR in place, so a compiled step never
sees a new Python float."""
from __future__ import annotations

import math

from torch.optim.lr_scheduler import LambdaLR


def constant(optimizer, total_steps: int) -> LambdaLR:
    return LambdaLR(optimizer, lambda step: 1.0)


def warmup_cosine(optimizer, total_steps: int, warmup_steps: int = 0,
                  min_factor: float = 0.0) -> LambdaLR:
    """Linear warm-up to the base LR, then cosine decay to ``min_factor`` of it."""
    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_factor + (1 - min_factor) * 0.5 * (1 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, factor)


def exponential(optimizer, total_steps: int, final_factor: float = 0.1) -> LambdaLR:
    """Exponential decay reaching ``final_factor`` of the base LR at the last step."""
    gamma = final_factor ** (1.0 / max(1, total_steps))
    return LambdaLR(optimizer, lambda step: gamma ** step)
