"""Structured attention: attention weights are the marginals of a latent dependency tree.

Liu & Lapata (TACL 2018), "Learning structured text representations": each state is split
into a semantic part e and a structure part d; arc scores come from d, the marginals of
the latent tree from the matrix-tree theorem (non-projective), and every word gathers a
parent context (its expected head, or a learned root vector) and a child context (its
expected dependents) from e. The projective variant takes Eisner's inside-outside marginals
instead (Kim et al., ICLR 2017). Each head has its own latent tree; one head is the paper.

Two choices the paper leaves to its encoder: e and d come from one learned linear map of
the input (the paper splits a BiLSTM state, itself a learned map), and ``dropout`` drops
marginals, as attention dropout drops attention weights (0 turns it off).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from treeattn import plugins
from treeattn.attention.heads import merge_heads, split_heads
from treeattn.attention.inspection import Captures, MechanismView, Panel, SentenceView
from treeattn.attention.registry import LATENT_TREES, Capabilities, Mechanism
from treeattn.structs import arcs_to_heads, best_heads
from treeattn.structs.eisner import Eisner
from treeattn.structs.matrix_tree import MatrixTree

# The matrix-tree accumulates in float64, as in the reported SST runs: trained arc scores
# can spread far.
STRUCTURES = {"nonprojective": partial(MatrixTree, dtype=torch.float64), "projective": Eisner}


def lengths_from_pad_mask(pad_mask: torch.Tensor) -> torch.Tensor:
    """(B,) number of real positions; padding must come after every real position."""
    lengths = (~pad_mask).sum(1)
    positions = torch.arange(pad_mask.shape[1], device=pad_mask.device)
    if not torch.equal(pad_mask, positions[None, :] >= lengths[:, None]):
        raise ValueError("structured attention needs padding at the end of each sequence")
    if (lengths == 0).any():
        raise ValueError("structured attention got a sequence with no real position")
    return lengths


def check_structure(structure: str) -> None:
    if structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {', '.join(STRUCTURES)}, not {structure!r}")


def arc_marginals(scores: torch.Tensor, lengths: torch.Tensor, structure: str) -> torch.Tensor:
    """Marginals (B, H, n+1, n+1) of the latent trees scored by ``scores`` (same shape;
    row 0 is the root), one tree per head; padding gets zero marginals."""
    check_structure(structure)
    b, h, size, _ = scores.shape
    flat = STRUCTURES[structure](scores.reshape(b * h, size, size), lengths.repeat_interleave(h))
    return flat.marginals.view(b, h, size, size)


def tree_contexts(
    values: torch.Tensor, marginals: torch.Tensor, root_value: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Parent and child contexts, each (B, H, n, d_h), from semantic values (B, H, n, d_h),
    arc marginals (B, H, n+1, n+1) and the root's value (H, d_h).

    p_i = sum_k a_ki e_k + a_i^r e_root (the expected parent); c_i = sum_k a_ik e_k (the
    expected children).
    """
    arcs = marginals[..., 1:, 1:]  # arcs[k, i]: k is the head of i
    root = marginals[..., 0, 1:]  # root[i]: i hangs from the root
    parent = arcs.transpose(-1, -2) @ values + root[..., None] * root_value[:, None, :]
    return parent, arcs @ values


class ArcScorer(nn.Module):
    """Arc and root scores of each head's latent tree from its structure part (B, H, n, d_h).

    t_p = tanh(W_p d_i), t_c = tanh(W_c d_j), f_ij = t_p^T W_a t_c, f_i^r = W_r d_i. Returns
    (B, H, n+1, n+1): row 0 holds the root scores, rows 1..n the arc scores (head, dependent).
    A forward hook here sees the scores of every latent tree (see ``analysis.latent_trees``).
    """

    def __init__(self, n_heads: int, d_head: int) -> None:
        super().__init__()
        scale = d_head**-0.5
        self.parent = nn.Parameter(torch.randn(n_heads, d_head, d_head) * scale)  # W_p
        self.child = nn.Parameter(torch.randn(n_heads, d_head, d_head) * scale)  # W_c
        self.bilinear = nn.Parameter(torch.randn(n_heads, d_head, d_head) * scale)  # W_a
        self.root = nn.Parameter(torch.randn(n_heads, d_head) * scale)  # W_r

    def forward(self, structure: torch.Tensor) -> torch.Tensor:
        as_parent = torch.tanh(torch.einsum("bhnd,hed->bhne", structure, self.parent))
        as_child = torch.tanh(torch.einsum("bhnd,hed->bhne", structure, self.child))
        arcs = torch.einsum("bhid,hde,bhje->bhij", as_parent, self.bilinear, as_child)
        root = torch.einsum("bhnd,hd->bhn", structure, self.root)
        # Column 0 (arcs into the root) and the diagonal are ignored by the structures.
        top = F.pad(root, (1, 0))[:, :, None, :]
        return torch.cat([top, F.pad(arcs, (1, 0))], dim=2)


def decode_heads(scores: torch.Tensor, lengths: torch.Tensor, structure: str) -> torch.Tensor:
    """Heads (B, n+1) of the best tree of each item (-1 at the root and padding) for arc
    scores (B, n+1, n+1), in the family of trees ``structure`` names."""
    if structure == "projective":
        return arcs_to_heads(Eisner(scores, lengths).argmax, lengths)
    return best_heads(scores, lengths)


class StructuredView(MechanismView):
    """Each layer's latent trees: the marginals each word's parent distribution comes
    from, and every head's best tree, single root, in the model's family of trees."""

    def capture(
        self, module: nn.Module, x: torch.Tensor, pad_mask: torch.Tensor, context: dict
    ) -> dict[str, Any]:
        lengths = lengths_from_pad_mask(pad_mask)
        scores = module.arc_scores(x)  # (B, H, n+1, n+1), as the forward pass scored them
        batch, n_heads, size, _ = scores.shape
        best = decode_heads(
            scores.reshape(batch * n_heads, size, size),
            lengths.repeat_interleave(n_heads),
            module.structure,
        )
        return {
            "marginals": arc_marginals(scores, lengths, module.structure),
            "best_heads": best.view(batch, n_heads, size),
        }

    def attention(
        self, module: nn.Module, x: torch.Tensor, pad_mask: torch.Tensor, context: dict, captured
    ) -> torch.Tensor:
        # Each word's parent distribution over the words: column i of the arcs.
        return captured["marginals"][:, :, 1:, 1:].transpose(-1, -2)

    def panels(self, captured: Captures, sentence: SentenceView) -> list[Panel]:
        if not captured:
            return []
        heads = sentence.heads
        return [
            Panel(
                "latent tree: root marginals",
                [f"head {h + 1}" for h in range(heads)],
                sentence.words,
                [found["marginals"][0, :heads, 0, 1:] for _, found in captured],
                "probability that each word hangs from the root; the heat map shows each "
                "word's parent distribution (the marginals of the latent tree)",
                layers=[layer for layer, _ in captured],
            )
        ]

    def latent(self, captured: Captures, heads: int) -> list[list[list[int]]]:
        return [
            [row[1:] for row in found["best_heads"][0, :heads].tolist()] for _, found in captured
        ]


CAPABILITIES = Capabilities(
    description="attention weights are a latent dependency tree's marginals",
    latent=True,
    view=StructuredView(),
    analyses=frozenset({LATENT_TREES}),
)


class StructuredAttention(nn.Module):
    """r_i = tanh(W [e_i; p_i; c_i]) with contexts weighted by latent-tree marginals.

    ``structure`` is ``"nonprojective"`` (matrix-tree theorem, Liu & Lapata) or
    ``"projective"`` (Eisner, Kim et al.). ``dropout`` drops marginals, as attention dropout.
    """

    def __init__(
        self, d_model: int, n_heads: int, dropout: float = 0.0, structure: str = "nonprojective"
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        check_structure(structure)
        self.n_heads = n_heads
        self.structure = structure
        self.split = nn.Linear(d_model, 2 * d_model)  # [e; d] for every head
        self.arc_scorer = ArcScorer(n_heads, d_model // n_heads)
        self.root_value = nn.Parameter(torch.randn(n_heads, d_model // n_heads) * 0.02)
        self.out = nn.Linear(3 * d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, pad_mask: torch.Tensor, context: dict | None = None
    ) -> torch.Tensor:
        """x: (B, n, d); pad_mask: (B, n), True at padding (at the end). Returns (B, n, d)."""
        lengths = lengths_from_pad_mask(pad_mask)
        semantic, structure = self.split(x).chunk(2, dim=-1)
        values = split_heads(semantic, self.n_heads)
        scores = self.arc_scorer(split_heads(structure, self.n_heads))
        marginals = self.dropout(arc_marginals(scores, lengths, self.structure))
        parent, children = tree_contexts(values, marginals, self.root_value)
        merged = [merge_heads(t) for t in (values, parent, children)]
        return torch.tanh(self.out(torch.cat(merged, dim=-1)))

    def arc_scores(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, n+1, n+1) every head's arc scores for input ``x`` (B, n, d), row 0 the
        root: what ``forward`` scores its latent trees with, for looking inside."""
        structure = self.split(x).chunk(2, dim=-1)[1]
        return self.arc_scorer(split_heads(structure, self.n_heads))


plugins.mechanisms.register(
    Mechanism("structured", layer=StructuredAttention, capabilities=CAPABILITIES)
)
