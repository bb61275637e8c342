"""A Tree Transformer run's learning curve: dev perplexity and unsupervised F1 on the PTB
sample for every checkpoint it kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from treeattn.analysis.induction import (
    induce_links,
    load_link_model,
)
from treeattn.analysis.induction_scores import ptb_text, score_induction
from treeattn.metrics.unsupervised import (
    UnsupervisedF1,
)
from treeattn.trees.induction import THRESHOLD, VARIANTS, trees_from_links


@dataclass(frozen=True)
class CurvePoint:
    """One kept checkpoint: its update, dev perplexity and F1 of each variant's trees."""

    step: int
    perplexity: float
    f1: dict[str, UnsupervisedF1]


@dataclass(frozen=True)
class InductionCurve:
    """A run's kept checkpoints, one ``CurvePoint`` each, scored on PTB sample ``split``."""

    run: str
    split: str
    points: list[CurvePoint]

    def format(self) -> str:
        lines = [
            f"{self.run}: dev perplexity; unlabeled F1 (sentence / corpus) on PTB {self.split}"
        ]
        header = "".join(f" {v:>13}" for v in VARIANTS)
        lines.append(f"{'step':>7} {'perplexity':>10}{header}")
        for point in self.points:
            cells = "".join(
                f" {point.f1[v].sentence_f1:>6.1f} /{point.f1[v].corpus_f1:>5.1f}" for v in VARIANTS
            )
            lines.append(f"{point.step:>7} {point.perplexity:>10.1f}{cells}")
        return "\n".join(lines)


def kept_checkpoints(run: str | Path) -> list[tuple[int, Path]]:
    """The ``step-K.pt`` files of a run folder, by K."""
    found = []
    for path in Path(run).glob("step-*.pt"):
        number = path.stem.removeprefix("step-")
        if number.isdigit():
            found.append((int(number), path))
    if not found:
        raise FileNotFoundError(
            f"{run}: no step-K.pt checkpoints; train with train.keep_every=K to keep them"
        )
    return sorted(found)


def induction_curve(
    run: str | Path,
    split: str = "test",
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
    progress: bool = False,
) -> InductionCurve:
    """Dev perplexity and unsupervised F1 on the PTB sample ``split`` for every kept
    checkpoint of a Tree Transformer run, each variant at its default minimum layer (or
    ``min_layer``)."""
    checkpoints = kept_checkpoints(run)
    points, dev, text = [], None, None
    for step, path in tqdm(checkpoints, unit="checkpoint", disable=not progress, leave=False):
        saved = load_link_model(str(path))
        if dev is None:  # one run: the same vocabulary and text options throughout
            dev = saved.encode(*saved.read("dev"))
            text = ptb_text(saved, split)
        perplexity = saved.task.evaluate(saved.model, dev, saved.device)["perplexity"]
        links = induce_links(saved, text.prepared.sentences, f"PTB sample {split}")
        f1 = {
            variant: score_induction(
                text.gold,
                trees_from_links(text.prepared.sentences, links, variant, threshold, min_layer),
            )["f1"]["model"]
            for variant in VARIANTS
        }
        points.append(CurvePoint(step, perplexity, f1))
    return InductionCurve(str(run), split, points)
