"""A causal language model: a Transformer encoder whose every pass is causal (no position
sees a later one), with an output layer tied to its word embeddings."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.attention.registry import CAUSAL
from treeattn.models.inputs import EncoderInputs


class CausalLanguageModel(nn.Module):
    """Token ids (B, n) -> logits (B, n, V) of the token after each position, or (k, V) at
    the ``k`` positions where ``predict`` (B, n) is True. The encoder's mechanism must
    honour ``context[CAUSAL]`` (``Capabilities.causal``)."""

    def __init__(self, encoder: nn.Module, vocab_size: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.output_bias = nn.Parameter(torch.zeros(vocab_size))

    def states(self, inputs: EncoderInputs) -> torch.Tensor:
        """(B, n, d) the encoder's states, each from its position and the ones before."""
        return self.encoder(inputs.tokens, inputs.pad_mask, {**inputs.context(), CAUSAL: True})

    def forward(self, inputs: EncoderInputs, predict: torch.Tensor | None = None) -> torch.Tensor:
        states = self.states(inputs)
        if predict is not None:
            states = states[predict]  # the output layer only where there is a target
        return F.linear(states, self.encoder.embed.weight, self.output_bias)
