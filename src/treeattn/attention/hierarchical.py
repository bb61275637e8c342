"""Hierarchical accumulation (Nguyen et al., ICLR 2020): tree-structured attention over the
leaves and non-terminal nodes of constituency trees.

The paper builds S = F(L, N, R), an (m+1) x n x d tensor holding every node's value in the
columns of its leaves (Eq. 5), averages each column upward (U, Eq. 6), adds hierarchical
embeddings (E, Eq. 9) and sums each node's row over its leaves with weights w = L u_s
(V, Eq. 7). Only the (node, descendant-leaf) pairs of S are ever non-zero, and they are the
entries of each leaf's root-ward path (``TreeTensors.paths``). So this module works on the
paths alone, (B, n, D, d) with D the depth of the deepest leaf: a gather of node values
along the paths, a cumulative sum up each path (the upward average), and an ``index_add``
of the weighted averages into their nodes. That is O(n log n) memory for balanced trees
instead of O(n^2).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.attention.vanilla import merge_heads, split_heads
from treeattn.data.tree_tensors import TreeTensors


def hierarchical_accumulation(
    leaves: torch.Tensor,
    nodes: torch.Tensor,
    trees: TreeTensors,
    leaf_weight: torch.Tensor,
    vertical: torch.Tensor | None = None,
    horizontal: torch.Tensor | None = None,
) -> torch.Tensor:
    """Accumulated node values N-hat (B, m, d) from leaves (B, n, d) and nodes (B, m, d).

    ``leaf_weight`` is u_s (d,), so that w = L u_s; ``vertical`` (>= D, d_v) and
    ``horizontal`` (>= n, d - d_v) are the hierarchical embedding tables, indexed by
    |V_j^i| - 1 and |H_j^i| - 1; without them there are no hierarchical embeddings.
    Padded nodes come out as zeros.
    """
    B, n, d = leaves.shape
    m = nodes.shape[1]
    paths = trees.paths
    D = paths.shape[2]
    # Past a leaf's root, ``paths`` is padding (-1): those entries gather node 0 and are
    # never masked, because padding only follows a path's real entries (a cumulative sum
    # at a real entry never reaches it) and its contributions go to a spare row.
    flat = paths.clamp(min=0).reshape(B, n * D, 1).expand(B, n * D, d)
    path_values = nodes.gather(1, flat).view(B, n, D, d)
    if vertical is not None and horizontal is not None:
        # |V_j^i| - 1 is the step k along the path; |H_j^i| - 1 comes with the batch.
        v = vertical[:D].expand(B, n, D, vertical.shape[1])
        h = horizontal[trees.horizontal.clamp(min=0)]
        path_values = path_values + torch.cat([v, h], dim=-1)
    # Eq. 6: the mean of the leaf and the k + 1 nodes from its parent up to step k.
    counts = torch.arange(2, D + 2, device=leaves.device, dtype=leaves.dtype).view(1, 1, D, 1)
    upward = (leaves.unsqueeze(2) + path_values.cumsum(dim=2)) / counts
    # Eq. 7: each node sums w_j * upward over its leaves, divided by its number of leaves.
    w = (leaves @ leaf_weight).view(B, n, 1, 1)
    contributions = upward * w
    offsets = torch.arange(B, device=paths.device).view(B, 1, 1) * m
    target = torch.where(paths >= 0, paths + offsets, B * m)  # padding goes to a spare row
    total = contributions.new_zeros(B * m + 1, d)
    total = total.index_add(0, target.reshape(-1), contributions.reshape(-1, d))
    return total[: B * m].view(B, m, d) / trees.leaf_count.unsqueeze(-1).to(leaves.dtype)


def tree_attention_allowed(trees: TreeTensors, subtree_mask: bool) -> torch.Tensor:
    """(B, m + n, m + n) bool, True where a query (row) may attend to a key (column), over
    the joint sequence [nodes; leaves].

    With the subtree mask (§4.3) a node attends only to the nodes and leaves of its own
    subtree, and a leaf only to leaves; without it, everything attends to everything. Padded
    keys are never allowed; a padded query attends to itself only, so that no row is empty.
    """
    start, end, depth = trees.node_start, trees.node_end, trees.node_depth
    node_pad, leaf_pad = trees.node_pad_mask, trees.leaf_pad_mask
    B, m = start.shape
    n = leaf_pad.shape[1]
    key_pad = torch.cat([node_pad, leaf_pad], dim=1)
    if subtree_mask:
        # Key node t is in query node i's subtree when its span lies inside i's and it is
        # not above i (a unary chain shares one span).
        inside = (start[:, :, None] <= start[:, None, :]) & (end[:, None, :] <= end[:, :, None])
        node_node = inside & (depth[:, None, :] >= depth[:, :, None])
        leaf = torch.arange(n, device=start.device)
        node_leaf = (start[:, :, None] <= leaf) & (leaf < end[:, :, None])
        leaf_node = torch.zeros(B, n, m, dtype=torch.bool, device=start.device)
        leaf_leaf = torch.ones(B, n, n, dtype=torch.bool, device=start.device)
        allowed = torch.cat(
            [torch.cat([node_node, node_leaf], 2), torch.cat([leaf_node, leaf_leaf], 2)], 1
        )
    else:
        allowed = torch.ones(B, m + n, m + n, dtype=torch.bool, device=start.device)
    allowed = allowed & ~key_pad[:, None, :]
    query_pad = key_pad[:, :, None] & torch.eye(m + n, dtype=torch.bool, device=start.device)
    return allowed | query_pad


DEFAULT_MAX_DEPTH = 64  # rows of the vertical embedding table


class HierarchicalAccumulation(nn.Module):
    """The learned parts of Eqs. 7-9: u_s and the vertical and horizontal embedding tables
    (d/2 each, shared by all heads)."""

    def __init__(
        self, d_model: int, max_depth: int, max_width: int, hierarchical_embeddings: bool = True
    ) -> None:
        super().__init__()
        self.max_depth, self.max_width = max_depth, max_width
        self.leaf_weight = nn.Parameter(torch.randn(d_model) * d_model**-0.5)
        if hierarchical_embeddings:
            self.vertical = nn.Embedding(max_depth, d_model // 2)
            self.horizontal = nn.Embedding(max_width, d_model - d_model // 2)
            for table in (self.vertical, self.horizontal):
                nn.init.normal_(table.weight, std=d_model**-0.5)
        else:
            self.vertical = self.horizontal = None

    def forward(self, leaves: torch.Tensor, nodes: torch.Tensor, trees: TreeTensors):
        if self.vertical is not None:
            check_tree_size(trees, self.max_depth, self.max_width)
        tables = (
            (None, None)
            if self.vertical is None
            else (self.vertical.weight, self.horizontal.weight)
        )
        return hierarchical_accumulation(leaves, nodes, trees, self.leaf_weight, *tables)


def check_tree_size(trees: TreeTensors, max_depth: int, max_width: int) -> None:
    """Shapes only (no device sync): a leaf deeper than the vertical table or a sentence
    wider than the horizontal one is an error, never a clipped index."""
    depth, width = trees.paths.shape[2], trees.paths.shape[1]
    if depth > max_depth:
        raise ValueError(
            f"a leaf lies {depth} nodes deep, more than max_depth={max_depth} of the "
            "hierarchical embeddings; raise max_depth"
        )
    if width > max_width:
        raise ValueError(
            f"a tree has {width} leaves, more than max_width={max_width} of the "
            "hierarchical embeddings; raise max_width"
        )


class _TreeAttention(nn.Module):
    """Projections and the accumulation shared by tree self- and cross-attention."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_width: int = 512,
        hierarchical_embeddings: bool = True,
    ) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.dropout = dropout
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)
        self.accumulate = HierarchicalAccumulation(
            d_model, max_depth, max_width, hierarchical_embeddings
        )


class HierarchicalAttention(_TreeAttention):
    """Encoder self-attention of leaves and nodes (Eqs. 12-20), multi-head.

    Queries and keys are the projected nodes and leaves; the values of the leaves are their
    projections, those of the nodes the hierarchical accumulation of the projected values.
    ``forward`` returns the new leaves (B, n, d) and nodes (B, m, d), and with
    ``return_weights`` also the attention probabilities (B, H, m + n, m + n) over
    [nodes; leaves].
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_width: int = 512,
        hierarchical_embeddings: bool = True,
        subtree_mask: bool = True,
    ) -> None:
        super().__init__(d_model, n_heads, dropout, max_depth, max_width, hierarchical_embeddings)
        self.subtree_mask = subtree_mask

    def forward(
        self,
        leaves: torch.Tensor,
        nodes: torch.Tensor,
        trees: TreeTensors,
        return_weights: bool = False,
        allowed: torch.Tensor | None = None,
    ):
        """``allowed``: ``tree_attention_allowed(trees, self.subtree_mask)``, when the
        caller has it already (an encoder builds it once for all its layers)."""
        m = nodes.shape[1]
        joint = torch.cat([nodes, leaves], dim=1)
        values = self.value(joint)
        accumulated = self.accumulate(values[:, m:], values[:, :m], trees)
        values = torch.cat([accumulated, values[:, m:]], dim=1)
        q, k, v = (
            split_heads(t, self.n_heads) for t in (self.query(joint), self.key(joint), values)
        )
        if allowed is None:
            allowed = tree_attention_allowed(trees, self.subtree_mask)
        allowed = allowed.unsqueeze(1)
        p = self.dropout if self.training else 0.0
        if return_weights:
            scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
            weights = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
            mixed = F.dropout(weights, p, self.training) @ v
        elif self.subtree_mask:
            # Leaves see leaves only: their rows need the n leaf keys, not all m + n,
            # which saves a quarter of the attention's work and memory.
            leaf_allowed = ~trees.leaf_pad_mask[:, None, None, :]
            leaf_part = (t[:, :, m:] for t in (q, k, v))
            from_leaves = F.scaled_dot_product_attention(
                *leaf_part, attn_mask=leaf_allowed, dropout_p=p
            )
            from_nodes = F.scaled_dot_product_attention(
                q[:, :, :m], k, v, attn_mask=allowed[:, :, :m], dropout_p=p
            )
            mixed = torch.cat([from_nodes, from_leaves], dim=2)
        else:
            mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
        out = self.out(merge_heads(mixed))
        if return_weights:
            return out[:, m:], out[:, :m], weights
        return out[:, m:], out[:, :m]


class TreeCrossAttention(_TreeAttention):
    """Decoder-to-tree attention (Eqs. 21-24): target queries (B, t, d) attend to the
    source tree's nodes and leaves, node values accumulated as in the encoder, no subtree
    mask. Padded queries need no mask: their outputs are to be ignored."""

    def forward(
        self, queries: torch.Tensor, leaves: torch.Tensor, nodes: torch.Tensor, trees: TreeTensors
    ) -> torch.Tensor:
        leaf_values, node_values = self.value(leaves), self.value(nodes)
        values = torch.cat([self.accumulate(leaf_values, node_values, trees), leaf_values], 1)
        keys = self.key(torch.cat([nodes, leaves], dim=1))
        q, k, v = (split_heads(t, self.n_heads) for t in (self.query(queries), keys, values))
        key_pad = torch.cat([trees.node_pad_mask, trees.leaf_pad_mask], dim=1)
        allowed = ~key_pad[:, None, None, :]
        p = self.dropout if self.training else 0.0
        mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
        return self.out(merge_heads(mixed))
