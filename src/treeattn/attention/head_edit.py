"""Changing chosen heads of one attention layer: an additive bias on their scores, or a
prior multiplying their probabilities. The hook through which syntax enters a pretrained
encoder (``treeattn.models.syntax_injection``), made by each mechanism's injection
(``treeattn.attention.injection``); the heads not chosen run as before.

Written for queries, keys and values already split into heads, (B, H, p, d / H), so that
the backbone's ``BertLayer`` (``treeattn.models.bert``) and a ``transformers`` attention
function share it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor


@dataclass(frozen=True)
class HeadEdit:
    """The change to one layer's attention.

    ``heads``: the indices of the heads changed. ``bias`` (B, 1, p, p): added to their
    scores before the softmax (``-inf`` shuts a key). ``prior`` (B, 1, p, p): multiplies
    their probabilities after it, not renormalised (the Tree Transformer's
    ``E = C * softmax(Q K^T / sqrt(d_k))``). Exactly one of ``bias`` and ``prior``.
    """

    heads: tuple[int, ...]
    bias: Tensor | None = None
    prior: Tensor | None = None

    def __post_init__(self) -> None:
        if (self.bias is None) == (self.prior is None):
            raise ValueError("a HeadEdit needs exactly one of bias and prior")
        if len(set(self.heads)) != len(self.heads):
            raise ValueError(f"heads {self.heads} repeat an index")


# What an encoder asks for each layer: (layer index, the layer's input states) -> an edit.
LayerEdits = Callable[[int, Tensor], "HeadEdit | None"]


def additive_mask(attn_mask: Tensor | None, dtype: torch.dtype) -> Tensor | float:
    """A mask as ``F.scaled_dot_product_attention`` reads it (boolean ``allowed``, an
    additive float mask, or None) as something to add to scores."""
    if attn_mask is None:
        return 0.0
    if attn_mask.dtype == torch.bool:
        return torch.zeros(attn_mask.shape, dtype=dtype, device=attn_mask.device).masked_fill(
            ~attn_mask, -torch.inf
        )
    return attn_mask.to(dtype)


def edited_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None,
    edit: HeadEdit | None,
    dropout_p: float = 0.0,
    scale: float | None = None,
) -> Tensor:
    """Scaled dot-product attention (B, H, p, d_h) -> (B, H, p, d_h), with ``edit``
    applied to its heads; without an edit exactly ``F.scaled_dot_product_attention``.

    The heads not edited are one call of ``F.scaled_dot_product_attention`` on their
    slice, the edited ones another (a bias) or an explicit softmax (a prior, which no
    fused kernel takes); the two are put back in head order.
    """
    if edit is None or not edit.heads:
        return F.scaled_dot_product_attention(
            query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, scale=scale
        )
    n_heads = query.shape[1]
    chosen = _chosen(edit, n_heads)
    others = [h for h in range(n_heads) if h not in edit.heads]
    mask = _of_heads(additive_mask(attn_mask, query.dtype), chosen)
    q, k, v = query[:, chosen], key[:, chosen], value[:, chosen]
    if edit.bias is not None:
        changed = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask + edit.bias.to(query.dtype), dropout_p=dropout_p, scale=scale
        )
    else:
        probs = _times_prior(q, k, mask, edit.prior, scale)
        if dropout_p > 0:
            probs = F.dropout(probs, dropout_p)
        changed = probs @ v
    if not others:
        return changed[:, _inverse(chosen)]
    kept = F.scaled_dot_product_attention(
        query[:, others],
        key[:, others],
        value[:, others],
        attn_mask=_of_heads(attn_mask, others),
        dropout_p=dropout_p,
        scale=scale,
    )
    return torch.cat([changed, kept], dim=1)[:, _inverse(chosen + others)]


def edited_probabilities(
    query: Tensor,
    key: Tensor,
    attn_mask: Tensor | None,
    edit: HeadEdit | None,
    scale: float | None = None,
) -> Tensor:
    """The probabilities (B, H, p, p) that ``edited_attention`` mixes the values with
    (before dropout): every head's softmax, the bias added to the chosen heads' scores
    before it, or the prior multiplying their probabilities after it."""
    mask = additive_mask(attn_mask, query.dtype)
    scores = _scores(query, key, scale) + mask  # (B, H, p, p), a new tensor
    if edit is None or not edit.heads:
        return masked_softmax(scores)
    chosen = _chosen(edit, query.shape[1])
    if edit.bias is not None:
        scores[:, chosen] += edit.bias.to(query.dtype)
        return masked_softmax(scores)
    probs = masked_softmax(scores)
    probs[:, chosen] = _times_prior(
        query[:, chosen], key[:, chosen], _of_heads(mask, chosen), edit.prior, scale
    )
    return probs


def masked_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dimension in which a row whose every score is ``-inf`` (a
    padded query under left padding, a sliding window over padding) gives zeros, as
    ``F.scaled_dot_product_attention`` does, not NaN: a NaN there would reach the real
    positions of the next layer as ``0 * NaN``. The row is opened before the softmax, so
    that no NaN reaches a gradient either."""
    shut = scores.amax(-1, keepdim=True) == -torch.inf
    return torch.softmax(scores.masked_fill(shut, 0.0), dim=-1).masked_fill(shut, 0.0)


def _scores(query: Tensor, key: Tensor, scale: float | None) -> Tensor:
    step = query.shape[-1] ** -0.5 if scale is None else scale
    return query @ key.transpose(-1, -2) * step


def _times_prior(
    query: Tensor, key: Tensor, mask: Tensor | float, prior: Tensor, scale: float | None
) -> Tensor:
    """softmax(scores) * prior, not renormalised (the Tree Transformer's E = C * A)."""
    probs = masked_softmax(_scores(query, key, scale) + mask)
    return probs * prior.to(query.dtype)


def _of_heads(mask: Tensor | float | None, heads: list[int]) -> Tensor | float | None:
    """The part of a mask for ``heads``: a mask of one row per head (T5's relative
    positions, (B, H, p, p)) is sliced, one shared by all heads stays."""
    if isinstance(mask, Tensor) and mask.dim() == 4 and mask.shape[1] > 1:
        return mask[:, heads]
    return mask


def _chosen(edit: HeadEdit, n_heads: int) -> list[int]:
    """The edit's heads as a list, checked against the layer's ``n_heads``."""
    if min(edit.heads) < 0 or max(edit.heads) >= n_heads:
        raise ValueError(f"heads {edit.heads}: this layer has heads 0..{n_heads - 1}")
    return list(edit.heads)


def _inverse(order: list[int]) -> list[int]:
    """Where each head went in ``order``: indexing by it puts the heads back."""
    back = [0] * len(order)
    for position, head in enumerate(order):
        back[head] = position
    return back
