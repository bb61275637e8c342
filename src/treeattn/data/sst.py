"""Stanford Sentiment Treebank (Socher et al. 2013): sentences, trees, phrase labels.

Files ``sst/{train,dev,test}.txt`` under the data folder hold one binarised tree per line
with a sentiment label 0-4 (very negative ... very positive) on every node, words
included. Two views:

* SST-5 (``fine_grained=True``): every sentence, labels 0-4; 8,544 / 1,101 / 2,210.
* SST-2 (``fine_grained=False``): sentences whose root is neutral (2) are dropped; 0-1 ->
  0 (negative), 3-4 -> 1 (positive); 6,920 / 872 / 1,821. Neutral phrases get
  ``IGNORE_LABEL`` so that phrase-level training skips them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from treeattn.data.paths import require_data
from treeattn.errors import FormatError
from treeattn.trees.tree import Tree
from treeattn.trees.treebank import iter_treebank
from treeattn.utf8 import read_utf8

__all__ = [
    "IGNORE_LABEL",
    "SST_SPLITS",
    "SentimentExample",
    "binary_label",
    "load_sst",
    "read_sst_file",
]

SST_SPLITS = ("train", "dev", "test")
IGNORE_LABEL = -1  # the label of a neutral phrase in the SST-2 view (skipped by the loss)


@dataclass
class SentimentExample:
    """One SST sentence.

    ``tokens``: the n words. ``label``: the sentence (root) label, 0-4 or 0-1. ``tree``:
    the tree as read, labels ``"0"``-``"4"`` on every node. ``phrase_labels``: one
    ``(start, end, label)`` per node of ``tree`` in pre-order (``tree.subtrees()``), root
    first and word-level pre-terminals included, spans half-open over ``tokens``; in the
    SST-2 view neutral nodes have ``IGNORE_LABEL``. ``line``: the line in the file.
    """

    tokens: list[str]
    label: int
    tree: Tree
    phrase_labels: list[tuple[int, int, int]]
    line: int = 0


def binary_label(label: int) -> int:
    """SST-5 label to SST-2: 0-1 -> 0, 3-4 -> 1, neutral 2 -> ``IGNORE_LABEL``."""
    if label == 2:
        return IGNORE_LABEL
    return 0 if label < 2 else 1


def read_sst_file(path: str | Path, fine_grained: bool = True) -> list[SentimentExample]:
    """Read a file in the SST format: one tree per line, a label 0-4 on every node.

    ``fine_grained=False`` gives the SST-2 view (neutral sentences dropped, labels 0-1).
    A node label outside 0-4 raises ``FormatError`` with the file, line and column, as do
    the reader's own errors (brackets, empty lines, bytes that are not UTF-8).
    """
    examples: list[SentimentExample] = []
    for entry in iter_treebank(path, one_per_line=True, unwrap=False):
        spans = entry.tree.spans(include_preterminals=True)  # pre-order, as subtrees()
        phrase_labels: list[tuple[int, int, int]] = []
        for node, (label, start, end) in enumerate(spans):
            if label not in ("0", "1", "2", "3", "4"):
                raise FormatError(
                    f"sentiment label {label!r} is not 0-4",
                    entry.source,
                    entry.line,
                    _label_column(path, entry.line, node),
                )
            value = int(label)
            phrase_labels.append((start, end, value if fine_grained else binary_label(value)))
        label = phrase_labels[0][2]
        if label == IGNORE_LABEL:
            continue  # neutral sentences are not part of SST-2 (documented above)
        examples.append(
            SentimentExample(entry.tree.leaves(), label, entry.tree, phrase_labels, entry.line)
        )
    return examples


def _label_column(path: str | Path, line: int, node: int) -> int:
    """1-based column of the label of the ``node``-th node (pre-order) on ``line``.

    Each node opens with ``(`` and its label follows it directly, and words hold no
    brackets, so the ``node``-th ``(`` of the line is that node's. Only errors need this,
    so the line is read again rather than positions kept for every node.
    """
    text = read_utf8(path).split("\n")[line - 1]
    opening = [offset for offset, char in enumerate(text) if char == "("]
    return opening[node] + 2


def load_sst(
    split: str, root: str | Path | None = None, fine_grained: bool = True
) -> list[SentimentExample]:
    """Read one split (``"train"``, ``"dev"`` or ``"test"``) of SST.

    ``root`` is the data folder holding ``sst/`` (default: ``data_dir()``); see
    ``read_sst_file`` for ``fine_grained``.
    """
    if split not in SST_SPLITS:
        raise ValueError(f"unknown SST split {split!r}; expected one of {SST_SPLITS}")
    return read_sst_file(require_data("sst", f"{split}.txt", root=root), fine_grained)
