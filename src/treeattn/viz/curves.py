"""Learning curves from a run's metrics.jsonl."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402


def plot_learning_curve(
    metrics_path: str | Path,
    png_path: str | Path,
    title: str = "",
    split: str = "dev",
    metric: str = "accuracy",
) -> None:
    """Training loss (left axis) and ``metric`` on ``split`` (right axis) against optimizer
    steps."""
    records = [
        json.loads(line)
        for line in Path(metrics_path).read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    train = [(r["step"], r["train_loss"]) for r in records if "train_loss" in r]
    scored = [(r["step"], r[metric]) for r in records if r.get("split") == split]
    fig, loss_axis = plt.subplots(figsize=(6, 3.5), dpi=120)
    if train:
        loss_axis.plot(*zip(*train, strict=True), color="tab:blue", linewidth=1, label="train loss")
    loss_axis.set_xlabel("step")
    loss_axis.set_ylabel("train loss", color="tab:blue")
    score_axis = loss_axis.twinx()
    if scored:
        score_axis.plot(*zip(*scored, strict=True), color="tab:red", marker="o")
    score_axis.set_ylabel(f"{split} {metric}", color="tab:red")
    loss_axis.set_title(title)
    fig.tight_layout()
    fig.savefig(png_path)
    plt.close(fig)
