"""Pre-LN Transformer encoder whose self-attention mechanism is chosen by name."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from treeattn.attention import build_attention
from treeattn.attention.registry import LAYER
from treeattn.attention.tree_loss import WordPositions, token_positions
from treeattn.models.cross_attention import CrossAttention
from treeattn.models.inputs import EncoderInputs


def sinusoidal_positions(length: int, d_model: int) -> torch.Tensor:
    """(length, d) fixed sine/cosine position encodings (Vaswani et al. 2017, §3.5)."""
    position = torch.arange(length, dtype=torch.float32)[:, None]
    rate = torch.exp(
        torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model)
    )
    table = torch.zeros(length, d_model)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)[:, : d_model // 2]
    return table


def init_embedding(table: nn.Embedding, d_model: int) -> None:
    """Std d^-1/2, so that the scaled embedding (x sqrt(d), Vaswani et al. §3.4) has unit
    scale like the position encodings instead of drowning them; padding (row 0) zero."""
    nn.init.normal_(table.weight, std=d_model**-0.5)
    with torch.no_grad():
        table.weight[0].zero_()


class EncoderLayer(nn.Module):
    """x + attn(LN(x)), then x + FFN(LN(x)) (pre-LN, Xiong et al. 2020); the attention
    weights drop with ``attention_dropout`` (default: ``dropout``)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float,
        attention: str,
        attention_dropout: float | None = None,
        **options,
    ) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(d_model)
        p = dropout if attention_dropout is None else attention_dropout
        self.attn = build_attention(attention, d_model, n_heads, p, **options)
        self.ff_norm = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.GELU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor, context: dict) -> torch.Tensor:
        x = x + self.dropout(self.attn(self.attn_norm(x), pad_mask, context))
        return x + self.dropout(self.ff(self.ff_norm(x)))


class TransformerEncoder(nn.Module):
    """Token ids (B, n) -> states (B, n, d).

    ``positions`` is ``"sinusoidal"`` or ``"learned"``; sentences longer than ``max_length``
    are an error, never truncated. ``attention_dropout`` drops attention weights (default:
    ``dropout``).
    """

    cross_attention = CrossAttention  # a translation decoder attends over the token states

    def __init__(
        self,
        vocab_size: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.1,
        attention: str = "vanilla",
        positions: str = "sinusoidal",
        max_length: int = 512,
        attention_options: dict | None = None,
        attention_dropout: float | None = None,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_length = max_length
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        init_embedding(self.embed, d_model)
        if positions == "sinusoidal":
            self.register_buffer(
                "position_table", sinusoidal_positions(max_length, d_model), persistent=False
            )
            self.learned_positions = None
        elif positions == "learned":
            self.learned_positions = nn.Embedding(max_length, d_model)
        else:
            raise ValueError(f"positions must be 'sinusoidal' or 'learned', not {positions!r}")
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(
                d_model,
                n_heads,
                d_ff,
                dropout,
                attention,
                attention_dropout,
                **(attention_options or {}),
            )
            for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d_model)
        # Called with every hidden state of each pass (B, n, d): 0 the embeddings with
        # their positions (or the words read), i the output of layer i before the final
        # norm; a loss on them keeps those it reads (``models.tree_loss``).
        self.state_watchers: list[Callable[[list[torch.Tensor]], None]] = []

    def forward(
        self,
        tokens: torch.Tensor,
        pad_mask: torch.Tensor,
        context: dict | None = None,
        words: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """tokens: (B, n) long; pad_mask: (B, n) bool, True at padding. Returns (B, n, d).
        ``words`` (B, n, d): vectors to read instead of the embeddings and positions (a
        pretrained encoder's, which know their positions)."""
        n = tokens.shape[1]
        if n > self.max_length:
            raise ValueError(f"sequence of {n} tokens is longer than max_length={self.max_length}")
        if words is not None:
            x = self.dropout(words)
        else:
            if self.learned_positions is not None:
                pos = self.learned_positions.weight[:n]
            else:
                pos = self.position_table[:n]
            x = self.dropout(self.embed(tokens) * math.sqrt(self.d_model) + pos)
        # One fresh context per pass, shared by its layers: a mechanism may hand state from
        # one layer to the next (the constituent links), never from one pass to another.
        context = dict(context or {})
        watched = [x] if self.state_watchers else None
        for index, layer in enumerate(self.layers):
            context[LAYER] = index
            x = layer(x, pad_mask, context)
            if watched is not None:
                watched.append(x)
        for watch in self.state_watchers:
            watch(watched)
        return self.final_norm(x)

    def state_positions(self, inputs: EncoderInputs) -> WordPositions:
        """A state per token, a token per word."""
        return token_positions(inputs.pad_mask)

    def encode_inputs(
        self, inputs: EncoderInputs, words: torch.Tensor | None = None
    ) -> torch.Tensor:
        """(B, n, d) states of a typed batch (the registry's calling convention); ``words``
        as ``forward``'s."""
        return self(inputs.tokens, inputs.pad_mask, inputs.context(), words)
