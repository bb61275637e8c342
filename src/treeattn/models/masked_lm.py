"""A masked language model: an encoder with an output layer tied to its word embeddings."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.models.inputs import EncoderInputs


class MaskedLanguageModel(nn.Module):
    """An encoder with an output layer tied to its word embeddings: (B, n) -> logits
    (B, n, V), or (k, V) at the ``k`` positions where ``predict`` (B, n) is True."""

    def __init__(self, encoder: nn.Module, vocab_size: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.output_bias = nn.Parameter(torch.zeros(vocab_size))

    def forward(self, inputs: EncoderInputs, predict: torch.Tensor | None = None) -> torch.Tensor:
        states = self.encoder.encode_inputs(inputs)
        if predict is not None:
            # Only the masked words are scored: the output layer over the whole vocabulary
            # is most of a step's work, and the rest of the positions have no target.
            states = states[predict]
        return F.linear(states, self.encoder.embed.weight, self.output_bias)
