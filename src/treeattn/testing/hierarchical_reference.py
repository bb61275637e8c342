"""Slow references for hierarchical accumulation (Nguyen et al. 2020), written from the
equations.

``literal_accumulation`` follows Eqs. 5-10 entry by entry with Python loops over the
(m+1) x n grid of one tree and one head. ``dense_accumulation`` builds the same S and E as
whole (B, m+1, n, d) tensors and averages with masks: the paper's own formulation, used by
the benchmark as the baseline the fast path must beat. ``literal_self_attention`` (Eqs.
12-20) and ``literal_cross_attention`` (Eqs. 21-24) loop over heads and queries.
"""

from __future__ import annotations

import torch

from treeattn.trees.lnr import LNR
from treeattn.trees.tensors import TreeTensors


def literal_accumulation(
    leaves: torch.Tensor,
    nodes: torch.Tensor,
    lnr: LNR,
    w: torch.Tensor,
    vertical: torch.Tensor | None = None,
    horizontal: torch.Tensor | None = None,
) -> torch.Tensor:
    """One tree and head: leaves (n, d), nodes (m, d), the leaves' weights w (n,) ->
    N-hat (m, d)."""
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
    # Eq. 7, weighted aggregation with w over each node's leaves.
    out = [
        sum((w[j] * S_hat[i][j] for j in sorted(R[i][1])), zero) / len(R[i][1]) for i in range(m)
    ]
    return torch.stack(out)


def dense_accumulation(
    leaves: torch.Tensor,
    nodes: torch.Tensor,
    trees: TreeTensors,
    w: torch.Tensor,
    vertical: torch.Tensor | None = None,
    horizontal: torch.Tensor | None = None,
) -> torch.Tensor:
    """A batch, with S and E built as (B, m+1, n, d) tensors: leaves (B, n, d), nodes
    (B, m, d), leaf weights w (B, n) -> N-hat (B, m, d)."""
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
    weighted = (member.to(leaves.dtype) * w[:, None, :])[..., None] * S_hat
    return weighted.sum(2) / trees.leaf_count[..., None].to(leaves.dtype)


def _head_accumulation(attn, leaves, v_leaves, v_nodes, lnr, h: int, k: int):
    """N-hat of head h: w_h = L u_h (+ b_h) from the un-projected leaves L (Eq. 16 / 23 as
    the release computes it, one weight vector per head; the paper's single u is the same
    vector for every head), the head-wide tables [e^v; e^h] shared by all heads (§4.2)."""
    acc = attn.accumulate
    u = acc.leaf_weight.weight[h if acc.leaf_weight.weight.shape[0] > 1 else 0]
    w = leaves @ u
    if acc.leaf_weight.bias is not None:
        w = w + acc.leaf_weight.bias[h]
    tables = (None, None)
    if acc.vertical is not None:
        tables = (acc.vertical.weight, acc.horizontal.weight)
    part = slice(h * k, (h + 1) * k)
    return literal_accumulation(v_leaves[:, part], v_nodes[:, part], lnr, w, *tables)


def _attend(q, keys, values, allowed) -> torch.Tensor:
    """Softmax(q . key / sqrt(k)) over the allowed keys, summed over their values."""
    scores = torch.stack([q @ key for key in keys]) / q.shape[0] ** 0.5
    scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(0) @ values


def literal_self_attention(attn, leaves, nodes, lnr: LNR, subtree_mask: bool = True):
    """Eqs. 12-20 for one tree: leaves (n, d), nodes (m, d) -> new leaves (n, d) and nodes
    (m, d). Per head h: queries and keys are the projected [N; L]; the leaves' values are
    L W^V_h, the nodes' the accumulation N-hat_h of the projected values; with the subtree
    mask (§4.3) node i attends to the nodes and leaves of its subtree and a leaf to the
    leaves. The heads are concatenated and projected by W^O."""
    n, d = leaves.shape
    m = nodes.shape[0]
    H = attn.n_heads
    k = d // H
    joint = torch.cat([nodes, leaves])
    Q, K = attn.query(joint), attn.key(joint)
    v_leaves, v_nodes = attn.value(leaves), attn.value(nodes)
    heads = []
    for h in range(H):
        part = slice(h * k, (h + 1) * k)
        values = torch.cat(
            [_head_accumulation(attn, leaves, v_leaves, v_nodes, lnr, h, k), v_leaves[:, part]]
        )
        rows = []
        for i in range(m + n):
            if not subtree_mask:
                allowed = [True] * (m + n)
            elif i < m:
                sub_nodes, sub_leaves = lnr.subtree(i)
                allowed = [t in sub_nodes for t in range(m)] + [j in sub_leaves for j in range(n)]
            else:
                allowed = [False] * m + [True] * n
            rows.append(_attend(Q[i, part], K[:, part], values, torch.tensor(allowed)))
        heads.append(torch.stack(rows))
    out = attn.out(torch.cat(heads, dim=-1))
    return out[m:], out[:m]


def literal_cross_attention(attn, queries, leaves, nodes, lnr: LNR):
    """Eqs. 21-24 for one tree: target queries (t, d) attend to every node and leaf of the
    source tree, the nodes' values accumulated with w = L u_c -> (t, d)."""
    n, d = leaves.shape
    H = attn.n_heads
    k = d // H
    K = attn.key(torch.cat([nodes, leaves]))
    Q = attn.query(queries)
    v_leaves, v_nodes = attn.value(leaves), attn.value(nodes)
    everything = torch.ones(K.shape[0], dtype=torch.bool)
    heads = []
    for h in range(H):
        part = slice(h * k, (h + 1) * k)
        values = torch.cat(
            [_head_accumulation(attn, leaves, v_leaves, v_nodes, lnr, h, k), v_leaves[:, part]]
        )
        heads.append(torch.stack([_attend(q[part], K[:, part], values, everything) for q in Q]))
    return attn.out(torch.cat(heads, dim=-1))


def path_accumulation(
    leaves: torch.Tensor,
    nodes: torch.Tensor,
    trees: TreeTensors,
    w: torch.Tensor,
    vertical: torch.Tensor | None = None,
    horizontal: torch.Tensor | None = None,
) -> torch.Tensor:
    """A batch, one head, along each leaf's root-ward path (B, n, D, d): the node values
    and embeddings of the path gathered, averaged upward by a cumulative sum (Eq. 6),
    weighted and added into their nodes (Eq. 7). The library's form before the (node,
    leaf) weight matrix, kept as a second reference and as the benchmarks' baseline:
    leaves (B, n, d), nodes (B, m, d), w (B, n) -> N-hat (B, m, d)."""
    B, n, d = leaves.shape
    m = nodes.shape[1]
    paths = trees.paths
    D = paths.shape[2]
    # Past a leaf's root the path is padding: it gathers node 0, follows every real entry
    # (so no real cumulative sum reaches it) and is added into a spare row.
    flat = paths.clamp(min=0).reshape(B, n * D, 1).expand(B, n * D, d)
    on_path = nodes.gather(1, flat).view(B, n, D, d)
    if vertical is not None and horizontal is not None:
        v = vertical[:D].expand(B, n, D, vertical.shape[1])
        h = horizontal[trees.horizontal.clamp(min=0)]
        on_path = on_path + torch.cat([v, h], dim=-1)
    counts = torch.arange(2, D + 2, device=paths.device, dtype=leaves.dtype).view(1, 1, D, 1)
    upward = (leaves.unsqueeze(2) + on_path.cumsum(dim=2)) / counts
    offsets = torch.arange(B, device=paths.device).view(B, 1, 1) * m
    target = torch.where(paths >= 0, paths + offsets, B * m)
    total = upward.new_zeros(B * m + 1, d)
    total = total.index_add(0, target.reshape(-1), (upward * w[..., None, None]).reshape(-1, d))
    return total[: B * m].view(B, m, d) / trees.leaf_count[..., None].to(leaves.dtype)
