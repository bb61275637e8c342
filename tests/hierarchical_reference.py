"""Two slow references for hierarchical accumulation (Nguyen et al. 2020, Eqs. 5-10).

``literal_accumulation`` follows the equations entry by entry with Python loops over the
(m+1) x n grid of one tree. ``dense_accumulation`` builds the same S and E as whole
(B, m+1, n, d) tensors and averages with masks: the paper's own formulation, used by the
benchmark as the baseline the fast path must beat.
"""

from __future__ import annotations

import torch

from treeattn.data.tree_tensors import TreeTensors
from treeattn.trees.lnr import LNR


def literal_accumulation(
    leaves: torch.Tensor,
    nodes: torch.Tensor,
    lnr: LNR,
    leaf_weight: torch.Tensor,
    vertical: torch.Tensor | None = None,
    horizontal: torch.Tensor | None = None,
) -> torch.Tensor:
    """One tree: leaves (n, d), nodes (m, d) -> N-hat (m, d)."""
    n, d = leaves.shape
    m = nodes.shape[0]
    R = [lnr.subtree(i) for i in range(m)]  # (nodes, leaves) of each subtree
    zero = leaves.new_zeros(d)

    def V(j: int, i: int) -> list[int]:  # nodes above leaf j that lie in n_i's subtree
        return [t for t in range(m) if j in R[t][1] and t in R[i][0]]

    def H(j: int, i: int) -> list[int]:  # leaves of n_i's subtree up to leaf j
        return [k for k in range(j + 1) if k in R[i][1]]

    # Eq. 5, the interpolation S = F(L, N, R): row 0 the leaves, row i + 1 node i's value
    # in the columns of its leaves.
    S = [[leaves[j] for j in range(n)]]
    S += [[nodes[i] if j in R[i][1] else zero for j in range(n)] for i in range(m)]
    # Eq. 9, hierarchical embeddings, added to S before accumulating (Eq. 10).
    if vertical is not None:
        for i in range(m):
            for j in R[i][1]:
                e = torch.cat([vertical[len(V(j, i)) - 1], horizontal[len(H(j, i)) - 1]])
                S[i + 1][j] = S[i + 1][j] + e
    # Eq. 6, upward cumulative average: the leaf and the nodes of V_j^i.
    S_hat = [
        [
            (S[0][j] + sum((S[t + 1][j] for t in V(j, i)), zero)) / (1 + len(V(j, i)))
            for j in range(n)
        ]
        for i in range(m)
    ]
    # Eq. 7, weighted aggregation with w = L u_s over each node's leaves.
    w = leaves @ leaf_weight
    out = [
        sum((w[j] * S_hat[i][j] for j in sorted(R[i][1])), zero) / len(R[i][1]) for i in range(m)
    ]
    return torch.stack(out)


def dense_accumulation(
    leaves: torch.Tensor,
    nodes: torch.Tensor,
    trees: TreeTensors,
    leaf_weight: torch.Tensor,
    vertical: torch.Tensor | None = None,
    horizontal: torch.Tensor | None = None,
) -> torch.Tensor:
    """A batch, with S and E built as (B, m+1, n, d) tensors: leaves (B, n, d), nodes
    (B, m, d) -> N-hat (B, m, d)."""
    B, n, d = leaves.shape
    start, end, depth = trees.node_start, trees.node_end, trees.node_depth
    real = ~trees.node_pad_mask
    leaf = torch.arange(n, device=leaves.device)
    # member[b, i, j]: leaf j is in node i's subtree; inside[b, i, t]: node t is.
    member = (start[..., None] <= leaf) & (leaf < end[..., None]) & real[..., None]
    inside = (start[:, :, None] <= start[:, None, :]) & (end[:, None, :] <= end[:, :, None])
    inside = inside & (depth[:, None, :] >= depth[:, :, None]) & real[:, :, None] & real[:, None]
    on_path = inside.to(leaves.dtype)[..., None] * member.to(leaves.dtype)[:, None]  # (B,i,t,j)
    count_v = on_path.sum(2)  # |V_j^i|
    S = torch.cat([leaves[:, None], member[..., None] * nodes[:, :, None, :]], dim=1)
    if vertical is not None:
        v = vertical[(count_v.long() - 1).clamp(min=0)]
        h = horizontal[(leaf - start[..., None]).clamp(min=0)]
        E = torch.cat([v, h], dim=-1) * member[..., None]
        S = torch.cat([S[:, :1], S[:, 1:] + E], dim=1)
    summed = S[:, :1] + torch.einsum("bitj,btjd->bijd", on_path, S[:, 1:])
    S_hat = summed / (1 + count_v)[..., None]
    w = leaves @ leaf_weight
    weighted = (member.to(leaves.dtype) * w[:, None, :])[..., None] * S_hat
    return weighted.sum(2) / trees.leaf_count[..., None].to(leaves.dtype)
