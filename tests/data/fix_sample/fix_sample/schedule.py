"""Learning-rate schedules as LambdaLR multipliers. (This file ends without a final newline.)"""

from __future__ import annotations

import math

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR


def cosine_with_warmup(optimizer: Optimizer, warmup_steps: int, total_steps: int, min_ratio: float = 0.01) -> LambdaLR:
    """Linear warmup from 0 to the base rate, then a cosine decay down to `min_ratio` of it."""

    def multiplier(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(warmup_steps, 1)
        progress = min((step - warmup_steps) / max(total_steps - warmup_steps, 1), 1.0)
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))

    return LambdaLR(optimizer, multiplier)


def step_decay(optimizer: Optimizer, milestones: list[int], gamma: float = 0.1) -> LambdaLR:
    """Multiply the rate by `gamma` at each milestone (in steps)."""
    milestones = sorted(milestones)

    def multiplier(step: int) -> float:
        return gamma ** sum(step >= milestone for milestone in milestones)

    return LambdaLR(optimizer, multiplier)


def exponential_warmup(optimizer: Optimizer, warmup_steps: int) -> LambdaLR:
    """1 - exp(-t / warmup): a smooth warmup that approaches the base rate (Ma and Yarats, 2021)."""

    def multiplier(step: int) -> float:
        return 1.0 - math.exp(-(step + 1) / max(warmup_steps, 1))

    return LambdaLR(optimizer, multiplier)