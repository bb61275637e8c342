"""Multi-head attention's shared steps, for every mechanism and cross-attention: heads
split from the model's dimensions and merged back, and the weights of scaled dot-product
attention under an additive or boolean bias."""

from __future__ import annotations

import math

import torch


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, n, d) -> (B, H, n, d / H)."""
    b, n, d = x.shape
    return x.view(b, n, n_heads, d // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, n, d / H) -> (B, n, d)."""
    b, h, n, dh = x.shape
    return x.transpose(1, 2).reshape(b, n, h * dh)


def attention_probs(q: torch.Tensor, k: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(d_h) + bias) for queries and keys (B, H, n, d_h), as
    ``F.scaled_dot_product_attention`` weighs values; ``bias`` is additive, or boolean
    (True where attention may flow), broadcast to (B, H, n, n)."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if bias.dtype == torch.bool:
        return scores.masked_fill(~bias, -torch.inf).softmax(-1)
    return (scores + bias).softmax(-1)
