"""Hierarchical accumulation (Nguyen et al., ICLR 2020): tree-structured attention over the
leaves and non-terminal nodes of constituency trees.

The paper builds S = F(L, N, R), an (m+1) x n x d tensor holding every node's value in the
columns of its leaves (Eq. 5), averages each column upward (U, Eq. 6), adds hierarchical
embeddings (E, Eq. 9) and sums each node's row over its leaves with weights w = L u_s
(V, Eq. 7), head by head: w comes from the layer's un-projected leaves L, the values are
projected, and every head gets the same head-wide [e^v; e^h].

Only the (node, descendant-leaf) pairs of S are ever non-zero, and everything after the
embeddings is linear, so this module never builds S, nor the H-head values along every
leaf's root-ward path (D the deepest leaf's number of ancestors). Node i at step s above
leaf j receives w_j / (s + 2) times the leaf, the nodes from j's parent up to i, and
their embeddings. The leaves' and nodes' part is a product of the (node, leaf) weight
matrix (B, H, m, n) with the leaves plus their parents' root-ward sums of node values,
less the sum above i (R = ancestors @ N, one small matrix product); the vertical embeddings' part is
the weights per step times the table's running sum; only the horizontal embeddings,
which differ along each path, are summed up the paths, once for all heads at width
k / 2, then weighted per head: O(n D d / 2) memory where summing the values up the paths
took several O(n D d) tensors.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from treeattn.attention.heads import merge_heads, split_heads
from treeattn.trees.tensors import TreeTensors


def hierarchical_accumulation(
    leaf_values: torch.Tensor,
    node_values: torch.Tensor,
    trees: TreeTensors,
    leaf_weights: torch.Tensor,
    vertical: torch.Tensor | None = None,
    horizontal: torch.Tensor | None = None,
) -> torch.Tensor:
    """Accumulated node values N-hat (B, m, H, k), head by head, from leaf values
    (B, n, H, k), node values (B, m, H, k) and the leaves' weights w (B, n, H).

    ``vertical`` (>= D, k_v) and ``horizontal`` (>= n, k - k_v) are the hierarchical
    embedding tables, indexed by |V_j^i| - 1 and |H_j^i| - 1 and added to every head alike;
    without them there are no hierarchical embeddings. Padded nodes come out as zeros.
    """
    B, n, H, k = leaf_values.shape
    m = node_values.shape[1]
    paths = trees.paths  # (B, n, D): the node s + 1 steps above leaf j, -1 past its root
    D = paths.shape[2]
    real = paths >= 0
    node = paths.clamp(min=0)
    steps = torch.arange(D, device=paths.device)
    # Eqs. 6-7: node i = paths[j, s] takes w_j / (s + 2) of each of the s + 2 terms that
    # leaf j's upward average holds at i (the leaf, and the nodes from its parent to i).
    share = leaf_weights.unsqueeze(2) / (steps + 2).to(leaf_weights.dtype).view(1, 1, D, 1)
    share = share * real.unsqueeze(-1)  # (B, n, D, H); past a root: 0
    flat_share = share.reshape(B, n * D, H)

    def per_node(index: torch.Tensor, columns: int, values: torch.Tensor) -> torch.Tensor:
        """Sum ``values`` (B, N, H) into (B, m, columns, H) at node-major ``index`` (B, N)."""
        total = values.new_zeros(B, m * columns, H)
        total = total.scatter_add(1, index.unsqueeze(-1).expand(-1, -1, H), values)
        return total.view(B, m, columns, H)

    leaf = torch.arange(n, device=paths.device).view(1, n, 1)
    pair = per_node((node * n + leaf).reshape(B, -1), n, flat_share)  # (B, m, n, H)
    # Root-ward sums R_i = sum of N over i and its ancestors; the nodes from leaf j's
    # parent up to node i sum to R_parent(j) - R_i + N_i.
    nodes = node_values.reshape(B, m, H * k)
    rootward = ancestors_or_self(trees).to(nodes.dtype) @ nodes
    parent = node[:, :, 0].unsqueeze(-1).expand(-1, -1, H * k)
    from_leaves = leaf_values.reshape(B, n, H * k) + rootward.gather(1, parent)
    total = torch.einsum("bijh,bjhk->bihk", pair, from_leaves.view(B, n, H, k))
    total = total - (rootward - nodes).view(B, m, H, k) * pair.sum(2).unsqueeze(-1)
    if vertical is not None and horizontal is not None:
        # Eq. 9: the terms up to step s carry e^v_0 .. e^v_s, so node i takes each
        # leaf's share times the cumulative vertical table at its step ...
        at_step = per_node((node * D + steps).reshape(B, -1), D, flat_share)  # (B, m, D, H)
        up = torch.einsum("bish,sc->bihc", at_step, vertical[:D].cumsum(0))
        # ... and e^h of each node t <= s on the way (|H| - 1 = j - start(t)): their sum
        # up the path is the same for every head, so only the product with the shares is
        # H heads wide.
        row = horizontal[trees.horizontal.clamp(min=0)].cumsum(2)  # (B, n, D, k_h)
        reached = share.unsqueeze(-1) * row.unsqueeze(3)  # (B, n, D, H, k_h)
        target = (node + torch.arange(B, device=paths.device).view(B, 1, 1) * m).reshape(-1)
        across = reached.new_zeros(B * m, H * row.shape[-1])
        across = across.index_add(0, target, reached.reshape(B * n * D, -1))
        across = across.view(B, m, H, -1)
        total = total + torch.cat([up, across], dim=-1)
    count = trees.leaf_count.to(leaf_values.dtype).view(B, m, 1, 1)
    return total / count


def ancestors_or_self(trees: TreeTensors) -> torch.Tensor:
    """(B, m, m) bool, True where node t (column) is node i (row) or above it: its span
    holds i's and it is no deeper (a unary chain shares one span). Padding is False."""
    start, end, depth = trees.node_start, trees.node_end, trees.node_depth
    real = ~trees.node_pad_mask
    holds = (start[:, None, :] <= start[:, :, None]) & (end[:, :, None] <= end[:, None, :])
    above = holds & (depth[:, None, :] <= depth[:, :, None])
    return above & real[:, None, :] & real[:, :, None]


def tree_attention_allowed(trees: TreeTensors, subtree_mask: bool) -> torch.Tensor:
    """(B, m + n, m + n) bool, True where a query (row) may attend to a key (column), over
    the joint sequence [nodes; leaves].

    With the subtree mask (§4.3) a node attends only to the nodes and leaves of its own
    subtree, and a leaf only to leaves; without it, everything attends to everything. Padded
    keys are never allowed; a padded query attends to itself only, so that no row is empty.
    """
    start, end = trees.node_start, trees.node_end
    node_pad, leaf_pad = trees.node_pad_mask, trees.leaf_pad_mask
    B, m = start.shape
    n = leaf_pad.shape[1]
    key_pad = torch.cat([node_pad, leaf_pad], dim=1)
    if subtree_mask:
        # Key node t is in query node i's subtree when i is t or above it.
        node_node = ancestors_or_self(trees).transpose(1, 2)
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
LEAF_WEIGHTS = ("per_head", "single")


class HierarchicalAccumulation(nn.Module):
    """The learned parts of Eqs. 7-9: the leaf weights w and the hierarchical embedding
    tables, for ``n_heads`` heads of width k = d / H.

    ``leaf_weights="per_head"`` (the default) is the authors' release, which produced the
    paper's figures: w = L U + b, one weight per leaf and head from the un-projected leaves L
    (a d -> H linear map). ``"single"`` is the paper's text (Eqs. 16 and 23): w = L u, one
    vector u, the same weights for every head. The vertical and horizontal tables are k/2
    wide and shared by all heads, so every head sees [e^v; e^h] (§4.2, as in the release).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        max_depth: int,
        max_width: int,
        hierarchical_embeddings: bool = True,
        leaf_weights: str = "per_head",
    ) -> None:
        super().__init__()
        if leaf_weights not in LEAF_WEIGHTS:
            raise ValueError(f"leaf_weights={leaf_weights!r}: choose one of {LEAF_WEIGHTS}")
        self.n_heads, self.max_depth, self.max_width = n_heads, max_depth, max_width
        per_head = leaf_weights == "per_head"  # Eq. 16's single u has no bias
        self.leaf_weight = nn.Linear(d_model, n_heads if per_head else 1, bias=per_head)
        nn.init.normal_(self.leaf_weight.weight, std=d_model**-0.5)
        if per_head:
            nn.init.zeros_(self.leaf_weight.bias)
        k = d_model // n_heads
        if hierarchical_embeddings:
            self.vertical = nn.Embedding(max_depth, k // 2)
            self.horizontal = nn.Embedding(max_width, k - k // 2)
            for table in (self.vertical, self.horizontal):
                nn.init.normal_(table.weight, std=k**-0.5)
        else:
            self.vertical = self.horizontal = None
        self.register_load_state_dict_pre_hook(refuse_shared_width_checkpoints)

    def forward(
        self,
        leaves: torch.Tensor,
        leaf_values: torch.Tensor,
        node_values: torch.Tensor,
        trees: TreeTensors,
    ) -> torch.Tensor:
        """N-hat (B, m, H, k) from the layer's leaves (B, n, d), which give the weights, and
        the values of leaves (B, n, H, k) and nodes (B, m, H, k)."""
        if self.vertical is not None:
            check_tree_size(trees, self.max_depth, self.max_width)
        B, n, H, _ = leaf_values.shape
        w = self.leaf_weight(leaves).expand(B, n, H)
        tables = (
            (None, None)
            if self.vertical is None
            else (self.vertical.weight, self.horizontal.weight)
        )
        return hierarchical_accumulation(leaf_values, node_values, trees, w, *tables)


def refuse_shared_width_checkpoints(module, state: dict, prefix: str, *args) -> None:
    """Weights saved before the accumulation became per head (w from the projected values,
    d/2-wide embedding tables split across the heads) describe another model: say so,
    rather than fail on a shape."""
    if prefix + "leaf_weight" in state:
        raise ValueError(
            "this checkpoint holds a hierarchical model saved before its accumulation was "
            "made per head (leaf weights from the projected values, hierarchical embeddings "
            "split across the heads); it describes another model and cannot be loaded: "
            "train it again"
        )


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
        leaf_weights: str = "per_head",
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
            d_model, n_heads, max_depth, max_width, hierarchical_embeddings, leaf_weights
        )

    def tree_values(
        self, leaves: torch.Tensor, nodes: torch.Tensor, trees: TreeTensors
    ) -> torch.Tensor:
        """Values (B, H, m + n, k) over [nodes; leaves]: the leaves' projections and, for
        the nodes, the accumulation of the projected values, head by head, weighted from
        the un-projected leaves."""
        (B, n, d), m, H = leaves.shape, nodes.shape[1], self.n_heads
        leaf_values = self.value(leaves).view(B, n, H, d // H)
        node_values = self.value(nodes).view(B, m, H, d // H)
        accumulated = self.accumulate(leaves, leaf_values, node_values, trees)
        return torch.cat([accumulated, leaf_values], dim=1).transpose(1, 2)


class HierarchicalAttention(_TreeAttention):
    """Encoder self-attention of leaves and nodes (Eqs. 12-20), multi-head.

    Queries and keys are the projected nodes and leaves; the values of the leaves are their
    projections, those of the nodes the hierarchical accumulation of the projected values
    (``HierarchicalAccumulation`` says how it is weighted). ``forward`` returns the new
    leaves (B, n, d) and nodes (B, m, d), and with ``return_weights`` also the attention
    probabilities (B, H, m + n, m + n) over [nodes; leaves].
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
        leaf_weights: str = "per_head",
    ) -> None:
        super().__init__(
            d_model, n_heads, dropout, max_depth, max_width, hierarchical_embeddings, leaf_weights
        )
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
        q, k = (split_heads(t, self.n_heads) for t in (self.query(joint), self.key(joint)))
        v = self.tree_values(leaves, nodes, trees)
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
    source tree's nodes and leaves, node values accumulated as in the encoder (weights w =
    L u_c from the encoder's leaves), no subtree mask. Padded queries need no mask: their
    outputs are to be ignored."""

    def forward(
        self, queries: torch.Tensor, leaves: torch.Tensor, nodes: torch.Tensor, trees: TreeTensors
    ) -> torch.Tensor:
        keys = self.key(torch.cat([nodes, leaves], dim=1))
        q, k = (split_heads(t, self.n_heads) for t in (self.query(queries), keys))
        v = self.tree_values(leaves, nodes, trees)
        key_pad = torch.cat([trees.node_pad_mask, trees.leaf_pad_mask], dim=1)
        allowed = ~key_pad[:, None, None, :]
        p = self.dropout if self.training else 0.0
        mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=p)
        return self.out(merge_heads(mixed))
