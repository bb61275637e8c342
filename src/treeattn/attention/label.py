"""The Label Attention Layer (Mrini et al., Findings of EMNLP 2020, §2, Figs. 2-4).

Each head stands for one syntactic label. Where self-attention gives every word a query,
a label attention head has one learned query vector ``q_l`` (no W^Q) and attends once over
the sentence with its own key and value matrices:

    a_l = softmax(q_l K_l^T / sqrt(d))      K_l = X W^K_l,  V_l = X W^V_l      (Eq. 1-2)
    c_l = a_l V_l                           one vector per head and sentence

The head vector is projected back to the model size (``W^O``, shared by the heads), added
to every word vector (one residual connection per head), so each word gets one vector per
label:

    r_{t,l} = x_t + c_l W^O                                                   (Fig. 3)

With ``combine="concat"`` (the paper's best) each ``r_{t,l}`` is reduced to ``d_proj``
(``W^R``) and layer-normalised, and a word's output is the concatenation over heads
(Fig. 4): (B, T, H * d_proj). ``combine="self"`` instead combines the heads the way
multi-head self-attention does: LN(x_t + [c_1; ...; c_H] W^O'), (B, T, d). ``query=
"matrix"`` gives every word its own query (``W^Q``, as self-attention), Table 2's other
row. Residual dropout (RD) drops features of each head's projected vector, the same for
every word of a sentence, as the authors' release does.

The release scales the logits by sqrt(d_model) (not sqrt(d_k)); so does this layer. With
``d_position`` the layer is partitioned (Kitaev & Klein 2018): keys, queries and values
have a content half computed from the content part of x only and a position half from the
position part, and W^O maps each half back to its own part.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

COMBINES = ("concat", "self")
QUERIES = ("vector", "matrix")


class LabelAttention(nn.Module):
    """(B, T, d) word vectors and a (B, T) ``pad_mask`` -> (B, T, H * d_proj) (``concat``)
    or (B, T, d) (``self``).

    ``n_heads`` is the number of labels; ``d_kv`` the key/query and value width of a head;
    ``d_position`` the width of the position part of x when partitioned (None: not).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_kv: int = 64,
        d_proj: int = 64,
        *,
        query: str = "vector",
        combine: str = "concat",
        residual_dropout: float = 0.0,
        attention_dropout: float = 0.0,
        d_position: int | None = None,
    ) -> None:
        super().__init__()
        if combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, not {combine!r}")
        if query not in QUERIES:
            raise ValueError(f"query must be one of {QUERIES}, not {query!r}")
        if d_position is not None and (d_kv % 2 or not 0 < d_position < d_model):
            raise ValueError("a partitioned layer needs an even d_kv and 0 < d_position < d_model")
        self.d_model, self.n_heads, self.d_kv, self.d_proj = d_model, n_heads, d_kv, d_proj
        self.query, self.combine, self.d_position = query, combine, d_position
        # Parts of x: (width, which half of each head's d_kv it feeds).
        parts = [d_model] if d_position is None else [d_model - d_position, d_position]
        half = d_kv // len(parts)
        self.parts = parts
        self.w_k = nn.ParameterList(_heads(n_heads, p, half) for p in parts)
        self.w_v = nn.ParameterList(_heads(n_heads, p, half) for p in parts)
        if query == "vector":
            self.w_q = nn.ParameterList(
                nn.Parameter(nn.init.xavier_normal_(torch.empty(n_heads, half))) for _ in parts
            )
        else:
            self.w_q = nn.ParameterList(_heads(n_heads, p, half) for p in parts)
        # W^O back to each part: per head (concat) or over all heads at once (self).
        fan_in = half if combine == "concat" else n_heads * half
        self.w_o = nn.ModuleList(nn.Linear(fan_in, p, bias=False) for p in parts)
        if combine == "concat":
            self.reduce = nn.Linear(d_model, d_proj, bias=False)  # W^R
            self.norm = nn.LayerNorm(d_proj)
        else:
            self.norm = nn.LayerNorm(d_model)
        self.residual_dropout = residual_dropout
        self.attention_dropout = attention_dropout

    @property
    def output_size(self) -> int:
        return self.n_heads * self.d_proj if self.combine == "concat" else self.d_model

    def _split(self, x: torch.Tensor) -> list[torch.Tensor]:
        return list(x.split(self.parts, dim=-1))

    def _project(self, x: torch.Tensor, weights: nn.ParameterList) -> torch.Tensor:
        """(B, H, T, d_kv): x W_h for every head h, each part of x by its own weights (one
        matrix product per part, all heads at once)."""
        out = []
        for part, w in zip(self._split(x), weights, strict=True):
            heads, d_in, d_out = w.shape
            flat = part @ w.permute(1, 0, 2).reshape(d_in, heads * d_out)
            out.append(flat.view(*part.shape[:2], heads, d_out).transpose(1, 2))
        return torch.cat(out, -1)

    def head_weights(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        """Attention probabilities (B, H, T) of the query vectors (B, H, T, T for
        ``query="matrix"``) over the real words."""
        keys = self._project(x, self.w_k)  # (B, H, T, d_kv)
        if self.query == "vector":
            q = torch.cat(list(self.w_q), -1)  # (H, d_kv)
            logits = torch.einsum("hk,bhtk->bht", q, keys)
            logits = logits.masked_fill(pad_mask[:, None, :], float("-inf"))
        else:
            logits = self._project(x, self.w_q) @ keys.transpose(-1, -2)
            logits = logits.masked_fill(pad_mask[:, None, None, :], float("-inf"))
        return torch.softmax(logits / math.sqrt(self.d_model), dim=-1)

    def forward(self, x: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        weights = F.dropout(self.head_weights(x, pad_mask), self.attention_dropout, self.training)
        values = self._project(x, self.w_v)  # (B, H, T, d_kv)
        if self.query == "vector":
            mixed = (weights[..., None] * values).sum(2)  # (B, H, d_kv)
        else:
            mixed = weights @ values  # (B, H, T, d_kv)
        projected = []  # per part: each head's vector mapped back by W^O
        for heads, w_o in zip(mixed.chunk(len(self.parts), -1), self.w_o, strict=True):
            if self.combine == "self":
                if self.query == "vector":
                    heads = heads[:, :, None].expand(-1, -1, x.shape[1], -1)
                heads = heads.permute(0, 2, 1, 3).flatten(2)  # (B, T, H * half)
            projected.append(w_o(heads))
        if self.combine == "self":
            return self.norm(
                x + F.dropout(torch.cat(projected, -1), self.residual_dropout, self.training)
            )
        heads = torch.cat(projected, -1)  # (B, H, d) or (B, H, T, d)
        if self.residual_dropout and self.training:
            # Residual dropout per head: the same features dropped for every word.
            keep = 1 - self.residual_dropout
            mask = (
                torch.rand(heads.shape[0], heads.shape[1], 1, heads.shape[-1], device=x.device)
                < keep
            )
            heads = (heads if heads.dim() == 4 else heads[:, :, None]) * mask / keep
        elif heads.dim() == 3:
            heads = heads[:, :, None]  # (B, H, 1, d): the same for every word
        # r_{t,l} = x_t + c_l W^O, reduced by W^R; W^R is linear, so W^R x_t is computed
        # once per word instead of once per word and head.
        reduced = self.reduce(x)[:, None] + self.reduce(heads)  # (B, H, T, d_proj)
        out = self.norm(reduced).permute(0, 2, 1, 3)  # (B, T, H, d_proj)
        return out.flatten(2)


def _heads(n_heads: int, d_in: int, d_out: int) -> nn.Parameter:
    return nn.Parameter(nn.init.xavier_normal_(torch.empty(n_heads, d_in, d_out)))
