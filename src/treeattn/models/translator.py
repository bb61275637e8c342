"""Encoder-decoder for translation: any encoder of the sentence tasks over the source
pieces, and the causal decoder (``decoder.py``), whose cross-attention is the tree
cross-attention of Nguyen et al. (2020, Eqs. 21-24) behind the hierarchical encoder."""

from __future__ import annotations

import torch
from torch import nn

from treeattn.models.decoder import Memory, Source, TransformerDecoder
from treeattn.models.inputs import EncoderInputs
from treeattn.models.search import beam_search, greedy


class Translator(nn.Module):
    """A batch of source pieces (``EncoderInputs``: with trees and node labels, or gap
    distances, as the encoder reads) -> next-word logits (B, t, V).

    The encoder says what the decoder attends over (``cross_attends``): its token states,
    or its accumulated tree (leaf and node states; the decoder then uses the tree
    cross-attention with the encoder's ``accumulation_options``).
    """

    def __init__(self, encoder: nn.Module, decoder: TransformerDecoder) -> None:
        super().__init__()
        if encoder.cross_attends is None:
            raise ValueError(f"{type(encoder).__name__} gives no states a decoder can read")
        self.encoder, self.decoder = encoder, decoder
        self.tree = encoder.cross_attends == "tree"

    def source(self, inputs: EncoderInputs) -> Source:
        """What the decoder reads of the source."""
        if self.tree:
            leaves, nodes = self.encoder.encode_inputs(inputs)
            return Source(leaves=leaves, nodes=nodes, trees=inputs.trees)
        return Source(states=self.encoder.encode_inputs(inputs), pad_mask=inputs.pad_mask)

    def memories(self, inputs: EncoderInputs) -> list[Memory]:
        return self.decoder.memories(self.source(inputs))

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
