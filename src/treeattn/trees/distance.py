"""Syntactic distance: a constituency tree as one number per gap between adjacent words.

Shen et al. (ACL 2018), "Straight to the tree", and Hou et al. (2022) use the distance
``d_i`` between words ``i`` and ``i + 1`` = the height of their lowest common ancestor,
with words and pre-terminals at height 0 and a phrase 1 + its tallest child
(``Tree.height``). Splitting a sentence at its largest distance, then each half at its
largest, and so on, gives the tree back.

>>> syntactic_distances(Tree.parse("(S I (VP swim (PP across (NP the river))) .)"))
[4, 3, 2, 1, 4]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from treeattn.trees.tree import Child, Tree

__all__ = ["syntactic_distances", "tree_from_distances"]


def syntactic_distances(tree: Tree) -> list[int]:
    """The ``n - 1`` distances of a tree with ``n`` words (``[]`` for one word).

    ``d[i]`` is the height of the lowest common ancestor of words ``i`` and ``i + 1``. Each
    gap lies between two adjacent children of exactly one node, that ancestor, so one pass
    over the nodes fills every gap: O(number of nodes).
    """
    nodes = list(tree.subtrees())  # pre-order: parents before children
    height: dict[int, int] = {}
    width: dict[int, int] = {}
    for node in reversed(nodes):  # children before parents
        if node.is_preterminal():
            height[id(node)] = 0
            width[id(node)] = 1
            continue
        tallest = 0
        size = 0
        for child in node.children:
            if isinstance(child, str):
                size += 1
            else:
                tallest = max(tallest, height[id(child)])
                size += width[id(child)]
        height[id(node)] = 1 + tallest
        width[id(node)] = size

    distances = [0] * (width[id(tree)] - 1)
    stack: list[tuple[Tree, int]] = [(tree, 0)]
    while stack:
        node, start = stack.pop()
        if node.is_preterminal():
            continue
        end = start
        for index, child in enumerate(node.children):
            if index > 0:
                distances[end - 1] = height[id(node)]  # gap between words end-1 and end
            if isinstance(child, str):
                end += 1
            else:
                stack.append((child, end))
                end += width[id(child)]
    return distances


def tree_from_distances(
    words: Sequence[str],
    distances: Sequence[float],
    label: str = "X",
    tags: Sequence[str] | None = None,
) -> Tree:
    """The binary tree that splits at the largest distance, recursively.

    ``distances`` has ``len(words) - 1`` entries (gold heights or a model's real-valued
    scores); ties split at the leftmost maximum, so equal distances give a right-branching
    run; a NaN distance raises ``ValueError``. Every phrase is labeled ``label``;
    ``tags[i]`` (when given and non-empty) puts word ``i`` under a pre-terminal, else the
    word sits directly under its phrase. A single word gives ``(label word)``, or with a
    tag just its pre-terminal ``(tag word)``.

    Round trip: for a binary tree ``t`` (every node but the pre-terminals has two
    children), ``tree_from_distances(t.leaves(), syntactic_distances(t), tags=t.tags())``
    has exactly the unlabeled spans of ``t`` (``unlabeled_spans()``) and the same
    pre-terminals; it equals ``t`` when all of ``t``'s phrases are labeled ``label``. For
    other trees the result is a binarisation: it holds every span of ``t`` of two or more
    words.

    Built as a Cartesian tree of the gaps with one stack and no recursion: O(n), and the
    deep trees of long monotone distances are fine for every ``Tree`` method.
    """
    n = len(words)
    if n == 0:
        raise ValueError("no words")
    if len(distances) != n - 1:
        raise ValueError(f"{len(distances)} distances for {n} words (expected {n - 1})")
    if tags is not None and len(tags) != n:
        raise ValueError(f"{len(tags)} tags for {n} words")
    for gap, distance in enumerate(distances):
        if math.isnan(distance):
            # NaN compares false with everything: the split would be arbitrary.
            raise ValueError(
                f"distances[{gap}] is NaN (the gap between words[{gap}] and words[{gap + 1}])"
            )

    def leaf(i: int) -> Child:
        if tags is not None and tags[i]:
            return Tree(tags[i], [words[i]])
        return words[i]

    if n == 1:
        only = leaf(0)
        return only if isinstance(only, Tree) else Tree(label, [only])

    # Cartesian tree over the gaps: a gap's parent is the nearest larger one; popping only
    # strictly smaller gaps keeps an earlier equal gap above a later one (leftmost max).
    left = [-1] * (n - 1)
    right = [-1] * (n - 1)
    stack: list[int] = []
    for gap in range(n - 1):
        last = -1
        while stack and distances[stack[-1]] < distances[gap]:
            last = stack.pop()
        left[gap] = last
        if stack:
            right[stack[-1]] = gap
        stack.append(gap)
    root = stack[0]

    order: list[int] = []  # pre-order of the gaps
    todo = [root]
    while todo:
        gap = todo.pop()
        order.append(gap)
        todo.extend(child for child in (left[gap], right[gap]) if child >= 0)
    built: dict[int, Tree] = {}
    for gap in reversed(order):  # children before parents
        left_part = built.pop(left[gap]) if left[gap] >= 0 else leaf(gap)
        right_part = built.pop(right[gap]) if right[gap] >= 0 else leaf(gap + 1)
        built[gap] = Tree(label, [left_part, right_part])
    return built[root]


# Joins the gaps of consecutive sentences read as one sequence: wider than any tree.
SENTENCE_BREAK = 999


def gap_distances(
    trees: Sequence[Tree], pieces: Sequence[Sequence[int]] | None = None
) -> list[int]:
    """The distances between adjacent tokens of ``trees`` read as one sequence.

    ``pieces[s][w]`` is how many subword tokens word w of sentence s became (default: one
    each); the gaps inside a word are 0 before the shift by 1, and consecutive sentences
    are joined by ``SENTENCE_BREAK``.
    """
    if pieces is not None and len(pieces) != len(trees):
        raise ValueError(f"{len(trees)} trees but piece counts for {len(pieces)} sentences")
    gaps: list[int] = []
    for s, tree in enumerate(trees):
        words = syntactic_distances(tree)
        counts = [1] * (len(words) + 1) if pieces is None else list(pieces[s])
        if len(counts) != len(words) + 1 or min(counts) < 1:
            raise ValueError(
                f"sentence {s + 1}: {len(words) + 1} words need as many piece counts of at "
                f"least 1, got {counts}"
            )
        if s:
            gaps.append(SENTENCE_BREAK)
        for w, count in enumerate(counts):
            gaps.extend([1] * (count - 1))  # inside the word: 0, shifted
            if w < len(words):
                gaps.append(words[w] + 1)
    return gaps
