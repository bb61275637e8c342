"""Hierarchical generalization over training: every checkpoint a run kept
(``train.keep_every``: step-K.pt) scored as ``treeattn.analysis.generalization`` scores
one, so that gen main-auxiliary (or agree-subject) share can be drawn against updates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from treeattn.analysis.generalization import (
    SplitScores,
    headline_share,
    load_string_model,
    score_trained,
    strings_of,
    table_header,
    table_row,
)
from treeattn.analysis.induction_curve import kept_checkpoints


@dataclass(frozen=True)
class CurvePoint:
    """One kept checkpoint: its update and its scores on each split read."""

    step: int
    splits: list[SplitScores]


@dataclass(frozen=True)
class GeneralizationCurve:
    """A run's kept checkpoints, in order of updates; ``headline``: the share that says
    the hierarchical rule was learned (``headline_share``)."""

    run: str
    task: str
    transform_word: str
    headline: str
    points: list[CurvePoint]

    def format(self) -> str:
        lines = [f"{self.run}: McCoy {self.task}, greedy outputs at each kept checkpoint"]
        for k, split in enumerate(s.split for s in self.points[0].splits):
            lines.append(table_header(self.transform_word, self.points[0].splits[k].shares, "step"))
            lines += [table_row(str(p.step), p.splits[k]) for p in self.points]
            lines[-len(self.points) - 1] += f"   ({split})"
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def series(self, split: str, metric: str) -> tuple[list[int], list[float]]:
        """(updates, values) of ``metric`` (a share, or ``sequence_accuracy``) on ``split``."""
        steps, values = [], []
        for point in self.points:
            for scores in point.splits:
                if scores.split == split:
                    steps.append(point.step)
                    found = scores.shares.get(metric)
                    values.append(scores.sequence_accuracy if found is None else found)
        return steps, values


def generalization_curve(
    run: str | Path,
    sources: Sequence[str] = ("gen",),
    limit: int | None = None,
    batch_rows: int = 256,
    device: str = "auto",
    progress: bool = False,
) -> GeneralizationCurve:
    """The scores of every step-K.pt of ``run`` on each split name or file of ``sources``
    (each cut to its first ``limit`` pairs, where given)."""
    points, task = [], None
    for step, path in tqdm(kept_checkpoints(run), unit="checkpoint", disable=not progress):
        trained = load_string_model(path, device)
        scores = score_trained(trained, sources, limit, batch_rows)
        task = task or (scores.task, scores.transform_word, strings_of(trained).data)
        points.append(CurvePoint(step, scores.splits))
    name, word, data = task
    return GeneralizationCurve(str(run), name, word, headline_share(data), points)
