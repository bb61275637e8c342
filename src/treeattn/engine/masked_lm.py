"""Masked language modelling: the masking, the model's output layer, loss and perplexity."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.data.batching import TokenBatch, bucket_batches
from treeattn.data.vocab import Vocab

IGNORE = -100  # target of a position that is not predicted (cross_entropy's default)
FIRST_WORD_ID = 3  # ids below are padding, unknown and mask: never drawn as random words
EVAL_SEED = 0  # evaluation masks the same positions every time


@dataclass(frozen=True)
class Masking:
    """BERT-style masking: each real word is chosen with probability ``rate``; a chosen one
    becomes ``<mask>``, a random word (one of ``vocab_size``) or stays itself with the
    probabilities ``split`` (80/10/10 in BERT)."""

    rate: float
    split: tuple[float, float, float]
    vocab_size: int

    def check(self, where: str) -> None:
        if not 0 < self.rate < 1:
            raise ValueError(f"{where}: data.mask_rate must lie in (0, 1), got {self.rate}")
        if len(self.split) != 3 or min(self.split) < 0 or not math.isclose(sum(self.split), 1):
            raise ValueError(
                f"{where}: data.mask_split must be three shares (mask, random word, keep) "
                f"summing to 1, got {list(self.split)}"
            )


def mask_tokens(
    tokens: torch.Tensor,
    pad_mask: torch.Tensor,
    masking: Masking,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, targets), each (B, n), from ``tokens`` (B, n) masked as ``masking`` says.

    ``targets`` holds the original id at chosen positions and ``IGNORE`` elsewhere. Random
    numbers come from ``generator`` (default: torch's global one).
    """
    draw = torch.rand((2, *tokens.shape), generator=generator, device=tokens.device)
    keep_share = masking.split[0] + masking.split[1]
    chosen = (draw[0] < masking.rate) & ~pad_mask
    to_mask = chosen & (draw[1] < masking.split[0])
    to_random = chosen & (draw[1] >= masking.split[0]) & (draw[1] < keep_share)
    high = max(masking.vocab_size, FIRST_WORD_ID + 1)
    words = torch.randint(
        FIRST_WORD_ID, high, tokens.shape, generator=generator, device=tokens.device
    )
    inputs = torch.where(to_random, words, tokens.masked_fill(to_mask, Vocab.mask_id))
    return inputs, tokens.masked_fill(~chosen, IGNORE)


class MaskedLanguageModel(nn.Module):
    """An encoder with an output layer tied to its word embeddings: (B, n) -> logits
    (B, n, V), or (k, V) at the ``k`` positions where ``predict`` (B, n) is True."""

    def __init__(self, encoder: nn.Module, vocab_size: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.output_bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(
        self,
        tokens: torch.Tensor,
        pad_mask: torch.Tensor,
        context: dict | None = None,
        predict: torch.Tensor | None = None,
    ) -> torch.Tensor:
        states = self.encoder(tokens, pad_mask, context)
        if predict is not None:
            # Only the masked words are scored: the output layer over the whole vocabulary
            # is most of a step's work, and the rest of the positions have no target.
            states = states[predict]
        return F.linear(states, self.encoder.embed.weight, self.output_bias)


def masked_lm_loss(
    model: nn.Module,
    batch: TokenBatch,
    masking: Masking,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, int]:
    """(summed cross-entropy over the masked positions, their number) for one batch."""
    inputs, targets = mask_tokens(batch.tokens, batch.pad_mask, masking, generator)
    chosen = targets != IGNORE
    logits = model(inputs, batch.pad_mask, batch.context, predict=chosen)
    loss = F.cross_entropy(logits, targets[chosen], reduction="sum")
    return loss, int(chosen.sum())


def batch_loss(model: nn.Module, batch: TokenBatch, masking: Masking) -> torch.Tensor:
    """Mean cross-entropy of one training batch's masked words."""
    total, count = masked_lm_loss(model, batch, masking)
    return total / max(1, count)


@torch.no_grad()
def evaluate(
    model: nn.Module, data, max_tokens: int, device: torch.device, masking: Masking
) -> dict[str, float]:
    """Perplexity (exp of the mean cross-entropy per masked word) over ``data`` (an
    ``EncodedSet``), always with the same masked positions (a generator seeded with
    ``EVAL_SEED``), so that every evaluation of every model sees the same task."""
    was_training = model.training
    model.eval()
    generator = torch.Generator(device=device).manual_seed(EVAL_SEED)
    total, count = 0.0, 0
    for indices in bucket_batches(data.lengths, max_tokens, shuffle=False):
        loss, n = masked_lm_loss(model, data.batch(indices).to(device), masking, generator)
        total += loss.item()
        count += n
    model.train(was_training)
    mean = total / max(1, count)
    return {"perplexity": math.exp(mean), "loss": mean, "count": count}
