"""Language models' syntactic scores by phenomenon: BLiMP accuracy per phenomenon and
SyntaxGym score per circuit, one bar per model, side by side."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402

from treeattn.viz.scores import save_figure  # noqa: E402

BLIMP_CHANCE = 50.0  # two sentences a pair


def _panels(results: Sequence[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, list[str]]]:
    """(benchmark key, breakdown key, categories) of each panel some result has."""
    panels = []
    for key, breakdown, title in (
        ("blimp", "by_phenomenon", "BLiMP accuracy by phenomenon"),
        ("syntaxgym", "by_circuit", "SyntaxGym score by circuit"),
    ):
        names = sorted({c for _, r in results if key in r for c in r[key][breakdown]})
        if names:
            panels.append((key, breakdown, title, names))
    return panels


def plot_phenomena(results: Sequence[tuple[str, dict[str, Any]]], path: str | Path) -> Path:
    """One panel for BLiMP's phenomena and one for SyntaxGym's circuits (where the results
    have them), one bar per model (``name, LmEvaluation.to_dict()``) in each row, the
    overall score as the last row. Written whole or not at all; the image format follows
    the file's extension."""
    if not results:
        raise ValueError("no result to plot")
    panels = _panels(results)
    if not panels:
        raise ValueError("the results hold neither BLiMP nor SyntaxGym scores to plot")
    path = Path(path)
    if not path.parent.is_dir():
        raise ValueError(f"{path}: the directory {path.parent} does not exist")
    rows = max(len(names) for *_, names in panels) + 1
    fig, axes = plt.subplots(
        1, len(panels), figsize=(6.5 * len(panels), 0.32 * rows * len(results) + 1.8), dpi=120
    )
    axes = [axes] if len(panels) == 1 else list(axes)
    height = 0.8 / len(results)
    for ax, (key, breakdown, title, names) in zip(axes, panels, strict=True):
        labels = [*names, "overall"]
        for m, (model, result) in enumerate(results):
            found = result.get(key)
            if found is None:
                continue
            values = [
                found[breakdown][n]["accuracy" if key == "blimp" else "score"]
                if n in found[breakdown]
                else 0.0
                for n in names
            ] + [found["overall"]]
            offsets = [i - 0.4 + height * (m + 0.5) for i in range(len(labels))]
            ax.barh(offsets, values, height=height, label=model)
        if key == "blimp":
            ax.axvline(BLIMP_CHANCE, color="grey", linestyle=":", linewidth=1)
        ax.set_yticks(range(len(labels)), labels=[n.replace("_", " ") for n in labels])
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("%")
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
    if len(results) > 1:
        axes[0].legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return save_figure(fig, path)
