"""Runs of several configurations side by side: each seed's score as a dot, the mean and
one standard deviation as a bar."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402

from treeattn.write_aside import write_aside


def plot_scores(
    scores: Sequence[tuple[str, Sequence[float]]], label: str, path: str | Path
) -> Path:
    """One row per configuration (``name, [score of each run]``), the first at the top.
    Written whole or not at all; the image format follows the file's extension."""
    if not scores or any(not values for _, values in scores):
        raise ValueError("every configuration needs at least one run to plot")
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"{path}: the directory {path.parent} does not exist")
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(scores) + 1.2), dpi=120)
    for row, (_, values) in enumerate(scores):
        mean = statistics.mean(values)
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        ax.errorbar(mean, row, xerr=sd, fmt="|", color="black", markersize=14, capsize=4)
        ax.plot(values, [row] * len(values), "o", color="tab:blue", alpha=0.7)
    ax.set_yticks(range(len(scores)), labels=[name for name, _ in scores])
    ax.invert_yaxis()
    ax.set_xlabel(f"{label} (dots: runs; bar: mean ± sd)")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return save_figure(fig, path)


def save_figure(fig: plt.Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` whole or not at all (beside it, then renamed), and close
    it; the image format follows the file's extension."""
    try:
        with write_aside(path) as partial:
            fig.savefig(partial, format=path.suffix.lstrip(".") or plt.rcParams["savefig.format"])
    finally:
        plt.close(fig)
    return path
