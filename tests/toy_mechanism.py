"""A mechanism that reads constituency trees, registered in this one file: each word's
vector is mixed with the mean of its ancestors' label embeddings. It is here to show
(and test) that a new mechanism needs no change under ``treeattn/tasks``
(docs/MECHANISMS.md walks through it)."""

from __future__ import annotations

import torch
from torch import nn

from treeattn.attention.registry import Reads
from treeattn.models.inputs import EncoderInputs
from treeattn.models.registry import (
    TOKENS,
    EncoderConfig,
    EncoderEntry,
    options_dataclass,
    register_encoder,
)

NAME = "ancestor-mean"


class AncestorMeanEncoder(nn.Module):
    """Word ids, node label ids and their trees -> token states (B, n, d): each word's
    embedding beside the mean embedding of the phrase labels above it, mixed by a linear
    layer. ``scale`` multiplies the ancestors' part (an option, to show how options work).
    """

    cross_attends = "states"  # a translation decoder reads its token states

    def __init__(
        self, vocab_size: int, node_vocab_size: int, d_model: int = 64, scale: float = 1.0
    ) -> None:
        super().__init__()
        self.d_model, self.scale = d_model, scale
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.node_embed = nn.Embedding(node_vocab_size, d_model, padding_idx=0)
        self.mix = nn.Linear(2 * d_model, d_model)

    def encode_inputs(self, inputs: EncoderInputs) -> torch.Tensor:
        paths = inputs.trees.paths  # (B, n, D) each word's ancestors, -1 past the root
        batch, n, depth = paths.shape
        nodes = self.node_embed(inputs.node_labels)  # (B, m, d)
        index = paths.clamp(min=0).reshape(batch, n * depth, 1).expand(-1, -1, self.d_model)
        above = nodes.gather(1, index).view(batch, n, depth, self.d_model)
        valid = (paths >= 0).unsqueeze(-1).to(above.dtype)
        mean = (above * valid).sum(2) / valid.sum(2).clamp(min=1)
        words = self.embed(inputs.tokens)
        return torch.tanh(self.mix(torch.cat([words, self.scale * mean], -1)))


def build(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> AncestorMeanEncoder:
    return AncestorMeanEncoder(vocab_size, node_vocab_size, m.d_model, **m.attention_options)


ENTRY = EncoderEntry(
    NAME,
    AncestorMeanEncoder,
    frozenset({Reads.TREES}),
    options_dataclass(NAME, AncestorMeanEncoder),
    build,
    output=TOKENS,
    has_attention=False,
)


def register() -> EncoderEntry:
    """Make the mechanism available as ``model.attention: ancestor-mean`` (a package would
    call ``register_encoder`` when its module is imported, as treeattn's own do)."""
    return register_encoder(ENTRY)
