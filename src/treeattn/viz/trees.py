"""Constituency tree pictures: a pure layout, and a matplotlib drawing of it."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402

from treeattn.trees.tree import Tree, fold_tree  # noqa: E402


class LayoutNode(NamedTuple):
    """One drawn node: a phrase (``is_word`` False) or a word, at (x, y)."""

    label: str
    x: float
    y: float
    is_word: bool


@dataclass(frozen=True)
class TreeLayout:
    """``nodes`` in post-order (children before parents, so the root is last) and
    ``edges`` as (parent index, child index) pairs into ``nodes``."""

    nodes: list[LayoutNode]
    edges: list[tuple[int, int]]

    @property
    def n_words(self) -> int:
        return sum(node.is_word for node in self.nodes)

    @property
    def top(self) -> float:
        return self.nodes[-1].y


def tree_layout(tree: Tree) -> TreeLayout:
    """Coordinates for drawing ``tree``, computed with an explicit stack (no recursion).

    Word i sits at (i, 0). A phrase sits one row above its tallest child (so the root is
    on top and every pre-terminal just above its word) and midway between its first and
    last child, which puts it over its children.

    >>> layout = tree_layout(Tree.parse("(S (NP a b) c)"))
    >>> [(node.label, node.x, node.y) for node in layout.nodes]
    [('a', 0.0, 0.0), ('b', 1.0, 0.0), ('NP', 0.5, 1.0), ('c', 2.0, 0.0), ('S', 1.25, 2.0)]
    >>> layout.edges
    [(2, 0), (2, 1), (4, 2), (4, 3)]
    """
    nodes: list[LayoutNode] = []
    edges: list[tuple[int, int]] = []
    words_seen = 0

    def place_word(word: str) -> int:
        # fold_tree meets words left to right, so a counter gives sentence order.
        nonlocal words_seen
        nodes.append(LayoutNode(word, float(words_seen), 0.0, True))
        words_seen += 1
        return len(nodes) - 1

    def place_phrase(node: Tree, kids: list[int]) -> int:
        x = (nodes[kids[0]].x + nodes[kids[-1]].x) / 2
        y = 1.0 + max(nodes[k].y for k in kids)
        nodes.append(LayoutNode(node.label, x, y, False))
        parent = len(nodes) - 1
        edges.extend((parent, k) for k in kids)
        return parent

    fold_tree(tree, place_phrase, place_word)
    return TreeLayout(nodes, edges)


# Inches per word column and per tree row; 0.5 in fits a 9 pt word of about 6 letters.
_COLUMN_INCHES = 0.5
_CHAR_INCHES = 0.085  # one character of a 9-point label, with room to spare
_ROW_INCHES = 0.4
# Agg refuses images wider or taller than 2**16 pixels; stay well below at 100 dpi.
_MAX_INCHES = 300.0


def draw_tree(tree: Tree, path: str | Path, title: str | None = None) -> Path:
    """Draw ``tree`` to ``path`` (PNG, or SVG when the suffix is ``.svg``); return the path.

    Words run along the bottom in sentence order, phrases above them (see ``tree_layout``).
    The figure grows with the number of words, the longest word and the height of the
    tree, so that words never overlap; a long title wraps to the figure's width.
    """
    path = Path(path)
    layout = tree_layout(tree)
    longest = max(len(node.label) for node in layout.nodes if node.is_word)
    column = max(_COLUMN_INCHES, _CHAR_INCHES * longest + 0.15)
    width = min(_MAX_INCHES, max(3.0, column * layout.n_words + 0.5))
    height = min(_MAX_INCHES, max(2.0, _ROW_INCHES * (layout.top + 1) + 0.6))
    fig, ax = plt.subplots(figsize=(width, height), dpi=100)
    segments = [
        [(layout.nodes[p].x, layout.nodes[p].y), (layout.nodes[c].x, layout.nodes[c].y)]
        for p, c in layout.edges
    ]
    # One collection, not one Line2D per edge: much faster for long sentences.
    ax.add_collection(LineCollection(segments, colors="0.55", linewidths=0.8, zorder=1))
    for node in layout.nodes:
        ax.text(
            node.x,
            node.y,
            node.label,
            ha="center",
            va="center",
            fontsize=9,
            color="tab:blue" if node.is_word else "black",
            fontweight="normal" if node.is_word else "bold",
            # A white box so that edges stop at the label instead of crossing it.
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"},
            zorder=2,
        )
    ax.set_xlim(-0.6, layout.n_words - 0.4)
    ax.set_ylim(-0.6, layout.top + 0.6)
    ax.axis("off")
    if title:
        ax.set_title(textwrap.fill(title, width=max(20, int(width / _CHAR_INCHES))), fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
