"""Treebank files: read and write files of bracketed trees.

Two layouts are read:

* one tree per line, as the Stanford Sentiment Treebank (``(3 (2 The) (2 Rock) ...)``): each
  line holds exactly one tree; a blank line between trees is an error, blank lines at the
  end are not (the rule of every one-item-per-line reader: ``utf8.text_lines``);
* free layout, as Penn Treebank ``.mrg`` files: trees span several lines, may be separated
  by blank lines, and are wrapped in an outer unlabeled bracket ``( (S ...) )``. A ``(`` at
  the start of a line opens a new tree, and the lines inside a tree are indented: a ``(``
  at the start of a line, or a blank line not followed by an indented line, inside a tree
  that is still open is an error naming the line where that tree opened (so a missing
  ``)`` never joins two trees into one). See ``iter_parse_with_positions(mrg_layout=True)``.

Every problem raises ``FormatError`` naming the file, line and column; no tree is ever
skipped. Files are UTF-8; other bytes raise ``FormatError`` too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from treeattn.errors import FormatError
from treeattn.trees.transforms import unwrap_root
from treeattn.trees.tree import WHITESPACE, Tree, iter_parse_with_positions
from treeattn.utf8 import read_utf8, text_lines

__all__ = [
    "TreebankEntry",
    "detect_one_per_line",
    "iter_treebank",
    "read_treebank",
    "read_treebank_entries",
    "write_treebank",
]

# A label or word that would not read back the same once written.
_UNWRITABLE = re.compile(r"[ \t\n\r\f\v()]")


@dataclass(frozen=True)
class TreebankEntry:
    """A tree with where it came from: ``source`` (the file) and the 1-based ``line`` of its
    opening bracket."""

    tree: Tree
    source: str
    line: int


def detect_one_per_line(text: str) -> bool:
    """True when every non-empty line of ``text`` is on its own a complete bracketed tree.

    Only brackets are counted (each line starts with ``(``, its depth never goes below zero
    and ends at zero), so this is cheap; the full parse comes later. A text with no
    non-empty line gives ``False``.
    """
    seen = False
    for line in text.split("\n"):
        stripped = line.strip(WHITESPACE)
        if not stripped:
            continue
        if not stripped.startswith("("):
            return False
        depth = 0
        for char in stripped:
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth < 0:
                    return False
            elif depth == 0 and char not in WHITESPACE:
                return False  # a word after the tree closed
        if depth != 0:
            return False
        seen = True
    return seen


def _iter_lines(text: str, source: str, first_line: int = 1) -> Iterator[tuple[Tree, int]]:
    for number, line in enumerate(text_lines(text), start=first_line):
        if not line.strip(WHITESPACE):
            raise FormatError("empty line in a file with one tree per line", source, number, 1)
        found: tuple[Tree, int] | None = None
        for tree, _, column in iter_parse_with_positions(line, source, number, treebank_words=True):
            if found is not None:
                raise FormatError(
                    "a second tree starts on this line (one tree per line expected)",
                    source,
                    number,
                    column,
                )
            found = (tree, number)
        assert found is not None  # a non-empty line yields a tree or raises
        yield found


def parse_treebank_line(line: str, source: str, number: int) -> Tree:
    """The one tree on line ``number`` of ``source``, read as treebank files are (every word
    in a bracket of its own); ``FormatError`` names file:line:column."""
    return next(_iter_lines(line, source, number))[0]


def iter_treebank(
    path: str | Path, one_per_line: bool | None = None, unwrap: bool | None = None
) -> Iterator[TreebankEntry]:
    """Read a treebank file lazily, one ``TreebankEntry`` per tree, in file order.

    ``one_per_line``: ``True`` reads one tree per line (empty lines are errors), ``False``
    reads a free layout (``.mrg``); ``None`` decides: ``.mrg`` files are free layout, other
    files are one per line when ``detect_one_per_line`` says so. ``unwrap``: drop an outer
    unlabeled bracket holding one tree (see ``unwrap_root``); ``None`` unwraps in free
    layout only, so that one-per-line files read back to their exact lines.
    """
    path = Path(path)
    source = str(path)
    text = read_utf8(path)
    if one_per_line is None:
        one_per_line = path.suffix.lower() != ".mrg" and detect_one_per_line(text)
    if unwrap is None:
        unwrap = not one_per_line
    if one_per_line:
        located: Iterable[tuple[Tree, int]] = _iter_lines(text, source)
    else:
        located = (
            (tree, line)
            for tree, line, _ in iter_parse_with_positions(
                text, source, mrg_layout=True, treebank_words=True
            )
        )
    for tree, line in located:
        yield TreebankEntry(unwrap_root(tree) if unwrap else tree, source, line)


def read_treebank_entries(
    path: str | Path, one_per_line: bool | None = None, unwrap: bool | None = None
) -> list[TreebankEntry]:
    """All trees of a file with their file and line; arguments as ``iter_treebank``. A file
    with no tree is an error naming it."""
    entries = list(iter_treebank(path, one_per_line, unwrap))
    if not entries:
        raise FormatError("no tree in the file (it is empty)", str(path))
    return entries


def read_treebank(
    path: str | Path, one_per_line: bool | None = None, unwrap: bool | None = None
) -> list[Tree]:
    """All trees of a treebank file; arguments as ``iter_treebank``.

    For a one-per-line file (SST), ``read_treebank(p)[k].to_brackets()`` is line ``k + 1``
    whenever the line uses single spaces between brackets and words, as SST does. A file
    with no tree is an error naming it.
    """
    return [entry.tree for entry in read_treebank_entries(path, one_per_line, unwrap)]


def write_treebank(path: str | Path, trees: Iterable[Tree]) -> None:
    """Write ``trees`` one per line (UTF-8, each line ending in a newline).

    Raises ``ValueError`` before writing anything if a label or word holds whitespace or a
    bracket, or a word sits beside a phrase (not in a bracket of its own), since such a
    tree could not be read back.
    """
    lines = []
    for index, tree in enumerate(trees):
        for node in tree.subtrees():
            if _UNWRITABLE.search(node.label) or (node.label == "" and node is not tree):
                raise ValueError(f"tree {index}: label {node.label!r} cannot be written")
            words = [child for child in node.children if isinstance(child, str)]
            for child in words:
                if not child or _UNWRITABLE.search(child):
                    raise ValueError(f"tree {index}: word {child!r} cannot be written")
            if words and len(node.children) > 1:
                raise ValueError(f"tree {index}: word {words[0]!r} has no bracket of its own")
        if tree.label == "" and any(isinstance(c, str) for c in tree.children):
            raise ValueError(f"tree {index}: an unlabeled root cannot hold words")
        lines.append(tree.to_brackets() + "\n")
    Path(path).write_text("".join(lines), encoding="utf-8")
