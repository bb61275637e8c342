"""Learning-rate schedules, as factors of ``train.lr`` for ``LambdaLR`` (update k from 0)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from treeattn.engine.config import TrainConfig


def warmup_linear_decay(
    warmup: int, total: int, min_ratio: float, init_ratio: float = 0.0
) -> Callable[[int], float]:
    """Linear warm-up from ``init_ratio`` that reaches 1 at update ``warmup - 1``, then linear
    decay to ``min_ratio`` at update ``total``."""

    def factor(step: int) -> float:
        if step < warmup:
            return init_ratio + (1.0 - init_ratio) * (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 1.0 - (1.0 - min_ratio) * progress

    return factor


def warmup_inverse_sqrt(warmup: int, init_ratio: float = 0.0) -> Callable[[int], float]:
    """fairseq's ``inverse_sqrt``: update k < ``warmup`` runs at ``init + k (1 - init) /
    warmup`` (the first at ``init_ratio``), later ones at ``sqrt(warmup / k)``."""

    def factor(step: int) -> float:
        if step < warmup:
            return init_ratio + (1.0 - init_ratio) * step / warmup
        return math.sqrt(warmup / step)

    return factor


def schedule_factor(train: TrainConfig, total_updates: int) -> Callable[[int], float]:
    """The configured schedule; ``total_updates`` is where the linear decay ends."""
    init_ratio = train.warmup_init_lr / train.lr if train.lr > 0 else 0.0
    if train.schedule == "inverse_sqrt":
        return warmup_inverse_sqrt(train.warmup_steps, init_ratio)
    return warmup_linear_decay(train.warmup_steps, total_updates, train.min_lr_ratio, init_ratio)


def group_factors(
    train: TrainConfig, total_updates: int, groups: list[dict[str, Any]]
) -> list[Callable[[int], float]]:
    """One schedule a parameter group (``Task.parameter_groups``): the configured one, with
    the group's own ``warmup_steps`` where it has them; ``warmup_init_lr`` keeps its ratio
    to ``train.lr``."""
    factors = []
    for group in groups:
        warmup = group.get("warmup_steps")
        own = train if warmup is None else dataclasses.replace(train, warmup_steps=warmup)
        factors.append(schedule_factor(own, total_updates))
    return factors
