"""A fine-tuned pretrained matrix stored as its change from the source weights.

Fine-tuning moves each row of a pretrained matrix by a few percent, so the change fits in
int8 with one scale per row far better than the weights would. A row that training never
reached (a word piece absent from the training data) changes only by AdamW's decay, which
scales it (by 0.9989 in a 20-epoch run); such rows are left out and load as the source has
them. A 22.7M-parameter encoder tuned whole then takes about 14 MB instead of 45 MB as
float16 (measured in
docs/results/parsing.md#on-a-pretrained-encoder-minilm-in-xlnets-place).
"""

from __future__ import annotations

import torch
from torch import Tensor

# Suffixes of the three tensors that stand for one matrix in a file.
DELTA, SCALE, ROWS = "::delta", "::scale", "::rows"
# A row whose change, less its part along the source row (decay), is under this share of
# the row's norm counts as unmoved: float32 rounding of the decay stays far below it.
UNMOVED = 1e-4


def pack(name: str, trained: Tensor, source: Tensor) -> dict[str, Tensor]:
    """The moved rows of ``trained`` as int8 changes from ``source``: under ``name``
    followed by ``DELTA`` (int8, rows x columns), ``SCALE`` (float32, one per row: a
    change is int8 x scale) and ``ROWS`` (int32 row indices)."""
    if trained.shape != source.shape or trained.dim() != 2:
        raise ValueError(f"{name}: a delta needs two matrices of one shape")
    source = source.detach().float().cpu()
    change = trained.detach().float().cpu() - source
    along = (change * source).sum(dim=1) / (source * source).sum(dim=1).clamp_min(1e-30)
    across = change - along[:, None] * source
    moved = across.norm(dim=1) > UNMOVED * source.norm(dim=1)
    rows = moved.nonzero().flatten()
    change = change[rows]
    scale = change.abs().amax(dim=1) / 127
    quantized = torch.round(change / scale.clamp_min(1e-30)[:, None]).to(torch.int8)
    return {
        name + DELTA: quantized.contiguous(),
        name + SCALE: scale.contiguous(),
        name + ROWS: rows.to(torch.int32).contiguous(),
    }


def unpack(stored: dict[str, Tensor], source: dict[str, Tensor]) -> dict[str, Tensor]:
    """``stored`` with every packed matrix rebuilt on its ``source`` weights (float32);
    other entries pass through. A packed name missing from ``source`` is a KeyError."""
    out = {k: v for k, v in stored.items() if not k.endswith((DELTA, SCALE, ROWS))}
    for key in stored:
        if not key.endswith(DELTA):
            continue
        name = key.removesuffix(DELTA)
        rows = stored[name + ROWS].long()
        change = stored[key].float() * stored[name + SCALE].float()[:, None]
        weights = source[name].detach().float().clone()
        fits = change.shape[1:] == weights.shape[1:]
        if not fits or (rows.numel() and int(rows.max()) >= len(weights)):
            shape = tuple(weights.shape)
            raise ValueError(f"{name}: the stored change does not fit the source's {shape}")
        weights[rows] += change
        out[name] = weights
    return out
