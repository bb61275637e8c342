"""Penn Treebank label conventions shared by the tree transforms, head rules and metrics."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treeattn.trees.tree import Tree

__all__ = ["EMPTY_ELEMENT", "PUNCTUATION_TAGS", "REMOVED_TAGS", "strip_label", "word_mask"]

EMPTY_ELEMENT = "-NONE-"
"""The tag of empty elements (traces, null complementizers): ``(-NONE- *T*-1)``."""

PUNCTUATION_TAGS: frozenset[str] = frozenset({"``", "''", ",", ".", ":", "-LRB-", "-RRB-"})
"""PTB punctuation tags. Removed for unsupervised-parsing evaluation, never a head when a
phrase has another child; currency ``$`` and ``#`` are words and not in the set."""

REMOVED_TAGS: frozenset[str] = PUNCTUATION_TAGS | {"$", "#", EMPTY_ELEMENT}


def strip_label(label: str, keep_dash_labels: bool = True) -> str:
    """A PTB label without function tags and co-indices: cut at the first ``-`` or ``=``.

    ``NP-SBJ-1`` -> ``NP``, ``PP-LOC=2`` -> ``PP``, ``S-TPC-1`` -> ``S``. Labels that start
    with ``-`` or ``=`` (``-NONE-``, ``-LRB-``, ``-RRB-``) and the empty label are kept whole,
    unless ``keep_dash_labels=False``: then the cut is EVALB's (``modify_label`` in
    ``evalb.c``), which cuts even at position 0, so ``-NONE-`` becomes ``""``.
    """
    if not label or (keep_dash_labels and label[0] in "-="):
        return label
    for index, char in enumerate(label):
        if char in "-=":
            return label[:index]
    return label


def word_mask(tree: Tree, removed_tags: Collection[str] = REMOVED_TAGS) -> list[bool]:
    """For each word of the sentence (the tree's leaves without traces), is it kept?

    Use it with :func:`project_spans` to score a predicted tree built over all the words,
    punctuation included, against :func:`gold_spans`.
    """
    return [tag not in removed_tags for _, tag in tree.pos() if tag != EMPTY_ELEMENT]
