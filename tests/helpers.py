"""Shared test helpers."""

from __future__ import annotations

from typing import Any

from treeattn.engine.config import Config
from treeattn.engine.trainer import train as train_task
from treeattn.tasks import make_task


def train(cfg: Config, **kwargs: Any) -> dict[str, Any]:
    """Train the task ``cfg`` names (``treeattn.engine.trainer.train`` takes a task)."""
    return train_task(make_task(cfg), **kwargs)
