"""A translation decoder's attention over what its encoder gives, read once per sentence.

Each encoder that feeds a decoder names the cross-attention a decoder reads it with, as
its ``cross_attention``: a callable ``(d_model, n_heads, dropout)`` that makes one layer's
module (None: it feeds no decoder). The module reads the encoder's output once per
sentence (``memory(encoded, inputs)``: ``encoded`` what ``encode_inputs(inputs)``
returned) and attends to it at every step (``attend``); the decoder knows no more of it.
``CrossAttention`` is the plain one, over token states.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.attention.heads import merge_heads, split_heads
from treeattn.models.inputs import EncoderInputs


@dataclass
class Memory:
    """One layer's view of the source: keys and values (B, H, S, k), and the keys a query
    may see (B, 1, 1, S)."""

    keys: torch.Tensor
    values: torch.Tensor
    allowed: torch.Tensor

    def select(self, rows: torch.Tensor) -> Memory:
        """The rows ``rows`` of the batch (to copy a sentence into its beams)."""
        return Memory(self.keys[rows], self.values[rows], self.allowed[rows])


# What an encoder names as its ``cross_attention``: (d_model, n_heads, dropout) -> module.
MakeCrossAttention = Callable[[int, int, float], nn.Module]


def attend(
    module: nn.Module, queries: torch.Tensor, memory: Memory, record: list | None = None
) -> torch.Tensor:
    """Queries (B, t, d) projected by ``module.query``, attending over ``memory``, heads
    merged and projected by ``module.out``. ``record`` (a list) gets the attention
    probabilities (B, H, t, S), without dropout."""
    q = split_heads(module.query(queries), module.n_heads)
    if record is not None:
        scores = (q @ memory.keys.transpose(-1, -2)) * q.shape[-1] ** -0.5
        record.append(scores.masked_fill(~memory.allowed, float("-inf")).softmax(-1))
    p = module.dropout if module.training else 0.0
    mixed = F.scaled_dot_product_attention(
        q, memory.keys, memory.values, attn_mask=memory.allowed, dropout_p=p
    )
    return module.out(merge_heads(mixed))


class CrossAttention(nn.Module):
    """Multi-head attention of target queries over an encoder's token states (B, S, d),
    the padding of ``inputs`` left out."""

    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads, self.dropout = n_heads, dropout
        self.query = nn.Linear(d_model, d_model)
        self.key_value = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def memory(self, encoded: torch.Tensor, inputs: EncoderInputs) -> Memory:
        k, v = (split_heads(t, self.n_heads) for t in self.key_value(encoded).chunk(2, -1))
        return Memory(k, v, ~inputs.pad_mask[:, None, None, :])

    def attend(self, queries: torch.Tensor, memory: Memory, record: list | None = None):
        return attend(self, queries, memory, record)
