"""Encoder-decoder for translation: any encoder of the sentence tasks over the source
pieces, and the causal decoder (``decoder.py``), whose cross-attention is the tree
cross-attention of Nguyen et al. (2020, Eqs. 21-24) behind the hierarchical encoder."""

from __future__ import annotations

import torch
from torch import nn

from treeattn.models.decoder import Memory, Source, TransformerDecoder
from treeattn.models.hierarchical import HierarchicalEncoder
from treeattn.models.search import beam_search, greedy


class Translator(nn.Module):
    """Source pieces (B, n) with their padding and context (trees and node labels for the
    hierarchical encoder, gap distances for ``distance``) -> next-word logits (B, t, V)."""

    def __init__(self, encoder: nn.Module, decoder: TransformerDecoder) -> None:
        super().__init__()
        self.encoder, self.decoder = encoder, decoder
        self.tree = isinstance(encoder, HierarchicalEncoder)

    def source(self, tokens: torch.Tensor, pad_mask: torch.Tensor, context: dict) -> Source:
        """What the decoder reads of the source."""
        if self.tree:
            trees = context["trees"]
            leaves, nodes = self.encoder(tokens, context["node_labels"], trees)
            return Source(leaves=leaves, nodes=nodes, trees=trees)
        return Source(states=self.encoder(tokens, pad_mask, context), pad_mask=pad_mask)

    def memories(self, tokens: torch.Tensor, pad_mask: torch.Tensor, context: dict) -> list[Memory]:
        return self.decoder.memories(self.source(tokens, pad_mask, context))

    def forward(
        self,
        tokens: torch.Tensor,
        pad_mask: torch.Tensor,
        context: dict,
        targets: torch.Tensor,
        record: list | None = None,
    ) -> torch.Tensor:
        """Teacher-forced logits of ``targets`` (B, t), which start with the start word.
        ``record``: a list that gets each layer's cross-attention probabilities."""
        return self.decoder(targets, self.memories(tokens, pad_mask, context), record=record)

    @torch.no_grad()
    def translate(
        self,
        tokens: torch.Tensor,
        pad_mask: torch.Tensor,
        context: dict,
        bos: int,
        eos: int,
        max_lengths: int | torch.Tensor,
        beam_size: int = 4,
        length_penalty: float = 1.0,
    ) -> list[list[int]]:
        """Each source's best target ids (start and end words left out): beam search, or
        greedy with ``beam_size`` 1; at most ``max_lengths`` words (one number, or one per
        sentence), the end word included."""
        memories = self.memories(tokens, pad_mask, context)
        if beam_size == 1:
            return greedy(self.decoder, memories, bos, eos, max_lengths)
        return beam_search(self.decoder, memories, bos, eos, beam_size, max_lengths, length_penalty)
