"""Trees as padded index tensors, for the tree encoders (hierarchical accumulation,
Tree-LSTM).

A tree is turned into small integer arrays once (``tree_arrays``); a batch only pads and
stacks them (``collate_trees``). Leaves are indexed 0..n-1 and nodes 0..m-1 in pre-order.
The central structure is each leaf's path of ancestors: ``paths[b, j, k]`` is the node k+1
steps above leaf j (k = 0 is its parent), so the (node, descendant-leaf) pairs of the tree
are exactly the valid entries of ``paths``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch

from treeattn.trees.lnr import LNR, to_lnr
from treeattn.trees.tree import Tree, fold_tree


@dataclass(frozen=True)
class TreeArrays:
    """One tree (or forest). ``paths`` and ``horizontal``: (n, D), D the deepest leaf's
    number of ancestors, -1 past a leaf's root; ``node_*``: (m,); ``node_children``: (m, C),
    each child as a leaf index j or, for a node t, ``-(t + 2)``; -1 pads."""

    paths: np.ndarray
    horizontal: np.ndarray
    node_start: np.ndarray
    node_end: np.ndarray
    node_depth: np.ndarray
    node_height: np.ndarray
    node_children: np.ndarray

    @property
    def n_leaves(self) -> int:
        return self.paths.shape[0]

    @property
    def n_nodes(self) -> int:
        return self.node_start.shape[0]


def tree_arrays(lnr: LNR) -> TreeArrays:
    n, m = len(lnr.leaves), len(lnr.labels)
    if n == 0 or m == 0:
        raise ValueError("a tree needs at least one leaf and one node")
    depth = np.zeros(m, dtype=np.int64)
    for t in range(m):  # pre-order: a parent is numbered before its children
        if lnr.parent[t] >= 0:
            depth[t] = depth[lnr.parent[t]] + 1
    start = np.full(m, n, dtype=np.int64)
    end = np.zeros(m, dtype=np.int64)
    leaf_depth = np.array([depth[p] + 1 for p in lnr.leaf_parent], dtype=np.int64)
    paths = np.full((n, int(leaf_depth.max())), -1, dtype=np.int64)
    for j, p in enumerate(lnr.leaf_parent):
        for k, t in enumerate(lnr.ancestors(p)):
            paths[j, k] = t
            start[t] = min(start[t], j)
            end[t] = max(end[t], j + 1)
    horizontal = np.where(paths >= 0, np.arange(n)[:, None] - start[paths.clip(min=0)], -1)

    height = np.zeros(m, dtype=np.int64)
    kids: list[list[int]] = [[] for _ in range(m)]
    for j, p in enumerate(lnr.leaf_parent):
        kids[p].append(j)
        height[p] = max(height[p], 1)
    for t in range(m - 1, -1, -1):  # children before parents
        p = lnr.parent[t]
        if p >= 0:
            kids[p].append(-(t + 2))
            height[p] = max(height[p], height[t] + 1)
    width = max(len(k) for k in kids)
    children = np.full((m, width), -1, dtype=np.int64)
    for t, k in enumerate(kids):
        # Leaves and nodes in sentence order: a child's first leaf.
        ordered = sorted(k, key=lambda c: c if c >= 0 else start[-c - 2])
        children[t, : len(ordered)] = ordered
    return TreeArrays(paths, horizontal, start, end, depth, height, children)


def encode_tree(
    trees: Tree | Sequence[Tree], tokens: Sequence[str] | None = None, where: str = "tree"
) -> tuple[LNR, TreeArrays]:
    """(L, N, R) and index arrays of a tree or forest; ``tokens``, when given, must be its
    leaves (otherwise a ``FormatError`` naming ``where`` and the first mismatch)."""
    forest = [trees] if isinstance(trees, Tree) else list(trees)
    if tokens is not None and forest:
        Tree("", forest).check_leaves(tokens, where)  # a forest's leaves, one after another
    lnr = to_lnr(forest)
    return lnr, tree_arrays(lnr)


def split_subwords(tree: Tree, pieces: Callable[[str], Sequence[str]], label: str = "WORD") -> Tree:
    """The tree with every word replaced by its subword pieces, which form a subtree under
    the word (§5.1): a pre-terminal becomes a node over the pieces; a word directly under a
    phrase gets a new node ``label`` over them. One-piece words stay leaves."""

    def split(word: str) -> list[str]:
        parts = list(pieces(word))
        if not parts or any(not p for p in parts):
            raise ValueError(f"subword split of {word!r} gave an empty piece: {parts!r}")
        return parts

    def rebuild(node: Tree, kids: list) -> Tree:
        # ``kids`` holds each word's pieces (a list) and each phrase rebuilt (a Tree).
        if node.is_preterminal():
            return Tree(node.label, kids[0])
        return Tree(
            node.label,
            [k if isinstance(k, Tree) else k[0] if len(k) == 1 else Tree(label, k) for k in kids],
        )

    return fold_tree(tree, rebuild, leaf=split)  # no recursion: deep trees are fine


@dataclass
class TreeTensors:
    """A padded batch of trees. Shapes: B trees, n leaves, m nodes, D path length, C
    children. ``leaf_pad_mask`` (B, n) and ``node_pad_mask`` (B, m) are True at padding;
    ``paths`` (B, n, D) node indices (-1 past the root or at padding); ``horizontal``
    (B, n, D) a leaf's position within the node on its path (the paper's |H| - 1);
    ``node_start``/``node_end`` (B, m) the half-open leaf span; ``node_depth`` (B, m), roots
    0; ``node_height`` (B, m), 1 for a node over leaves only; ``node_children`` (B, m, C),
    leaves as 0..n-1 and nodes as n + t, -1 pads."""

    leaf_pad_mask: torch.Tensor
    node_pad_mask: torch.Tensor
    paths: torch.Tensor
    horizontal: torch.Tensor
    node_start: torch.Tensor
    node_end: torch.Tensor
    node_depth: torch.Tensor
    node_height: torch.Tensor
    node_children: torch.Tensor

    def to(self, device: torch.device | str) -> TreeTensors:
        return TreeTensors(*(getattr(self, f.name).to(device) for f in fields(self)))

    @property
    def leaf_count(self) -> torch.Tensor:
        """(B, m) leaves under each node (1 at padding, so that it can divide)."""
        return (self.node_end - self.node_start).clamp(min=1)


def check_shapes(tokens: torch.Tensor, node_labels: torch.Tensor, trees: TreeTensors) -> None:
    """Word ids (B, n) and node label ids (B, m) must match the batch of trees."""
    if tokens.shape != trees.leaf_pad_mask.shape:
        raise ValueError(
            f"tokens {tuple(tokens.shape)} do not match the trees' leaves "
            f"{tuple(trees.leaf_pad_mask.shape)}"
        )
    if node_labels.shape != trees.node_pad_mask.shape:
        raise ValueError(
            f"node labels {tuple(node_labels.shape)} do not match the trees' nodes "
            f"{tuple(trees.node_pad_mask.shape)}"
        )


def collate_trees(items: Sequence[TreeArrays]) -> TreeTensors:
    """Pad and stack; a loop over the trees of a batch, never over their nodes."""
    if not items:
        raise ValueError("cannot collate an empty batch of trees")
    B = len(items)
    n = max(a.n_leaves for a in items)
    m = max(a.n_nodes for a in items)
    D = max(a.paths.shape[1] for a in items)
    C = max(a.node_children.shape[1] for a in items)
    paths = np.full((B, n, D), -1, dtype=np.int64)
    horizontal = np.full((B, n, D), -1, dtype=np.int64)
    node = {name: np.zeros((B, m), dtype=np.int64) for name in ("start", "end", "depth", "height")}
    children = np.full((B, m, C), -1, dtype=np.int64)
    leaf_pad = np.ones((B, n), dtype=bool)
    node_pad = np.ones((B, m), dtype=bool)
    for b, a in enumerate(items):
        nb, mb, db = a.n_leaves, a.n_nodes, a.paths.shape[1]
        paths[b, :nb, :db] = a.paths
        horizontal[b, :nb, :db] = a.horizontal
        node["start"][b, :mb] = a.node_start
        node["end"][b, :mb] = a.node_end
        node["depth"][b, :mb] = a.node_depth
        node["height"][b, :mb] = a.node_height
        kids = a.node_children
        children[b, :mb, : kids.shape[1]] = np.where(kids <= -2, n + (-kids - 2), kids)
        leaf_pad[b, :nb] = False
        node_pad[b, :mb] = False
    as_tensor = torch.from_numpy
    return TreeTensors(
        as_tensor(leaf_pad),
        as_tensor(node_pad),
        as_tensor(paths),
        as_tensor(horizontal),
        as_tensor(node["start"]),
        as_tensor(node["end"]),
        as_tensor(node["depth"]),
        as_tensor(node["height"]),
        as_tensor(children),
    )
