"""Accuracy, Matthews correlation and a confusion matrix for classification (SST, CoLA,
agreement probes, ListOps).

Labels are any hashable values (ints, strings). Rates are percentages in [0, 100]; the
Matthews correlation is scaled the same way, to [-100, 100], as GLUE reports it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

__all__ = [
    "ClassScores",
    "ConfusionMatrix",
    "accuracy",
    "confusion_matrix",
    "matthews_correlation",
]


def _check(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold labels but {len(pred)} predictions")


def accuracy(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> float:
    """Percentage of predictions equal to the gold label (0 for empty input).

    >>> accuracy([0, 1, 1, 2], [0, 1, 2, 2])
    75.0
    """
    _check(gold, pred)
    if not gold:
        return 0.0
    return 100.0 * sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold)


@dataclass(frozen=True)
class ClassScores:
    """Precision, recall and F1 of one class, with its gold count (support)."""

    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class ConfusionMatrix:
    """``counts[i][j]`` is the number of items of gold class ``labels[i]`` predicted as
    ``labels[j]``: rows are gold, columns are predictions."""

    labels: list[Hashable]
    counts: list[list[int]]

    @property
    def total(self) -> int:
        return sum(map(sum, self.counts))

    @property
    def accuracy(self) -> float:
        correct = sum(self.counts[i][i] for i in range(len(self.labels)))
        return 100.0 * correct / self.total if self.total else 0.0

    @property
    def matthews(self) -> float:
        """The Matthews correlation coefficient times 100, in [-100, 100]; for more than two
        classes, its generalisation (Gorodkin 2004: the correlation between the one-hot
        gold and predicted labels). 0 where it is undefined: every gold label or every
        prediction the same class (a model that always answers one class scores 0)."""
        n = len(self.labels)
        total = self.total
        correct = sum(self.counts[i][i] for i in range(n))
        gold = [sum(self.counts[i]) for i in range(n)]  # t_k: items of class k
        predicted = [sum(row[k] for row in self.counts) for k in range(n)]  # p_k
        covariance = correct * total - sum(t * p for t, p in zip(gold, predicted, strict=True))
        spread_predicted = total * total - sum(p * p for p in predicted)
        spread_gold = total * total - sum(t * t for t in gold)
        if spread_predicted == 0 or spread_gold == 0:
            return 0.0
        # Integer products up to here: exact whatever the counts.
        return 100.0 * covariance / math.sqrt(spread_predicted * spread_gold)

    def per_class(self) -> dict[Hashable, ClassScores]:
        """Precision, recall and F1 for each label (0 where undefined)."""
        out: dict[Hashable, ClassScores] = {}
        for i, label in enumerate(self.labels):
            hits = self.counts[i][i]
            predicted = sum(row[i] for row in self.counts)
            support = sum(self.counts[i])
            precision = 100.0 * hits / predicted if predicted else 0.0
            recall = 100.0 * hits / support if support else 0.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            out[label] = ClassScores(precision, recall, f1, support)
        return out

    def macro_f1(self) -> float:
        """Unweighted mean of the per-class F1 over all labels."""
        scores = self.per_class()
        return sum(s.f1 for s in scores.values()) / len(scores) if scores else 0.0

    def format(self) -> str:
        """A plain-text table, gold classes down the side, predictions across."""
        names = [str(label) for label in self.labels]
        width = max([len(n) for n in names] + [len(str(self.total)), 4])
        lines = [" " * width + " | " + " ".join(n.rjust(width) for n in names)]
        lines.append("-" * len(lines[0]))
        for name, row in zip(names, self.counts, strict=True):
            lines.append(name.rjust(width) + " | " + " ".join(str(c).rjust(width) for c in row))
        return "\n".join(lines)


def confusion_matrix(
    gold: Sequence[Hashable],
    pred: Sequence[Hashable],
    labels: Sequence[Hashable] | None = None,
) -> ConfusionMatrix:
    """Count (gold, predicted) pairs. ``labels`` fixes the order; by default every label
    seen, sorted when they can be, else in order of first appearance.

    >>> confusion_matrix(["a", "b", "b"], ["a", "a", "b"]).counts
    [[1, 0], [1, 1]]
    """
    _check(gold, pred)
    if labels is None:
        seen = list(dict.fromkeys([*gold, *pred]))
        try:
            labels = sorted(seen)  # type: ignore[type-var]
        except TypeError:  # mixed label types cannot be ordered
            labels = seen
    index = {label: i for i, label in enumerate(labels)}
    unknown = [x for x in (*gold, *pred) if x not in index]
    if unknown:
        raise ValueError(f"label {unknown[0]!r} is not in labels")
    pairs = Counter(zip(gold, pred, strict=True))
    counts = [[pairs[(g, p)] for p in labels] for g in labels]
    return ConfusionMatrix(list(labels), counts)


def matthews_correlation(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> float:
    """The Matthews correlation of predictions with the gold labels, times 100
    (``ConfusionMatrix.matthews``; 0 for empty input or a single class).

    >>> round(matthews_correlation([1, 1, 1, 0, 0], [1, 1, 0, 0, 1]), 2)
    16.67
    >>> matthews_correlation([1, 0, 1, 0], [1, 1, 1, 1])
    0.0
    """
    return confusion_matrix(gold, pred).matthews
