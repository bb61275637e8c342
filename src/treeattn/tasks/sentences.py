"""Labeled sentences, the examples of the classify and mlm tasks, and plain text files of
one sentence per line. The data sets that read them: ``treeattn.tasks.datasets``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from treeattn.data.text import TextOptions, apply_options, plain_sentence
from treeattn.errors import FormatError
from treeattn.trees import Tree, binarize, collapse_unary, fold_tree
from treeattn.utf8 import read_utf8, text_lines

TEXT = "text"  # the masked-language-modelling data set


@dataclass(frozen=True)
class LabeledSentence:
    """A sentence, its label and, where the data has one, its tree. ``phrase_labels``:
    ``(start, end, label)`` of every labeled phrase (SST phrase-level training of tree
    models; -1 where a phrase has no label, as the neutral ones of SST-2)."""

    tokens: list[str]
    label: int | str  # a class id, or a class name read from a labeled file
    tree: Tree | None = None
    phrase_labels: tuple[tuple[int, int, int], ...] = ()


def _lowercase_tree(tree: Tree) -> Tree:
    return fold_tree(tree, lambda node, kids: Tree(node.label, kids), leaf=str.lower)


def lowercased(examples: Sequence[LabeledSentence]) -> list[LabeledSentence]:
    """The examples with their words lowercased, in the tokens and in the trees."""
    return [
        replace(
            ex,
            tokens=[t.lower() for t in ex.tokens],
            tree=None if ex.tree is None else _lowercase_tree(ex.tree),
        )
        for ex in examples
    ]


def unlabeled_tree(tree: Tree, label: str = "X") -> Tree:
    """The tree with every node labeled ``label``: SST's node labels are the targets."""
    return fold_tree(tree, lambda node, kids: Tree(label, kids))


def binary_unlabeled(tree: Tree) -> Tree:
    """Unary chains collapsed (a phrase over one word too), binarized and every label
    ``X``: the shape of SST's trees with their sentiment labels hidden."""
    return unlabeled_tree(binarize(collapse_unary(tree, collapse_pos=True)))


def text_options(cfg: Any) -> TextOptions:
    """The text options of a ``text`` data section; a data section without one of them
    (another data set of plain sentences) leaves its words as written there."""
    return TextOptions(
        getattr(cfg, "drop_punctuation", False),
        cfg.lowercase,
        getattr(cfg, "normalize_numbers", False),
    )


def read_text(sentences: Sequence[list[str]], cfg: Any, where: str | Path) -> list[list[str]]:
    """Plain-text sentences as the text options of ``cfg`` show them; a sentence left
    without words (punctuation only) is an error naming ``where`` and its line."""
    options = text_options(cfg)
    shown = []
    for number, words in enumerate(sentences, start=1):
        kept = apply_options(plain_sentence(words), options)
        if not kept:
            raise FormatError("no word is left once punctuation is removed", str(where), number, 1)
        shown.append(kept)
    return shown


def read_sentences(path: str | Path) -> list[list[str]]:
    """One sentence per line, words separated by spaces; an empty line is an error naming
    the file and line (the newline ending the last line is not an empty line)."""
    return lines_to_sentences(text_lines(read_utf8(path)), str(path))


def lines_to_sentences(lines: Sequence[str], where: str) -> list[list[str]]:
    """The words of each line; an empty line is an error naming ``where`` and the line."""
    sentences = []
    for number, line in enumerate(lines, start=1):
        words = line.split()
        if not words:
            raise FormatError("empty line", where, number, 1)
        sentences.append(words)
    return sentences
