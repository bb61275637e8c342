"""What ``treeattn predict`` writes for a classifier, one line per sentence, in one of
``FORMATS``:

- ``label``: the class name (``positive``);
- ``probabilities``: every class's probability, in the classes' order, as ``NAME=P``
  fields separated by tabs (class names may hold spaces: ``very negative=0.0312``), each
  with four decimals;
- ``jsonl``: a JSON object, ``{"label": NAME, "probabilities": {NAME: P, ...}}``
  (``treeattn predict`` puts the input line first, as ``"input"``).

>>> probabilities = torch.tensor([[0.25, 0.75]])
>>> class_outputs(probabilities, ["negative", "positive"], "probabilities")
['negative=0.2500\\tpositive=0.7500']
>>> class_outputs(probabilities, ["negative", "positive"], "jsonl")
['{"label": "positive", "probabilities": {"negative": 0.25, "positive": 0.75}}']
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import torch

FORMATS = ("label", "probabilities", "jsonl")


def class_outputs(
    probabilities: torch.Tensor, names: Sequence[str], output_format: str
) -> list[str]:
    """One line per row of ``probabilities`` (N, L: each class's probability, classes in
    the order of ``names``) in ``output_format``, one of ``FORMATS``."""
    if output_format not in FORMATS:
        raise ValueError(f"a classifier writes {', '.join(FORMATS)}, not {output_format!r}")
    lines = []
    for row in probabilities.tolist():
        label = names[max(range(len(row)), key=row.__getitem__)]
        if output_format == "label":
            lines.append(label)
        elif output_format == "probabilities":
            lines.append("\t".join(f"{name}={p:.4f}" for name, p in zip(names, row, strict=True)))
        else:
            # Six decimals: enough to tell classes apart, short enough to read.
            shares = {name: round(p, 6) for name, p in zip(names, row, strict=True)}
            lines.append(json.dumps({"label": label, "probabilities": shares}, ensure_ascii=False))
    return lines
