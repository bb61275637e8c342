"""Tree clean-up and normal forms: empty elements, function tags, unary chains, binarisation.

Every function is pure: it builds and returns a new tree and never changes its input (the
result shares no node with the input, so changing it later cannot change the input).

Conventions:

* Binarisation marks the intermediate nodes it adds with the prefix ``@`` on the label of
  the node they come from: a right-binarised ``(NP a b c)`` is ``(NP a (@NP b c))``.
  ``unbinarize`` removes every node whose label starts with the marker, so it is the exact
  inverse of ``binarize`` provided no label of the input starts with the marker;
  ``binarize`` checks this and raises ``ValueError`` otherwise.
* Unary chains are joined with ``+`` (``S+VP``) when joined labels are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Literal

from treeattn.trees.labels import EMPTY_ELEMENT, PUNCTUATION_TAGS, strip_label
from treeattn.trees.tree import Child, LabeledSpan, Tree, fold_tree

__all__ = [
    "BINARY_MARKER",
    "binarize",
    "clean_ptb",
    "collapse_unary",
    "prune",
    "remove_empty_elements",
    "remove_punctuation",
    "strip_function_tags",
    "unbinarize",
    "unwrap_root",
]

BINARY_MARKER = "@"


def unwrap_root(tree: Tree) -> Tree:
    """Drop an outer unlabeled bracket with one tree inside (``( (S ...) )`` -> ``(S ...)``).

    Any other tree (labeled root, or an unlabeled root over several children) comes back
    as an unchanged copy.
    """
    if tree.label == "" and len(tree.children) == 1 and isinstance(tree.children[0], Tree):
        return tree.children[0].copy()
    return tree.copy()


def prune(tree: Tree, drop: Callable[[Tree], bool]) -> Tree | None:
    """Remove every node for which ``drop(node)`` is true, with its subtree, and then every
    node left with no children, recursively. ``None`` when nothing is left.

    Words (``str`` children) are never tested; pre-terminals are, so
    ``drop=lambda t: t.label == "-NONE-"`` removes the empty elements. ``drop`` is called
    once on every node whose ancestors are all kept.
    """
    if drop(tree):
        return None

    def kept_children(node: Tree) -> list[Child]:
        return [c for c in node.children if isinstance(c, str) or not drop(c)]

    def rebuild(node: Tree, kids: list[Child | None]) -> Tree | None:
        children = [kid for kid in kids if kid is not None]
        return Tree._unchecked(node.label, children) if children else None

    return fold_tree(tree, rebuild, children=kept_children)


def remove_empty_elements(tree: Tree, label: str = EMPTY_ELEMENT) -> Tree:
    """Remove the empty elements (``(-NONE- *T*-1)``) and the constituents they leave empty.

    ``(S (NP-SBJ (-NONE- *-1)) (VP (VB go)))`` -> ``(S (VP (VB go)))``. Raises
    ``ValueError`` when the whole tree is empty elements.
    """
    result = prune(tree, lambda node: node.label == label)
    if result is None:
        raise ValueError(f"tree has only {label} elements: {tree.to_brackets()}")
    return result


def remove_punctuation(tree: Tree, tags: Collection[str] = PUNCTUATION_TAGS) -> Tree:
    """Remove pre-terminals tagged as punctuation and the constituents they leave empty.

    Raises ``ValueError`` when nothing but punctuation is left.
    """
    result = prune(tree, lambda node: node.is_preterminal() and node.label in tags)
    if result is None:
        raise ValueError(f"tree has only punctuation: {tree.to_brackets()}")
    return result


def strip_function_tags(tree: Tree) -> Tree:
    """Apply ``strip_label`` to every label (phrases and pre-terminals)."""
    return fold_tree(tree, lambda node, kids: Tree._unchecked(strip_label(node.label), kids))


def clean_ptb(tree: Tree) -> Tree:
    """The usual clean-up of a PTB tree for parsing.

    Drops an outer unlabeled bracket (``unwrap_root``), removes empty elements and the
    constituents left empty (``remove_empty_elements``) and strips function tags and
    co-indices (``strip_function_tags``). Unary chains and punctuation stay.
    """
    return strip_function_tags(remove_empty_elements(unwrap_root(tree)))


def collapse_unary(
    tree: Tree,
    keep_joined_labels: bool = False,
    collapse_pos: bool = False,
    joiner: str = "+",
) -> Tree:
    """Merge each chain of single-child nodes into one node.

    A phrase whose only child is a phrase merges with it: ``(S (VP (VB go) (NP it)))``
    becomes ``(S+VP (VB go) (NP it))`` with ``keep_joined_labels``, else ``(S (VB go) (NP
    it))`` (the top label stays: it is the constituent's role in its parent).

    Pre-terminals are kept: by default a phrase over a single pre-terminal stays, so
    ``(NP (PRP it))`` is unchanged and the chain ``(S (VP (NP (PRP it))))`` becomes
    ``(S+VP+NP (PRP it))``. With ``collapse_pos`` the phrase on top of a POS is dropped
    into it as well: ``(NP (PRP it))`` -> ``(PRP it)`` (the tag stays, since it is what a
    word needs), or ``(NP+PRP it)`` with ``keep_joined_labels``.

    Empty labels (an outer PTB wrapper) are left out of the joined label, and a kept top
    label that is empty gives way to the next label down.
    """

    def merged(labels: list[str], keep_bottom: bool) -> str:
        named = [label for label in labels if label]
        if not named:
            return ""
        if keep_joined_labels:
            return joiner.join(named)
        return named[-1] if keep_bottom else named[0]

    def chain(node: Tree) -> tuple[list[str], Tree]:
        """The labels of the unary chain that starts at ``node``, and its last node."""
        labels = [node.label]
        while len(node.children) == 1 and isinstance(node.children[0], Tree):
            child = node.children[0]
            if child.is_preterminal() and not collapse_pos:
                break
            node = child
            labels.append(node.label)
        return labels, node

    def collapse(node: Tree, kids: list[Child]) -> Tree:
        labels, bottom = chain(node)
        # A pre-terminal bottom is reached only for a pre-terminal root or with
        # collapse_pos: the tag survives.
        return Tree._unchecked(merged(labels, keep_bottom=bottom.is_preterminal()), kids)

    # The nodes inside a chain are skipped: the chain's top gets the bottom's children.
    return fold_tree(tree, collapse, children=lambda node: chain(node)[1].children)


def binarize(
    tree: Tree,
    direction: Literal["right", "left"] = "right",
    marker: str = BINARY_MARKER,
) -> Tree:
    """Give every node at most two children by adding intermediate nodes ``marker + label``.

    Right: ``(X a b c d)`` -> ``(X a (@X b (@X c d)))``; left: ``(X (@X (@X a b) c) d)``.
    Unary nodes and pre-terminals stay as they are (use ``collapse_unary`` first for a
    Chomsky normal form). Raises ``ValueError`` when a label already starts with
    ``marker``, since ``unbinarize`` could not then tell added nodes from real ones.
    """
    if direction not in ("right", "left"):
        raise ValueError(f"direction must be 'right' or 'left', not {direction!r}")
    if not marker:
        raise ValueError("the marker must not be empty")
    for node in tree.subtrees():
        if node.label.startswith(marker):
            raise ValueError(f"label {node.label!r} starts with the binarisation marker {marker!r}")

    def build(node: Tree, kids: list[Child]) -> Tree:
        if len(kids) <= 2:
            return Tree(node.label, kids)
        added = marker + node.label
        if direction == "right":
            rest = Tree(added, kids[-2:])
            for kid in reversed(kids[1:-2]):
                rest = Tree(added, [kid, rest])
            return Tree(node.label, [kids[0], rest])
        rest = Tree(added, kids[:2])
        for kid in kids[2:-1]:
            rest = Tree(added, [rest, kid])
        return Tree(node.label, [rest, kids[-1]])

    return fold_tree(tree, build)


def unbinarize(tree: Tree, marker: str = BINARY_MARKER) -> Tree:
    """Splice out every node whose label starts with ``marker`` (its children take its place).

    The exact inverse of ``binarize``: ``unbinarize(binarize(t)) == t`` whenever
    ``binarize(t)`` is accepted. It also undoes trees predicted in the binarised form; a
    root that carries the marker keeps its children and loses the marker.
    """
    if not marker:
        raise ValueError("the marker must not be empty")

    def spliced(node: Tree) -> list[Child]:
        """``node``'s children, each marked node replaced by its own (spliced) children."""
        for child in node.children:
            if isinstance(child, Tree) and child.label.startswith(marker):
                break
        else:
            return node.children  # nothing to splice (the usual case)
        out: list[Child] = []
        todo: list[Child] = list(reversed(node.children))
        while todo:
            child = todo.pop()
            if isinstance(child, Tree) and child.label.startswith(marker):
                todo.extend(reversed(child.children))
            else:
                out.append(child)
        return out

    def rebuild(node: Tree, kids: list[Child]) -> Tree:
        label = node.label
        if node is tree and label.startswith(marker):
            label = label[len(marker) :]
        return Tree._unchecked(label, kids)

    return fold_tree(tree, rebuild, children=spliced)


def chain_spans(tree: Tree, joiner: str = "+") -> list[LabeledSpan]:
    """The phrases of ``tree`` as a chart parser labels them: one span per bracket, a unary
    chain of phrases over the same words joined into one label (``S+VP``), top first;
    pre-terminals left out. ``tree_from_chain_spans`` undoes it.

    >>> chain_spans(Tree.parse("(S (VP (VB go) (NP (PRP it))))"))
    [('S+VP', 0, 2), ('NP', 1, 2)]
    """
    merged: list[LabeledSpan] = []
    for label, start, end in tree.spans():  # pre-order: a chain's nodes come in a row
        if merged and merged[-1][1:] == (start, end):
            merged[-1] = (merged[-1][0] + joiner + label, start, end)
        else:
            merged.append((label, start, end))
    return merged


def tree_from_chain_spans(
    words: Sequence[str],
    spans: Sequence[LabeledSpan],
    tags: Sequence[str] | None = None,
    root_label: str = "TOP",
    joiner: str = "+",
) -> Tree:
    """The tree of ``chain_spans`` output (words, their tags): chains are split again; when
    no span covers every word, a ``root_label`` node does (EVALB's COLLINS.prm deletes
    ``TOP``)."""
    expanded = [(part, start, end) for label, start, end in spans for part in label.split(joiner)]
    if not any(start == 0 and end == len(words) for _, start, end in expanded):
        expanded.insert(0, (root_label, 0, len(words)))
    return Tree.from_spans(words, expanded, tags)
