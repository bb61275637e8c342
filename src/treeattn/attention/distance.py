"""Syntax-guided local attention by constituency syntactic distance (Hou et al. 2022).

A sentence's tree enters as one number per gap between adjacent tokens, its syntactic
distance (``treeattn.trees.distance``): between two subword pieces of one word the
distance is 0, every distance is then raised by 1, and sentences sharing a sequence are
joined by ``SENTENCE_BREAK``.

Token i's *syntactic local range* reaches left across gaps of distance at most that of
i's own left gap, and right across gaps of at most that of its right gap. In "I swim
across the river ." (distances 4 3 2 1 4), "across" sees swim ... river and "the" sees
across ... river. The range is the span of the lowest phrase holding i and its left
neighbour joined to that of the lowest phrase holding i and its right neighbour.

The first ``local_heads`` heads of the chosen layers attend inside that range only (the
``hard`` gate), or are weighted by the ``soft`` gate of the authors' release: each gap k
crossed from i on one side passes ``alpha = (tanh((d_i - d_k + 1/2) / tau) + 1) / 2``,
where ``d_i`` is i's own gap on that side; a key's gate is the product of the alphas on
the way to it, and the gated probabilities are renormalised. The half step (distances are
integers) puts the gate's midpoint between "at most" and "more than", so that the soft
gate tends to the hard one as tau -> 0. The other heads stay global. No parameters beyond
those of multi-head attention.

Both gates are one additive bias on the attention scores: renormalising ``p * gate`` is
``softmax(scores + log gate)``, and ``log alpha = logsigmoid(2 x)``. The bias is built
from two cumulative sums per query, O(n^2) per sentence, once per forward pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.attention.registry import LAYER, register_attention
from treeattn.attention.vanilla import merge_heads, split_heads
from treeattn.trees import Tree
from treeattn.trees.distance import syntactic_distances

GAPS = "gap_distances"  # context key: (B, n-1) distances between adjacent tokens
BIAS = "distance_bias"  # context key: the (B, n, n) local bias, built once per pass
SENTENCE_BREAK = 999
GATES = ("hard", "soft")


def gap_distances(
    trees: Sequence[Tree], pieces: Sequence[Sequence[int]] | None = None
) -> list[int]:
    """The distances between adjacent tokens of ``trees`` read as one sequence.

    ``pieces[s][w]`` is how many subword tokens word w of sentence s became (default: one
    each); the gaps inside a word are 0 before the shift by 1, and consecutive sentences
    are joined by ``SENTENCE_BREAK``.
    """
    if pieces is not None and len(pieces) != len(trees):
        raise ValueError(f"{len(trees)} trees but piece counts for {len(pieces)} sentences")
    gaps: list[int] = []
    for s, tree in enumerate(trees):
        words = syntactic_distances(tree)
        counts = [1] * (len(words) + 1) if pieces is None else list(pieces[s])
        if len(counts) != len(words) + 1 or min(counts) < 1:
            raise ValueError(
                f"sentence {s + 1}: {len(words) + 1} words need as many piece counts of at "
                f"least 1, got {counts}"
            )
        if s:
            gaps.append(SENTENCE_BREAK)
        for w, count in enumerate(counts):
            gaps.extend([1] * (count - 1))  # inside the word: 0, shifted
            if w < len(words):
                gaps.append(words[w] + 1)
    return gaps


def local_bias(gaps: torch.Tensor, gate: str = "hard", tau: float = 1.0) -> torch.Tensor:
    """The log gate (B, n, n) of query i toward key j from gap distances (B, n-1).

    ``hard``: 0 inside i's local range, ``-inf`` outside. ``soft``: the log of the product
    of alphas over the gaps between i and j (0 on the diagonal). Gaps past a sentence's end
    may hold anything finite: only padded keys lie beyond them.
    """
    if gate not in GATES:
        raise ValueError(f"gate must be one of {', '.join(GATES)}, not {gate!r}")
    if gate == "soft" and not tau > 0:
        raise ValueError(f"tau must be positive, got {tau}")
    gaps = gaps.to(torch.float64)
    own_left = F.pad(gaps, (1, 0))  # (B, n): query i's left gap (none for the first)
    own_right = F.pad(gaps, (0, 1))  # query i's right gap (none for the last)
    # [b, i, k]: how gap k (between tokens k and k+1) weighs for query i on either side.
    margin_left = own_left[:, :, None] - gaps[:, None, :] + 0.5
    margin_right = own_right[:, :, None] - gaps[:, None, :] + 0.5
    if gate == "hard":
        # Count the gaps too wide to cross; a key is in range when none lies on the way.
        weight_left, weight_right = (margin_left < 0).double(), (margin_right < 0).double()
    else:
        weight_left = F.logsigmoid(2 * margin_left / tau)
        weight_right = F.logsigmoid(2 * margin_right / tau)
    # prefix[b, i, m] = sum of weights of gaps 0..m-1, so gaps j..i-1 sum to
    # prefix[i, i] - prefix[i, j] (keys left of i) and gaps i..j-1 to prefix[i, j] -
    # prefix[i, i] (keys right of i).
    prefix_left = F.pad(weight_left.cumsum(-1), (1, 0))
    prefix_right = F.pad(weight_right.cumsum(-1), (1, 0))
    at_query_left = prefix_left.diagonal(dim1=1, dim2=2)[:, :, None]
    at_query_right = prefix_right.diagonal(dim1=1, dim2=2)[:, :, None]
    n = prefix_left.shape[-1]
    right_of_query = torch.ones(n, n, dtype=torch.bool, device=gaps.device).triu(1)
    crossed = torch.where(
        right_of_query, prefix_right - at_query_right, at_query_left - prefix_left
    )
    if gate == "hard":
        return torch.zeros_like(crossed).masked_fill(crossed > 0, -torch.inf)
    return crossed  # a sum of log alphas


@register_attention("distance")
class DistanceAttention(nn.Module):
    """Multi-head self-attention whose first ``local_heads`` heads, in the ``layers``
    listed (default: every layer), keep to each token's syntactic local range.

    Options: ``local_heads`` (default 2), ``layers`` (indices, bottom layer 0),
    ``gate`` (``hard`` or ``soft``), ``tau`` (the soft gate's temperature, default 1).
    Reads ``context["gap_distances"]`` (B, n-1) and the encoder's ``context["layer"]``.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        local_heads: int = 2,
        layers: Sequence[int] | None = None,
        gate: str = "hard",
        tau: float = 1.0,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        if not 0 <= local_heads <= n_heads:
            raise ValueError(f"local_heads must lie in 0..{n_heads}, got {local_heads}")
        if gate not in GATES:
            raise ValueError(f"gate must be one of {', '.join(GATES)}, not {gate!r}")
        if not tau > 0:
            raise ValueError(f"tau must be positive, got {tau}")
        self.n_heads, self.local_heads = n_heads, local_heads
        self.layers = None if layers is None else frozenset(int(i) for i in layers)
        self.gate, self.tau = gate, float(tau)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.dropout = dropout

    def forward(
        self, x: torch.Tensor, pad_mask: torch.Tensor, context: dict | None = None
    ) -> torch.Tensor:
        """x: (B, n, d); pad_mask: (B, n), True at padding (at the end). Returns (B, n, d)."""
        context = {} if context is None else context
        batch, n, _ = x.shape
        q, k, v = (split_heads(part, self.n_heads) for part in self.qkv(x).chunk(3, dim=-1))
        padded = torch.zeros(batch, 1, 1, n, dtype=x.dtype, device=x.device)
        padded = padded.masked_fill(pad_mask[:, None, None, :], -torch.inf)
        bias = padded.expand(batch, self.n_heads, n, n)
        local = self.layers is None or context.get(LAYER, 0) in self.layers
        if local and self.local_heads:
            if GAPS not in context:
                raise KeyError(f"distance attention needs context[{GAPS!r}], (B, n-1)")
            key = (BIAS, self.gate, self.tau)
            if key not in context:  # the same for every layer of this pass
                gate = local_bias(context[GAPS], self.gate, self.tau).to(x.dtype)
                # Padded queries keep their global rows: a row of -inf would give NaN.
                context[key] = gate.masked_fill(pad_mask[:, :, None], 0.0)
            heads = torch.arange(self.n_heads, device=x.device) < self.local_heads
            bias = bias + torch.where(heads[None, :, None, None], context[key][:, None], 0.0)
        p = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p)
        return self.out(merge_heads(out))
