"""Checkpoints: plain tensors and built-in types only, loaded with ``weights_only=True``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from treeattn.write_aside import write_aside


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write atomically: a stop in the middle of saving leaves the previous file intact."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with write_aside(path) as partial:
        torch.save(state, partial)


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """Load without unpickling arbitrary objects, so a checkpoint from elsewhere is safe."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception:  # torch raises several types for foreign or corrupt files
        # Not torch's own message: it advises loading the file unsafely, which a file from
        # elsewhere must never be.
        raise ValueError(
            f"{path}: not a treeattn checkpoint (not a file torch.save wrote, or one holding "
            "Python objects besides tensors and plain values, which are never loaded)"
        ) from None


def task_state(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """The task's own part of a checkpoint (its vocabularies). Checkpoints written before
    tasks had a part of their own kept it at the top level, beside the weights."""
    return checkpoint.get("task_state", checkpoint)
