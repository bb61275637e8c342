"""A tree as (L, N, R) (Nguyen et al. 2020, §4.1): its leaves in order, its non-terminal
nodes, and for each node the nodes and leaves of its subtree.

Nodes are numbered in pre-order (a root before its descendants); a forest (several
sentences in one input) is the trees one after another, each with its own root. With
``collapse_preterminals`` a pre-terminal such as ``(DT the)`` is not a node: its word is the
leaf (SST's word-level labels and PTB tags are then not nodes); a tree that is one
pre-terminal keeps it as its root, so every tree has a node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from treeattn.trees.tree import Tree


@dataclass(frozen=True)
class LNR:
    """``leaves`` (n words); ``labels`` (m node labels, pre-order); ``parent[t]``, the node
    above node t (-1 for a root); ``leaf_parent[j]``, the node above leaf j."""

    leaves: tuple[str, ...]
    labels: tuple[str, ...]
    parent: tuple[int, ...]
    leaf_parent: tuple[int, ...]

    def subtree(self, i: int) -> tuple[frozenset[int], frozenset[int]]:
        """R(n_i): the nodes (n_i included) and the leaves under node i."""
        nodes = {t for t in range(len(self.labels)) if i in self.ancestors(t)}
        leaves = {j for j, p in enumerate(self.leaf_parent) if p in nodes}
        return frozenset(nodes), frozenset(leaves)

    def ancestors(self, t: int) -> list[int]:
        """Node t and the nodes above it, bottom-up."""
        chain = []
        while t >= 0:
            chain.append(t)
            t = self.parent[t]
        return chain


def to_lnr(trees: Tree | Sequence[Tree], collapse_preterminals: bool = True) -> LNR:
    """The (L, N, R) form of a tree, or of a forest given as a list of trees."""
    forest = [trees] if isinstance(trees, Tree) else list(trees)
    if not forest:
        raise ValueError("an empty forest has no leaves")
    leaves: list[str] = []
    labels: list[str] = []
    parent: list[int] = []
    leaf_parent: list[int] = []
    for root in forest:
        stack: list[tuple[Tree, int]] = [(root, -1)]  # iterative: deep trees need no recursion
        while stack:
            node, above = stack.pop()
            index = len(labels)
            labels.append(node.label)
            parent.append(above)
            # Children are pushed right to left so that they pop in order (pre-order).
            for child in reversed(node.children):
                if isinstance(child, str):
                    stack.append((child, index))  # type: ignore[arg-type]
                elif collapse_preterminals and child.is_preterminal():
                    stack.append((child.children[0], index))  # type: ignore[arg-type]
                else:
                    stack.append((child, index))
            while stack and isinstance(stack[-1][0], str):
                word, above_word = stack.pop()
                leaves.append(word)  # type: ignore[arg-type]
                leaf_parent.append(above_word)
    return LNR(tuple(leaves), tuple(labels), tuple(parent), tuple(leaf_parent))


def from_lnr(lnr: LNR) -> list[Tree]:
    """Rebuild the forest from L, N and the subtree sets R alone (Proposition 1): a node's
    parent is the smallest other node whose subtree holds it; children are ordered by their
    first leaf."""
    m = len(lnr.labels)
    subtrees = [lnr.subtree(i) for i in range(m)]
    size = [len(nodes) + len(leaves) for nodes, leaves in subtrees]

    def smallest_holder(contains) -> int:
        holders = [i for i in range(m) if contains(i)]
        return min(holders, key=lambda i: size[i]) if holders else -1

    parent = [smallest_holder(lambda i, t=t: i != t and t in subtrees[i][0]) for t in range(m)]
    leaf_parent = [
        smallest_holder(lambda i, j=j: j in subtrees[i][1]) for j in range(len(lnr.leaves))
    ]
    first_leaf = [min(leaves) for _, leaves in subtrees]
    children: list[list[tuple[int, str | int]]] = [[] for _ in range(m)]
    for j, p in enumerate(leaf_parent):
        children[p].append((j, lnr.leaves[j]))
    for t, p in enumerate(parent):
        if p >= 0:
            children[p].append((first_leaf[t], t))
    built: dict[int, Tree] = {}
    for t in sorted(range(m), key=lambda t: -len(lnr.ancestors(t))):  # deepest first
        kids = [built[c] if isinstance(c, int) else c for _, c in sorted(children[t], key=_order)]
        built[t] = Tree(lnr.labels[t], kids)
    return [
        built[t] for t in sorted((t for t in range(m) if parent[t] < 0), key=first_leaf.__getitem__)
    ]


def _order(entry: tuple[int, str | int]) -> tuple[int, int]:
    # A leaf and a node can start at the same leaf position only when the node holds that
    # leaf, which is impossible for siblings; the second key keeps the sort total anyway.
    position, child = entry
    return position, isinstance(child, int)
