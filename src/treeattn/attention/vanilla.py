"""Scaled dot-product multi-head self-attention (Vaswani et al. 2017), the baseline."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from treeattn import plugins
from treeattn.attention.heads import attention_probs, merge_heads, split_heads
from treeattn.attention.registry import CAUSAL, Capabilities, Mechanism


def self_allowed(pad_mask: torch.Tensor, context: dict | None) -> torch.Tensor:
    """(B, 1, 1, n) every query sees the real keys; (B, 1, n, n) in a causal pass
    (``context[CAUSAL]``), only those at or before it. With padding at the end, every
    query keeps at least the first key."""
    allowed = ~pad_mask[:, None, None, :]
    if context and context.get(CAUSAL):
        n = pad_mask.shape[1]
        earlier = torch.ones(n, n, dtype=torch.bool, device=pad_mask.device).tril()
        allowed = allowed & earlier
    return allowed


class VanillaSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.dropout = dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(
        self, x: torch.Tensor, pad_mask: torch.Tensor, context: dict | None = None
    ) -> torch.Tensor:
        """x: (B, n, d); pad_mask: (B, n), True at padding. Returns (B, n, d)."""
        q, k, v = (split_heads(t, self.n_heads) for t in self.qkv(x).chunk(3, dim=-1))
        allowed = self_allowed(pad_mask, context)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=allowed, dropout_p=self.dropout if self.training else 0.0
        )
        return self.out(merge_heads(y))

    def attention_weights(
        self, x: torch.Tensor, pad_mask: torch.Tensor, context: dict | None = None
    ) -> torch.Tensor:
        """(B, H, n, n) the probabilities ``forward(x, pad_mask)`` mixes values with (before
        dropout), for looking inside: the fused kernel above does not return them."""
        q, k, _ = (split_heads(t, self.n_heads) for t in self.qkv(x).chunk(3, dim=-1))
        return attention_probs(q, k, self_allowed(pad_mask, context))


plugins.mechanisms.register(
    Mechanism(
        "vanilla",
        layer=VanillaSelfAttention,
        capabilities=Capabilities(
            "the plain Transformer: scaled dot-product self-attention", causal=True
        ),
    )
)
