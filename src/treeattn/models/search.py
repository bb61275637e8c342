"""Batched decoding for the translation decoder: greedy and beam search.

Both take a ``decoder`` called as ``decoder(tokens, memories, cache, start)`` (the last
words of each row, the source as each layer sees it, a cache the decoder keeps its
earlier steps in, the position of the first word) that returns next-word logits
(rows, t, V). Beam search scores a finished hypothesis by its log-probability divided by
its length (the end-of-sentence word included) to the power ``length_penalty``, as
fairseq does; a sentence stops once ``beam_size`` of its hypotheses have finished. At most
``max_length`` words are generated, the end word included: it is forced as the last.
``max_length`` is one number for the batch or one per sentence (B,), so that what a
sentence gets never depends on the others in its batch.
"""

from __future__ import annotations

from typing import Protocol

import torch

from treeattn.models.cross_attention import Memory


class StepDecoder(Protocol):
    def __call__(
        self, tokens: torch.Tensor, memories: list[Memory], cache: dict, start: int
    ) -> torch.Tensor: ...


def reorder_cache(cache: dict, rows: torch.Tensor) -> None:
    """Keep the cached rows ``rows``, in that order (beams that survive a step)."""
    for key, value in cache.items():
        if isinstance(value, tuple):
            cache[key] = tuple(t[rows] for t in value)
        else:
            cache[key] = value[rows]


def sentence_limits(max_length: int | torch.Tensor, batch: int, device) -> torch.Tensor:
    """(B,) long: each sentence's ``max_length``."""
    limits = torch.as_tensor(max_length, dtype=torch.long, device=device).expand(batch)
    if bool((limits < 1).any()):
        raise ValueError(f"max_length must be at least 1, got {limits.tolist()}")
    return limits


def strip(tokens: torch.Tensor, lengths: torch.Tensor) -> list[list[int]]:
    """Rows of (B, T) ``tokens`` cut to their lengths, without the start word."""
    return [row[1:length].tolist() for row, length in zip(tokens, lengths.tolist(), strict=True)]


@torch.no_grad()
def greedy(
    decoder: StepDecoder,
    memories: list[Memory],
    bos: int,
    eos: int,
    max_length: int | torch.Tensor,
) -> list[list[int]]:
    """The most probable next word at every step, until the end word (forced as the
    ``max_length``-th word); each output list excludes start and end words."""
    B = memories[0].keys.shape[0]
    device = memories[0].keys.device
    limits = sentence_limits(max_length, B, device)
    longest = int(limits.max())
    tokens = torch.full((B, 1), bos, dtype=torch.long, device=device)
    lengths = torch.full((B,), longest + 1, dtype=torch.long, device=device)
    cache: dict = {}
    for step in range(longest):
        word = decoder(tokens[:, -1:], memories, cache, step)[:, -1].argmax(-1)
        # The last word a sentence is allowed ends it, as in beams.
        word = torch.where(limits == step + 1, eos, word)
        tokens = torch.cat([tokens, word[:, None]], dim=1)
        ended = (word == eos) & (lengths > longest)
        lengths = torch.where(ended, step + 1, lengths)
        if bool((lengths <= longest).all()):
            break
    return strip(tokens, lengths.clamp(max=tokens.shape[1]))


@torch.no_grad()
def beam_search(
    decoder: StepDecoder,
    memories: list[Memory],
    bos: int,
    eos: int,
    beam_size: int = 4,
    max_length: int | torch.Tensor = 100,
    length_penalty: float = 1.0,
) -> list[list[int]]:
    """The best finished hypothesis of each sentence (start and end words excluded)."""
    B, K = memories[0].keys.shape[0], beam_size
    device = memories[0].keys.device
    limits = sentence_limits(max_length, B, device)
    max_length = int(limits.max())
    batch = torch.arange(B, device=device)
    memories = [m.select(batch.repeat_interleave(K)) for m in memories]
    tokens = torch.full((B * K, 1), bos, dtype=torch.long, device=device)
    scores = torch.full((B, K), float("-inf"), device=device)
    scores[:, 0] = 0.0  # one live hypothesis to start from, not K copies of it
    best = torch.full((B,), float("-inf"), device=device)
    best_tokens = torch.full((B, max_length + 1), eos, dtype=torch.long, device=device)
    best_lengths = torch.ones(B, dtype=torch.long, device=device)
    finished = torch.zeros(B, dtype=torch.long, device=device)
    cache: dict = {}
    for step in range(max_length):
        logp = decoder(tokens[:, -1:], memories, cache, step)[:, -1].float().log_softmax(-1)
        V = logp.shape[-1]
        last = (limits == step + 1).repeat_interleave(K)  # every hypothesis ends here
        if bool(last.any()):
            forced = torch.full_like(logp, float("-inf"))
            forced[:, eos] = logp[:, eos]
            logp = torch.where(last[:, None], forced, logp)
        candidates = (scores[:, :, None] + logp.view(B, K, V)).view(B, K * V)
        top, index = candidates.topk(min(2 * K, K * V), dim=1)
        origin, word = index // V, index % V
        rank = torch.arange(top.shape[1], device=device)
        live = torch.isfinite(top)
        # Hypotheses that end here, among the K best candidates (as fairseq counts them).
        ends = (word == eos) & live & (rank < K)
        length = step + 1  # words generated, the end word included
        normalized = (top / length**length_penalty).masked_fill(~ends, float("-inf"))
        score, pick = normalized.max(dim=1)
        better = score > best
        if bool(better.any()):
            rows = batch * K + origin[batch, pick]
            hypothesis = torch.cat([tokens[rows], word[batch, pick][:, None]], dim=1)
            best = torch.where(better, score, best)
            best_tokens[better, : step + 2] = hypothesis[better]
            best_lengths = torch.where(better, step + 1, best_lengths)
        finished = finished + ends.sum(dim=1)
        # The K best candidates that go on: those that did not end, in score order.
        going = live & (word != eos)
        keep = torch.where(going, rank, rank + top.shape[1]).argsort(dim=1)[:, :K]
        # Fewer than K may go on (a narrow start, or a sentence that is done): the rest die.
        dead = ~going.gather(1, keep) | (finished[:, None] >= K)
        scores = top.gather(1, keep).masked_fill(dead, float("-inf"))
        if bool((finished >= K).all()) or not bool(torch.isfinite(scores).any()):
            break
        rows = (batch[:, None] * K + origin.gather(1, keep)).view(-1)
        tokens = torch.cat([tokens[rows], word.gather(1, keep).view(-1, 1)], dim=1)
        reorder_cache(cache, rows)
    return strip(best_tokens, best_lengths)
