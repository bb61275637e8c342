"""Length-bucketed batches bounded by a token count, and padding into tensors."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.nn.utils.rnn import pad_sequence


def bucket_batches(
    lengths: Sequence[int], max_tokens: int, shuffle: bool, seed: int = 0
) -> list[list[int]]:
    """Group example indices into batches of similar length.

    Each batch holds at most ``max_tokens`` padded tokens (batch size x longest item), and
    always at least one example. With ``shuffle``, lengths are sorted within random chunks
    and the batch order is shuffled, both drawn from ``seed`` alone, so an epoch's batches
    can be rebuilt exactly when training resumes.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be positive")
    n = len(lengths)
    if shuffle:
        generator = torch.Generator().manual_seed(seed)
        order = torch.randperm(n, generator=generator).tolist()
        chunk = 100 * max(1, max_tokens // max(1, max(lengths, default=1)))
        order = [
            i
            for start in range(0, n, chunk)
            for i in sorted(order[start : start + chunk], key=lambda i: lengths[i])
        ]
    else:
        order = sorted(range(n), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        new_longest = max(longest, lengths[i])
        if current and new_longest * (len(current) + 1) > max_tokens:
            batches.append(current)
            current, new_longest = [], lengths[i]
        current.append(i)
        longest = new_longest
    if current:
        batches.append(current)
    if shuffle:
        perm = torch.randperm(len(batches), generator=generator).tolist()
        batches = [batches[p] for p in perm]
    return batches


def shard_batches(batches: list[list[int]], rank: int, world_size: int) -> list[list[int]]:
    """This replica's share of an epoch's batches; every replica gets the same count.

    When the count does not divide evenly, the first batches are reused to fill the last
    round, so no replica waits on a collective that the others never reach.
    """
    if world_size == 1:
        return batches
    rounds = -(-len(batches) // world_size)
    padded = [batches[i % len(batches)] for i in range(rounds * world_size)]
    return padded[rank::world_size]


def pad_ids(
    sequences: Sequence[Sequence[int] | torch.Tensor], pad_id: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, n) ids and (B, n) ``pad_mask`` (True at padding) from ragged id lists or tensors."""
    rows = [torch.as_tensor(s, dtype=torch.long) for s in sequences]
    if not rows:
        return torch.zeros(0, 0, dtype=torch.long), torch.zeros(0, 0, dtype=torch.bool)
    ids = pad_sequence(rows, batch_first=True, padding_value=pad_id)
    lengths = torch.tensor([len(r) for r in rows])
    pad_mask = torch.arange(ids.shape[1])[None, :] >= lengths[:, None]
    return ids, pad_mask
