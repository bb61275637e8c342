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

Both gates are additive biases on the attention scores. The hard one is 0 or ``-inf``
from each token's range bounds, found by binary lifting in O(n log n). The soft one is
the log gate, since renormalising ``p * gate`` is ``softmax(scores + log gate)``, and
``log alpha = logsigmoid(2 x)``: two cumulative sums outward from each query, O(n^2) per
sentence. The bias is built once per forward pass and shared by the layers; the local
heads and the global ones are two calls of ``F.scaled_dot_product_attention``.

Inside a pretrained encoder (``DistanceInjection``) the chosen heads of the chosen layers
take the same log gate, made once per batch over the words and mapped to their pieces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from treeattn import plugins
from treeattn.attention.head_edit import HeadEdit
from treeattn.attention.heads import attention_probs, merge_heads, split_heads
from treeattn.attention.injection import SyntaxInjection, SyntaxInputs, word_values, words_to_pieces
from treeattn.attention.inspection import Captures, MechanismView, Panel, SentenceView, head_numbers
from treeattn.attention.registry import LAYER, Capabilities, Mechanism, Reads

GAPS = Reads.GAPS  # context key: (B, n-1) distances between adjacent tokens
BIAS = "distance_mask"  # context key: the (B, 1, n, n) additive gate, built once per pass
GATES = ("hard", "soft")


def local_range(gaps: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each token's local range ``[start, end)`` (two (B, n) tensors) from gap distances
    (B, n-1): to the left up to the nearest gap wider than the token's left gap, to the
    right up to the nearest gap wider than its right gap. Gaps past a sentence's end may
    hold anything: only padding lies beyond them."""
    n = gaps.shape[1] + 1
    if n == 1:  # a lone token has no gaps: its range is itself
        start = torch.zeros(gaps.shape[0], 1, dtype=torch.long, device=gaps.device)
        return start, start + 1
    # Token i's right gap is gap i; it stops before the first wider gap k, so end = k + 1.
    end = F.pad(first_wider(gaps) + 1, (0, 1), value=n)
    # Its left gap is gap i-1: the same search on the reversed gaps.
    start = F.pad(n - 1 - first_wider(gaps.flip(-1)).flip(-1), (1, 0), value=0)
    return start, end


def first_wider(gaps: torch.Tensor) -> torch.Tensor:
    """(B, L) -> (B, L): for each gap m, the first gap k > m wider than it, or L if none.

    Binary lifting over a table of windowed maxima: ``widths[p][b, k]`` is the widest of
    gaps k .. k + 2^p - 1, so a search jumps 2^p gaps at once while none is wider;
    O(L log L) per sentence, against O(L^2) for comparing every pair.
    """
    length = gaps.shape[-1]
    widest = torch.inf if gaps.is_floating_point() else torch.iinfo(gaps.dtype).max

    def pad(t: torch.Tensor, count: int) -> torch.Tensor:  # windows past the end block
        return torch.cat([t, t.new_full((t.shape[0], count), widest)], dim=-1)

    widths = [pad(gaps, 1)]
    while 2 ** len(widths) <= length:
        step, last = 2 ** (len(widths) - 1), widths[-1]
        widths.append(torch.maximum(last, pad(last[:, step:], step)))
    found = torch.arange(1, length + 1, device=gaps.device).expand_as(gaps)
    for p in reversed(range(len(widths))):
        found = torch.where(widths[p].gather(-1, found) <= gaps, found + 2**p, found)
    return found


def local_bias(
    gaps: torch.Tensor, gate: str = "hard", tau: float = 1.0, dtype: torch.dtype = torch.float64
) -> torch.Tensor:
    """The log gate (B, n, n), in ``dtype``, of query i toward key j from gap distances
    (B, n-1).

    ``hard``: 0 inside i's local range, ``-inf`` outside. ``soft``: the sum of log alphas
    over the gaps between i and j (0 on the diagonal), accumulated outward from i, so that
    no long sums are subtracted and float32 keeps the gate to about 1e-7.
    """
    if gate not in GATES:
        raise ValueError(f"gate must be one of {', '.join(GATES)}, not {gate!r}")
    if gate == "hard":
        inside = local_allowed(gaps)
        return torch.zeros(inside.shape, dtype=dtype, device=gaps.device).masked_fill(
            ~inside, -torch.inf
        )
    if not tau > 0:
        raise ValueError(f"tau must be positive, got {tau}")
    scale = 2 / tau  # alpha = sigmoid(scale * (own - gap + 1/2))
    gaps = gaps.to(dtype) * scale
    n = gaps.shape[1] + 1
    k = torch.arange(n - 1, device=gaps.device)
    left = k < torch.arange(n, device=gaps.device)[:, None]  # [i, k]: gap k is left of i
    own_left, own_right = F.pad(gaps, (1, 0)) + scale / 2, F.pad(gaps, (0, 1)) + scale / 2
    # [b, i, k]: log alpha of gap k for query i, against i's own gap on that side.
    own = torch.where(left, own_left[:, :, None], own_right[:, :, None])
    log_alpha = F.logsigmoid(own - gaps[:, None, :])
    # Key j > i crosses gaps i..j-1, key j < i gaps j..i-1.
    bias = log_alpha.new_zeros(gaps.shape[0], n, n)
    bias[..., 1:] = log_alpha.masked_fill(left, 0.0).cumsum(-1)
    bias[..., :-1] += log_alpha.masked_fill(~left, 0.0).flip(-1).cumsum(-1).flip(-1)
    return bias


def local_allowed(gaps: torch.Tensor) -> torch.Tensor:
    """(B, n, n) True where key j lies in query i's local range (the hard gate)."""
    start, end = local_range(gaps)
    j = torch.arange(gaps.shape[1] + 1, device=gaps.device)
    return (start[:, :, None] <= j) & (j < end[:, :, None])


def _check_gate(gate: str, tau: float) -> None:
    if gate not in GATES:
        raise ValueError(f"gate must be one of {', '.join(GATES)}, not {gate!r}")
    if not tau > 0:
        raise ValueError(f"tau must be positive, got {tau}")


class DistanceInjection(SyntaxInjection):
    """The chosen heads of a pretrained encoder keep to each word's syntactic local range
    (``gate="hard"``) or are weighted by the soft gate (``gate="soft"``, temperature
    ``tau``): the word-level log gate of ``local_bias``, added to their scores. No new
    parameters."""

    name = "distance"
    reads = frozenset({Reads.GAPS})
    # The bias reads the tree, given whole, and never the text: under a causal model's own
    # mask it lets no position see a later one.
    causal_form = True

    def __init__(
        self,
        layers: Sequence[int],
        heads: Sequence[int],
        n_layers: int,
        n_heads: int,
        d_model: int,
        gate: str = "hard",
        tau: float = 1.0,
    ) -> None:
        super().__init__(layers, heads, n_layers, n_heads, d_model)
        _check_gate(gate, tau)
        self.gate, self.tau = gate, float(tau)

    def prepare(self, gaps: torch.Tensor | None, inputs: SyntaxInputs) -> dict[str, Any]:
        words = local_bias(gaps, self.gate, self.tau)  # the same in every chosen layer
        return {
            "bias": words_to_pieces(words, inputs.word_of_piece, inputs.pad_mask, 0.0, -torch.inf)
        }

    def edit(self, layer: int, states: torch.Tensor, inputs: SyntaxInputs) -> HeadEdit:
        return HeadEdit(self.heads, bias=inputs.prepared["bias"])

    def inspect(self, edit: HeadEdit, first_piece: torch.Tensor) -> dict[str, Any]:
        return {"gate": word_values(edit.bias, first_piece).exp(), "local_heads": list(edit.heads)}


class DistanceView(MechanismView):
    """The gate of each word's local range (Hou et al.'s Fig. 1), and which heads keep to
    it in which layers."""

    def capture(
        self, module: nn.Module, x: torch.Tensor, pad_mask: torch.Tensor, context: dict
    ) -> dict[str, Any]:
        local = module.local_heads_in(context.get(LAYER, 0))
        if not local:
            return {}
        bias = context[(BIAS, module.gate, module.tau)]  # (B, 1, n, n) the log gate
        return {"gate": bias[:, 0].exp(), "local_heads": list(range(local))}

    def panels(self, captured: Captures, sentence: SentenceView) -> list[Panel]:
        gated = [(layer, found) for layer, found in captured if "gate" in found]
        if not gated:
            return []
        # Every local layer has the same local heads and the same gate.
        in_layers = ", ".join(sentence.layer_names[layer] for layer, _ in gated)
        first = gated[0][1]
        note = (
            f"heads {head_numbers(first['local_heads'])} attend inside each word's syntactic "
            f"local range in {in_layers}; the other heads attend everywhere"
        )
        words = sentence.words
        return [Panel("local range per word (gate)", words, words, first["gate"][0], note)]


CAPABILITIES = Capabilities(
    description="syntax-guided local attention: some heads stay in each token's syntactic range",
    injection=DistanceInjection,
    view=DistanceView(),
)


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
        _check_gate(gate, tau)
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
        q, k, v = (split_heads(part, self.n_heads) for part in self.qkv(x).chunk(3, dim=-1))
        p = self.dropout if self.training else 0.0
        real_keys = ~pad_mask[:, None, None, :]  # (B, 1, 1, n)
        h = self.local_heads_in(context.get(LAYER, 0))
        if h == 0:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=real_keys, dropout_p=p)
            return self.out(merge_heads(out))
        key = (BIAS, self.gate, self.tau)
        if key not in context:  # the same for every layer of this pass
            context[key] = self._local_mask(context, pad_mask, x.dtype)
        # The local heads with their gate, the global ones as plain attention.
        near = F.scaled_dot_product_attention(
            q[:, :h], k[:, :h], v[:, :h], attn_mask=context[key], dropout_p=p
        )
        if h == self.n_heads:
            return self.out(merge_heads(near))
        far = F.scaled_dot_product_attention(
            q[:, h:], k[:, h:], v[:, h:], attn_mask=real_keys, dropout_p=p
        )
        return self.out(merge_heads(torch.cat([near, far], dim=1)))

    def attention_weights(
        self, x: torch.Tensor, pad_mask: torch.Tensor, context: dict | None = None
    ) -> torch.Tensor:
        """(B, H, n, n) the probabilities ``forward`` mixes values with (before dropout):
        the gated local heads first, then the global ones; for looking inside."""
        context = {} if context is None else context
        q, k, _ = (split_heads(part, self.n_heads) for part in self.qkv(x).chunk(3, dim=-1))
        real_keys = ~pad_mask[:, None, None, :]
        h = self.local_heads_in(context.get(LAYER, 0))
        if h == 0:
            return attention_probs(q, k, real_keys)
        key = (BIAS, self.gate, self.tau)
        bias = context[key] if key in context else self._local_mask(context, pad_mask, x.dtype)
        near = attention_probs(q[:, :h], k[:, :h], bias)
        return torch.cat([near, attention_probs(q[:, h:], k[:, h:], real_keys)], dim=1)

    def local_heads_in(self, layer: int) -> int:
        """How many heads (the first ones) keep to local ranges in encoder layer ``layer``."""
        return self.local_heads if self.layers is None or layer in self.layers else 0

    def _local_mask(self, context: dict, pad_mask: torch.Tensor, dtype: torch.dtype):
        """(B, 1, n, n): the additive log gate, padded keys shut; padded queries see every
        real key (a row of nothing would give NaN). Additive for both gates, so that
        attention does not convert a boolean mask in every layer."""
        if GAPS not in context:
            raise KeyError(f"distance attention needs context[{GAPS!r}], (B, n-1)")
        gaps, (batch, n) = context[GAPS], pad_mask.shape
        if gaps.shape != (batch, max(n - 1, 0)):
            raise ValueError(
                f"distance attention: context[{GAPS!r}] has shape {tuple(gaps.shape)}, but "
                f"a batch of {batch} sentences of {n} tokens has ({batch}, {max(n - 1, 0)}) gaps"
            )
        precision = torch.float64 if dtype == torch.float64 else torch.float32
        bias = local_bias(context[GAPS], self.gate, self.tau, precision)
        bias = bias.masked_fill(pad_mask[:, :, None], 0.0)
        return bias.masked_fill(pad_mask[:, None, :], -torch.inf).to(dtype)[:, None]


plugins.mechanisms.register(
    Mechanism(
        "distance",
        layer=DistanceAttention,
        reads=frozenset({Reads.GAPS}),
        capabilities=CAPABILITIES,
    )
)
