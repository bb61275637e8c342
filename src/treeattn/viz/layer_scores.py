"""A score by layer: one line per method, the chosen layer marked, baselines as
horizontal lines."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402

from treeattn.viz.scores import save_figure  # noqa: E402

BASELINE_STYLES = ("--", ":", "-.")


def plot_layer_scores(
    curves: Sequence[tuple[str, Sequence[int], Sequence[float], int]],
    dev: Sequence[tuple[str, Sequence[int], Sequence[float]]],
    baselines: dict[str, float],
    title: str,
    label: str,
    path: str | Path,
) -> Path:
    """``curves``: (name, layers, score at each layer, chosen layer), drawn solid with the
    chosen layer circled; ``dev``: the same methods' scores where the layer was chosen,
    drawn faint; ``baselines``: name -> score, horizontal lines. Written whole or not at
    all; the image format follows the file's extension."""
    if not curves:
        raise ValueError("no scores to plot")
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"{path}: the directory {path.parent} does not exist")
    fig, ax = plt.subplots(figsize=(6.5, 3.8), dpi=120)
    colors = {}
    for name, layers, values, chosen in curves:
        (line,) = ax.plot(layers, values, marker="o", markersize=3, label=name)
        colors[name] = line.get_color()
        ax.plot(
            chosen,
            values[list(layers).index(chosen)],
            "o",
            markersize=10,
            markerfacecolor="none",
            color=line.get_color(),
        )
    for name, layers, values in dev:
        ax.plot(layers, values, color=colors.get(name), alpha=0.35, linewidth=1)
    for (name, value), style in zip(baselines.items(), BASELINE_STYLES * 3, strict=False):
        ax.axhline(value, color="gray", linestyle=style, linewidth=1, label=name)
    ax.set_xlabel("layer (circled: chosen on dev; faint: dev)")
    ax.set_ylabel(label)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    return save_figure(fig, path)
