"""Encoder-decoder for translation: any encoder of the sentence tasks that feeds a decoder
over the source pieces, and the causal decoder (``decoder.py``), whose cross-attention is
the one the encoder names (``models.cross_attention``)."""

from __future__ import annotations

import torch
from torch import nn

from treeattn.models.cross_attention import Memory
from treeattn.models.decoder import TransformerDecoder
from treeattn.models.inputs import EncoderInputs
from treeattn.models.search import beam_search, greedy


class Translator(nn.Module):
    """A batch of source pieces (``EncoderInputs``: with trees and node labels, or gap
    distances, as the encoder reads) -> next-word logits (B, t, V).

    The decoder's cross-attention reads the encoder's output as the encoder says
    (``cross_attention``, with which the decoder is built); an encoder with none feeds no
    decoder.
    """

    def __init__(self, encoder: nn.Module, decoder: TransformerDecoder) -> None:
        super().__init__()
        if encoder.cross_attention is None:
            raise ValueError(f"{type(encoder).__name__} gives no states a decoder can read")
        self.encoder, self.decoder = encoder, decoder

    def memories(self, inputs: EncoderInputs) -> list[Memory]:
        return self.decoder.memories(self.encoder.encode_inputs(inputs), inputs)

    def forward(
        self, inputs: EncoderInputs, targets: torch.Tensor, record: list | None = None
    ) -> torch.Tensor:
        """Teacher-forced logits of ``targets`` (B, t), which start with the start word.
        ``record``: a list that gets each layer's cross-attention probabilities."""
        return self.decoder(targets, self.memories(inputs), record=record)

    @torch.no_grad()
    def translate(
        self,
        inputs: EncoderInputs,
        bos: int,
        eos: int,
        max_lengths: int | torch.Tensor,
        beam_size: int = 4,
        length_penalty: float = 1.0,
    ) -> list[list[int]]:
        """Each source's best target ids (start and end words left out): beam search, or
        greedy with ``beam_size`` 1; at most ``max_lengths`` words (one number, or one per
        sentence), the end word included."""
        memories = self.memories(inputs)
        if beam_size == 1:
            return greedy(self.decoder, memories, bos, eos, max_lengths)
        return beam_search(self.decoder, memories, bos, eos, beam_size, max_lengths, length_penalty)
