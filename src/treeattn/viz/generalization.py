"""Hierarchical generalization against updates: one line per run."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402

from treeattn.viz.scores import save_figure  # noqa: E402


def plot_generalization(
    runs: Sequence[tuple[str, list[int], list[float], list[float]]],
    share: str,
    split: str,
    path: str | Path,
) -> Path:
    """Each run as ``(name, updates, share, full-sequence accuracy)`` on ``split``: the
    share (``main_aux``, ``agree_subject``) as a solid line, full-sequence accuracy dashed
    in the same colour. Written whole or not at all; the format follows the extension."""
    if not runs:
        raise ValueError("no run to plot")
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"{path}: the directory {path.parent} does not exist")
    fig, ax = plt.subplots(figsize=(6.5, 3.8), dpi=120)
    for k, (name, steps, shares, sequence) in enumerate(runs):
        colour = f"C{k % 10}"
        ax.plot(steps, shares, "-o", color=colour, markersize=3, label=f"{name}: {share}")
        ax.plot(steps, sequence, "--", color=colour, linewidth=1, label=f"{name}: full sequence")
    ax.axhline(50, color="grey", linewidth=0.5)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("update")
    ax.set_ylabel(f"{split} (%)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return save_figure(fig, path)
