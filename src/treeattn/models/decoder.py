"""Causal Transformer decoder for translation: pre-LN layers of masked self-attention,
cross-attention to the encoder and a feed-forward block, output tied to the target
embeddings; decoding step by step with cached keys and values.

The cross-attention is the one the encoder names (``models.cross_attention``): plain
multi-head attention over token states unless told otherwise. It reads the encoder's
output once per sentence (``memories``) and attends to it at every step.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.attention.heads import merge_heads, split_heads
from treeattn.models.cross_attention import CrossAttention, MakeCrossAttention, Memory
from treeattn.models.encoder import init_embedding, sinusoidal_positions
from treeattn.models.inputs import EncoderInputs


class CausalSelfAttention(nn.Module):
    """Masked self-attention over the target prefix; with a ``cache`` (a dict this layer
    owns an entry of) the keys and values of earlier steps are kept, so a step costs one
    position."""

    def __init__(self, d_model: int, n_heads: int, dropout: float) -> None:
        super().__init__()
        self.n_heads, self.dropout = n_heads, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, cache: dict | None = None) -> torch.Tensor:
        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).chunk(3, dim=-1))
        if cache is not None:
            if self in cache:
                k = torch.cat([cache[self][0], k], dim=2)
                v = torch.cat([cache[self][1], v], dim=2)
            cache[self] = (k, v)
        p = self.dropout if self.training else 0.0
        # Padding comes after every real target word, so the causal mask alone keeps real
        # queries off it. The t new positions are the last t of the k keys: position i
        # sees keys up to k - t + i (a single cached step sees the whole prefix).
        t, k_len = q.shape[2], k.shape[2]
        allowed = torch.ones(t, k_len, dtype=torch.bool, device=q.device).tril(k_len - t)
        mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
        return self.out(merge_heads(mixed))


class DecoderLayer(nn.Module):
    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float,
        cross_attention: MakeCrossAttention = CrossAttention,
        attention_dropout: float | None = None,
    ):
        super().__init__()
        p = dropout if attention_dropout is None else attention_dropout
        self.self_norm = nn.LayerNorm(d_model)
        self.self_attn = CausalSelfAttention(d_model, n_heads, p)
        self.cross_norm = nn.LayerNorm(d_model)
        self.cross = cross_attention(d_model, n_heads, p)
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, memory: Memory, cache: dict | None = None, record: list | None = None
    ):
        x = x + self.dropout(self.self_attn(self.self_norm(x), cache))
        x = x + self.dropout(self.cross.attend(self.cross_norm(x), memory, record))
        return x + self.dropout(self.ff(self.ff_norm(x)))


class TransformerDecoder(nn.Module):
    """Target ids (B, t) and the source -> next-word logits (B, t, V).

    ``cross_attention`` makes each layer's attention over the source: the encoder's
    ``cross_attention`` (``models.cross_attention``), by default plain attention over
    token states. The output layer shares the target embedding matrix (Press & Wolf
    2017). ``attention_dropout`` drops attention weights (default: ``dropout``).
    Targets longer than ``max_length`` are an error, never truncated.
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 256,
        n_heads: int = 4,
        n_layers: int = 3,
        d_ff: int = 1024,
        dropout: float = 0.1,
        max_length: int = 256,
        cross_attention: MakeCrossAttention = CrossAttention,
        attention_dropout: float | None = None,
    ) -> None:
        super().__init__()
        self.d_model, self.max_length = d_model, max_length
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        init_embedding(self.embed, d_model)
        self.register_buffer(
            "position_table", sinusoidal_positions(max_length, d_model), persistent=False
        )
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            DecoderLayer(d_model, n_heads, d_ff, dropout, cross_attention, attention_dropout)
            for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model)

    def memories(self, encoded: Any, inputs: EncoderInputs) -> list[Memory]:
        """Each layer's keys and values of the source, computed once per sentence from the
        encoder's output ``encoded`` for the batch ``inputs``."""
        return [layer.cross.memory(encoded, inputs) for layer in self.layers]

    def forward(
        self,
        targets: torch.Tensor,
        memories: list[Memory],
        cache: dict | None = None,
        start: int = 0,
        record: list | None = None,
    ) -> torch.Tensor:
        """``targets`` (B, t) hold positions ``start`` .. ``start + t - 1``; with a
        ``cache`` the earlier positions come from it (step-by-step decoding). ``record``
        (a list) gets each layer's cross-attention probabilities (B, H, t, S)."""
        end = start + targets.shape[1]
        if end > self.max_length:
            raise ValueError(f"target of {end} tokens is longer than max_length={self.max_length}")
        positions = self.position_table[start:end]
        x = self.dropout(self.embed(targets) * math.sqrt(self.d_model) + positions)
        for layer, memory in zip(self.layers, memories, strict=True):
            x = layer(x, memory, cache, record)
        return self.final_norm(x) @ self.embed.weight.T
