"""Greedy continuation of prompts by a causal language model, a batch at a time.

Rows are padded at the end: a causal model's state at a row's last token reads only that
row's tokens, so every row is continued at its own length in one pass over the batch, and
what a row gets never depends on the others beside it. The model has no cache of earlier
steps: each step reads the batch again, as wide as its longest row so far.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from treeattn.data.vocab import Vocab
from treeattn.models.inputs import EncoderInputs


@torch.no_grad()
def greedy_continuations(
    model: nn.Module,
    prompts: Sequence[Sequence[int]],
    stop_ids: Sequence[int],
    max_new: int | Sequence[int],
    device: torch.device | str = "cpu",
) -> list[list[int]]:
    """The most probable next token of each prompt, step by step, until a token of
    ``stop_ids`` (kept as the last of its row) or ``max_new`` tokens (one number, or one
    per prompt). ``model(EncoderInputs(tokens (B, n), pad_mask (B, n)), predict=at)``
    gives (k, V) logits of the token after each of the ``k`` positions where ``at`` is
    True, in row order (``CausalLanguageModel``)."""
    if any(len(p) == 0 for p in prompts):
        raise ValueError("every prompt needs at least one token")
    rows = len(prompts)
    if rows == 0:
        return []
    limits = torch.as_tensor(max_new, dtype=torch.long).expand(rows).to(device)
    if bool((limits < 1).any()):
        raise ValueError(f"max_new must be at least 1, got {limits.tolist()}")
    lengths = torch.tensor([len(p) for p in prompts], device=device)
    starts = lengths.clone()
    tokens = torch.full((rows, int((lengths + limits).max())), Vocab.pad_id, device=device)
    for row, prompt in enumerate(prompts):
        tokens[row, : len(prompt)] = torch.as_tensor(list(prompt), device=device)
    stops = torch.as_tensor(list(stop_ids), dtype=torch.long, device=device)
    running = torch.ones(rows, dtype=torch.bool, device=device)
    positions = torch.arange(tokens.shape[1], device=device)
    while bool(running.any()):
        width = int(lengths.max())
        pad_mask = positions[:width] >= lengths[:, None]
        at = (positions[:width] == (lengths - 1)[:, None]) & running[:, None]
        logits = model(EncoderInputs(tokens[:, :width], pad_mask), predict=at)
        chosen = logits.argmax(-1)
        active = running.nonzero()[:, 0]
        tokens[active, lengths[active]] = chosen
        lengths[active] += 1
        finished = torch.isin(chosen, stops) | (lengths[active] - starts[active] >= limits[active])
        running[active[finished]] = False
    return [
        tokens[row, start:end].tolist()
        for row, (start, end) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True))
    ]
