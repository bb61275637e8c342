"""Penn Treebank label conventions shared by the tree transforms, head rules and metrics."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treeattn.trees.tree import Tree

__all__ = [
    "EMPTY_ELEMENT",
    "PUNCTUATION_TAGS",
    "REMOVED_TAGS",
    "strip_label",
    "word_mask",
    "wsj_convention",
]

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


# Semicolons, dashes and ellipses: the WSJ tags them ``:`` (Santorini 1990), EWT mostly ``,``.
_COLON_WORDS = re.compile(r"^(;|-+|\u2013|\u2014|\.{2,}|\u2026)$")


def wsj_convention(words: Sequence[str], tags: Sequence[str]) -> list[str]:
    """English Web Treebank tags (UD English EWT's XPOS) as the Wall Street Journal writes
    the same uses, where the two treebanks disagree.

    - ``to`` is always ``TO`` in the WSJ (EWT: ``IN`` 1,862 times in training, as a
      preposition; the PTB sample: ``TO`` 2,179 times, ``IN`` twice);
    - semicolons, dashes and ellipses are ``:`` in the WSJ (EWT: ``,``, and ``.`` for some
      ellipses; the PTB sample: ``;`` ``:`` 171 times, ``--`` 230 times).

    EWT's tags for what the WSJ never annotated stay (``HYPH``, a hyphen cut out of a
    compound; ``NFP``, ``ADD`` for addresses, ``AFX``, ``GW``): they say something the
    WSJ's tags cannot."""
    out = []
    for word, tag in zip(words, tags, strict=True):
        if tag == "IN" and word.lower() == "to":
            tag = "TO"
        elif tag in (",", ".") and _COLON_WORDS.match(word):
            tag = ":"
        out.append(tag)
    return out
