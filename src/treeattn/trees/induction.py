"""Constituency trees read off the links between neighbouring words (the Tree Transformer,
Wang et al. 2019): its unsupervised parsing, apart from any model.

Links (L, n-1) give, per layer l, the probability ``a^l_k`` that words k and k+1 belong to
one constituent; links only grow with depth. A sentence's tree is read top-down from the
top layer: a span splits at its weakest link; while that link is above ``threshold`` (0.8)
the split is taken from one layer lower instead, down to ``min_layer``. Three variants
(``VARIANTS``) differ in what happens then:

- ``binary``: at ``min_layer`` the weakest link splits the span whatever its strength,
  and both halves start on the layer where their parent split: always a binary tree.
- ``paper``: Algorithm 1 as the paper writes it. A span whose links are all above the
  threshold at ``min_layer`` stays flat (a node with a child per word); the halves of a
  split start one layer lower, at ``max(l - 1, min_layer)``.
- ``release``: the authors' parse.py. Flat spans as the paper's, but a half starts one
  layer lower only when its own weakest link at the split's layer is above 0.7
  (``RELEASE_DESCENT``), otherwise on the same layer; ``min_layer`` is 2 by default.

Plain Python and numpy, so that the command line offers the variants without torch.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from treeattn.trees.transforms import binarize
from treeattn.trees.tree import Span, Tree

THRESHOLD = 0.8
VARIANTS = ("paper", "release", "binary")
DEFAULT_MIN_LAYER = {"binary": 0, "paper": 0, "release": 2}
RELEASE_DESCENT = 0.7  # parse.py: a half this strongly linked starts a layer lower


def induce_spans(
    links: np.ndarray,
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
    variant: str = "paper",
) -> set[Span]:
    """The spans ``(start, end)`` of the tree one variant reads from one sentence's links
    (L, n-1): every phrase of two or more words, the whole sentence included.
    ``min_layer`` None is the variant's default (``DEFAULT_MIN_LAYER``, at most the top
    layer)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown induction variant {variant!r}; known: {', '.join(VARIANTS)}")
    n_layers, n = links.shape[0], links.shape[1] + 1
    if min_layer is None:  # the variant's own, or the top layer of a shallower model
        min_layer = min(DEFAULT_MIN_LAYER[variant], n_layers - 1)
    if not 0 <= min_layer < n_layers:
        raise ValueError(f"min_layer must lie in 0..{n_layers - 1}, got {min_layer}")
    spans: set[Span] = set()
    todo = [(0, n, n_layers - 1)] if n >= 2 else []  # (start, end, layer) of each phrase
    while todo:
        start, end, layer = todo.pop()
        spans.add((start, end))
        inner = links[:, start : end - 1]  # the links inside the span, every layer
        weakest = int(inner[layer].argmin())
        while inner[layer, weakest] > threshold and layer > min_layer:
            layer -= 1
            weakest = int(inner[layer].argmin())
        if inner[layer, weakest] > threshold and variant != "binary":
            continue  # strong all through at the lowest layer: a flat phrase
        split = start + weakest + 1
        for i, j in ((start, split), (split, end)):
            if j - i >= 2:
                todo.append(
                    (i, j, _child_layer(variant, links[layer, i : j - 1], layer, min_layer))
                )
    return spans


def _child_layer(variant: str, child_links: np.ndarray, layer: int, min_layer: int) -> int:
    """The layer a half of a span split on ``layer`` starts from."""
    lower = max(layer - 1, min_layer)
    if variant == "paper":
        return lower
    if variant == "release":
        return lower if child_links.min() > RELEASE_DESCENT else layer
    return layer


def gold_links(tree: Tree, n_layers: int = 1) -> np.ndarray:
    """Links (n_layers, n-1) read off a gold tree, the same at every layer: the link
    between words i and i+1 falls with the height of their lowest common ancestor in the
    right-binarized tree (``1 / (1 + height)``; words have height 0). Any variant reads
    the binarized tree back from them: a check of the induction apart from any model."""
    heights: list[float] = []

    def walk(node: Tree | str) -> int:
        """The node's height; records the height of the gap between its two children."""
        if isinstance(node, str):
            return 0
        if node.is_preterminal():
            return 0  # the word itself: a tag is no phrase
        kids = [walk(child) for child in node.children[:1]]
        for child in node.children[1:]:
            heights.append(-1.0)  # the gap before ``child``, filled below
            gap = len(heights) - 1
            kids.append(walk(child))
            heights[gap] = 1 + max(kids)
        return 1 + max(kids)

    walk(binarize(tree))
    row = 1.0 / (1.0 + np.array(heights, dtype=np.float64))
    return np.tile(row, (n_layers, 1))


def spans_to_tree(words: Sequence[str], spans: set[Span], label: str = "X") -> Tree:
    """A tree over ``words`` whose phrases are ``spans``, each labeled ``label``; every word
    sits in a ``label`` bracket of its own, as treebank files want."""
    ordered = sorted(spans, key=lambda span: (span[0], -span[1]))
    spans_of_phrases = [(label, i, j) for i, j in ordered if j - i > 1]
    return Tree.from_spans(list(words), spans_of_phrases, tags=[label] * len(words))


def trees_from_links(
    sentences: Sequence[Sequence[str]],
    links: Sequence[np.ndarray],
    variant: str = "paper",
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
) -> list[Tree]:
    """The tree ``variant`` reads from each sentence's links; ``(X word)`` for one word."""
    return [
        spans_to_tree(words, induce_spans(row, threshold, min_layer, variant) | {(0, len(words))})
        for words, row in zip(sentences, links, strict=True)
    ]
