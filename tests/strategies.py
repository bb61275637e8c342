"""Shared test data: hypothesis strategies for random trees, and deep trees built by loops."""

from __future__ import annotations

from hypothesis import strategies as st

from treeattn.trees import Tree


def leaves(tags: st.SearchStrategy[str], words: st.SearchStrategy[str]) -> st.SearchStrategy:
    """A bare word, or a word under a pre-terminal."""
    return words | st.builds(lambda tag, word: Tree(tag, [word]), tags, words)


def trees(
    labels: st.SearchStrategy[str],
    tags: st.SearchStrategy[str],
    words: st.SearchStrategy[str],
    max_root_children: int = 4,
) -> st.SearchStrategy[Tree]:
    """Trees of up to about 24 leaves, phrases of 1-4 children (the root up to
    ``max_root_children``); a child is a word, a pre-terminal or a phrase."""
    subtrees = st.recursive(
        leaves(tags, words),
        lambda inner: st.builds(Tree, labels, st.lists(inner, min_size=1, max_size=4)),
        max_leaves=24,
    )
    return st.builds(Tree, labels, st.lists(subtrees, min_size=1, max_size=max_root_children))


def binary_trees(
    labels: st.SearchStrategy[str], tags: st.SearchStrategy[str], words: st.SearchStrategy[str]
) -> st.SearchStrategy[Tree]:
    """Trees whose every node but the pre-terminals has exactly two children."""
    return st.recursive(
        leaves(tags, words),
        lambda inner: st.builds(Tree, labels, st.lists(inner, min_size=2, max_size=2)),
        max_leaves=24,
    ).map(lambda t: t if isinstance(t, Tree) else Tree("NN", [t]))


def treebank_shaped(tree: Tree, tag: str = "NN") -> Tree:
    """The tree with every word that has siblings put in a ``tag`` bracket of its own, as
    treebank files hold words."""
    from treeattn.trees import fold_tree

    def wrap(node: Tree, kids: list) -> Tree:
        if len(kids) > 1:
            kids = [Tree(tag, [k]) if isinstance(k, str) else k for k in kids]
        return Tree(node.label, kids)

    return fold_tree(tree, wrap)


# Deep trees: far past Python's recursion limit (1000).
DEEP = 3000


def right_branching(n: int, label: str = "X", tag: str = "NN") -> Tree:
    """``(X (NN w0) (X (NN w1) ... (X (NN wn-2) (NN wn-1))))``: depth n - 1, built by a loop."""
    words = [Tree(tag, [f"w{i}"]) for i in range(n)]
    tree = Tree(label, words[-2:])
    for word in reversed(words[:-2]):
        tree = Tree(label, [word, tree])
    return tree


def left_branching(n: int, label: str = "X", tag: str = "NN") -> Tree:
    """``(X (X ... (X (NN w0) (NN w1)) ...) (NN wn-1))``: depth n - 1, built by a loop."""
    words = [Tree(tag, [f"w{i}"]) for i in range(n)]
    tree = Tree(label, words[:2])
    for word in words[2:]:
        tree = Tree(label, [tree, word])
    return tree
