"""The partitioned Transformer encoder of Kitaev & Klein (2018), the encoder the label
attention parser builds on.

Word vectors are [content; position]. Every projection is block-diagonal: the content
half of each query, key and value comes from the content part only, the position half from
the position part; attention logits add both halves' dot products; the output and the
feed-forward layer map each half back to its own part. So content and position never mix,
except through where attention looks. Layers are post-LN (LN(x + sublayer(x))), as in the
paper.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class PartitionedLinear(nn.Module):
    """[content; position] -> [content W_c; position W_p]: a block-diagonal linear map."""

    def __init__(self, d_in: tuple[int, int], d_out: tuple[int, int], bias: bool = True) -> None:
        super().__init__()
        self.d_in = d_in
        self.content = nn.Linear(d_in[0], d_out[0], bias=bias)
        self.position = nn.Linear(d_in[1], d_out[1], bias=bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        content, position = x.split(self.d_in, dim=-1)
        return self.content(content), self.position(position)


class PartitionedAttention(nn.Module):
    """Multi-head self-attention with content and position halves in every head."""

    def __init__(self, d_parts: tuple[int, int], n_heads: int, d_kv: int, dropout: float) -> None:
        super().__init__()
        if d_kv % 2:
            raise ValueError(f"d_kv must be even (a content and a position half), got {d_kv}")
        half = n_heads * d_kv // 2
        self.n_heads, self.dropout = n_heads, dropout
        self.qkv = PartitionedLinear(d_parts, (3 * half, 3 * half), bias=False)
        self.out = PartitionedLinear((half, half), d_parts, bias=False)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        content, position = self.qkv(x)

        def heads(part: torch.Tensor) -> list[torch.Tensor]:  # q, k, v: (B, H, T, d_kv / 2)
            return [p.view(b, t, self.n_heads, -1).transpose(1, 2) for p in part.chunk(3, -1)]

        (qc, kc, vc), (qp, kp, vp) = heads(content), heads(position)
        # The logits are q_c.k_c + q_p.k_p: one attention over the joined halves.
        allowed = ~pad_mask[:, None, None, :]
        joined = F.scaled_dot_product_attention(
            torch.cat([qc, qp], -1),
            torch.cat([kc, kp], -1),
            torch.cat([vc, vp], -1),
            attn_mask=allowed,
            dropout_p=self.dropout if self.training else 0.0,
        )
        half = vc.shape[-1]
        out_c, out_p = (h.transpose(1, 2).reshape(b, t, -1) for h in joined.split(half, -1))
        return torch.cat(self.out(torch.cat([out_c, out_p], -1)), -1)


class PartitionedFeedForward(nn.Module):
    def __init__(self, d_parts: tuple[int, int], d_ff: int, dropout: float) -> None:
        super().__init__()
        half = d_ff // 2
        self.up = PartitionedLinear(d_parts, (half, half))
        self.down = PartitionedLinear((half, half), d_parts)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        content, position = self.up(x)
        hidden = self.dropout(F.relu(torch.cat([content, position], -1)))
        return torch.cat(self.down(hidden), -1)


class PartitionedEncoderLayer(nn.Module):
    def __init__(
        self, d_parts: tuple[int, int], n_heads: int, d_kv: int, d_ff: int, dropout: float
    ) -> None:
        super().__init__()
        d_model = sum(d_parts)
        self.attention = PartitionedAttention(d_parts, n_heads, d_kv, dropout)
        self.feed_forward = PartitionedFeedForward(d_parts, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.dropout(self.attention(x, pad_mask)))
        return self.norm2(x + self.dropout(self.feed_forward(x)))
