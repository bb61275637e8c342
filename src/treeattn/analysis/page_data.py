"""The pieces every page of ``treeattn view`` is made of, as plain data: attention as bytes,
panels as integers, a tree as the page draws it, its dependency arcs with their relations
and what they are, and the page's own fields. Nothing here reads a model: the model's page
(``analysis.view``) and the parser's (``analysis.parser_view``) fill these in, and
``treeattn.viz.page`` draws them.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import torch

from treeattn.parsing.decoding import TREE_SCHEME
from treeattn.trees import COLLINS_HEAD_RULES, Tree, strip_label, to_dependency
from treeattn.trees.dependency import DependencyTree
from treeattn.viz.page import count_of

SCALE = 1000  # the panels' probabilities are stored as integers in thousandths
LEVELS = 255  # attention is stored as one byte a probability (0..255), base64 per head
# The one label of a tree whose labels are hidden (``tasks.sentences.unlabeled_tree``):
# SST's trees, and those made like them, as the model reads them.
HIDDEN_LABEL = "X"

# Where the drawn tree came from, as the page names it.
GOLD, GIVEN, PARSED, INDUCED = "gold", "given", "parsed", "induced"
RIGHT_BRANCHING, FILES = "right-branching", "files"
TREE_ORIGINS = {
    GOLD: "gold (the data's own)",
    GIVEN: "given in the input",
    PARSED: "the parser's",
    INDUCED: "induced from the model's links (as `treeattn induce` reads them)",
    RIGHT_BRANCHING: "right-branching",
    FILES: "from the run's tree files",
}


def quantize(values: torch.Tensor) -> list[int]:
    """Probabilities, flattened, as integers in thousandths (a panel's values)."""
    return (values.detach().float().clamp(0, 1) * SCALE).round().to(torch.int64).flatten().tolist()


def encode_attention(weights: torch.Tensor) -> str:
    """One head's attention (q, k), row by row, as base64 of one byte a probability
    (``LEVELS`` steps): a third of the size of JSON numbers, and read as fast."""
    levels = (weights.detach().float().clamp(0, 1) * LEVELS).round().to(torch.uint8)
    return base64.b64encode(levels.cpu().numpy().tobytes()).decode("ascii")


def decode_attention(text: str, size: int) -> torch.Tensor:
    """``encode_attention``'s inverse: (size, size) probabilities to 1 / (2 LEVELS)."""
    levels = torch.frombuffer(bytearray(base64.b64decode(text)), dtype=torch.uint8)
    return levels.view(size, size).float() / LEVELS


def tree_json(
    tree: Tree, node_index: dict[tuple[int, int, int], int] | None = None, first: int = 0
) -> dict:
    """A tree as the page draws it: ``{"label", "node", "children"}``, a leaf as its word's
    index (the tree's first word is word ``first``). ``node`` is the model's index of the
    phrase node (hierarchical models: nodes by span and their order among nodes of one
    span, top down), else None."""
    seen: dict[tuple[int, int], int] = {}

    def walk(node: Tree | str, start: int) -> tuple[Any, int]:
        if isinstance(node, str):
            return start, start + 1
        children, end = [], start
        for child in node.children:
            drawn, end = walk(child, end)
            children.append(drawn)
        k = seen.get((start, end), 0)
        seen[(start, end)] = k + 1
        index = None if node_index is None else node_index.get((start, end, k))
        return {"label": node.label, "node": index, "children": children}, end

    return walk(tree, first)[0]


def panel(
    title: str,
    rows: Sequence[str],
    cols: Sequence[str],
    values,
    note: str = "",
    relative: bool = False,
    layers: Sequence[int] | None = None,
) -> dict:
    """A grid the page draws beside the attention: ``values`` one (rows x cols) tensor, or a
    list of them, one per layer (then the layer slider picks: ``layers`` are the page's
    layers they belong to, by default the first ones); colours from 0 to 1, or with
    ``relative`` to the grid's largest value."""
    per_layer = isinstance(values, list)
    grids = values if per_layer else [values]
    return {
        "title": title,
        "note": note,
        "rows": list(rows),
        "cols": list(cols),
        "per_layer": per_layer,
        "layers": list(range(len(grids)) if layers is None else layers),
        "relative": relative,
        "values": [quantize(v) for v in grids],
    }


# -- dependency arcs -----------------------------------------------------------------


def labelled(tree: Tree) -> bool:
    """Whether head rules can read the tree: some phrase of it has a label they know (not
    a tree whose labels are hidden, as SST's and the trees made like them)."""
    return any(strip_label(t.label) in COLLINS_HEAD_RULES for t in tree.subtrees())


def labels_hidden(tree: Tree) -> bool:
    """Whether every label of the tree is hidden (``HIDDEN_LABEL``), as in SST's trees as
    the model reads them."""
    return all(t.label == HIDDEN_LABEL for t in tree.subtrees())


def head_rule_arcs(tree: Tree) -> DependencyTree | None:
    """The tree's dependencies by head rules, or None where the rules do not apply: a tree
    without labels they know, or one they cannot convert."""
    if not labelled(tree):
        return None
    try:
        return to_dependency(tree)
    except ValueError:
        return None


def arcs_fields(arcs: DependencyTree | None, first: int = 0, note: str = "") -> dict[str, Any]:
    """One sentence's arcs as the page reads them: ``arcs``, word i's head (0: the root;
    None: a token outside the tree, the ``first`` ones); ``relations``, each arc's; and
    ``arcs_note``, what the page says under the tree about them."""
    if arcs is None:
        return {"arcs": None, "relations": None, "arcs_note": note}
    return {
        "arcs": [None] * first + [h and h + first for h in arcs.heads],
        "relations": [None] * first + list(arcs.relations),
        "arcs_note": note,
    }


def words_that_differ(drawn: DependencyTree, tree: Tree) -> int | None:
    """How many words have another head in ``drawn`` than in the tree's head-rule arcs;
    None where the rules do not apply to the tree."""
    own = head_rule_arcs(tree)
    if own is None or len(own.heads) != len(drawn.heads):
        return None
    return sum(a != b for a, b in zip(drawn.heads, own.heads, strict=True))


def head_rule_scheme() -> str:
    """The page's line naming the arcs drawn from the tree itself."""
    return f"arcs: the {TREE_SCHEME}, the tree drawn above them"


def arcless_notes(trees: Sequence[Tree | None], origins: Sequence[str]) -> list[str]:
    """What the page says of the trees it draws without arcs: head rules need Penn
    Treebank labels; the notice on hidden labels only where a tree's labels are hidden
    (SST's), and one on induced trees, which have none."""
    unlabelled = [
        origin for tree, origin in zip(trees, origins, strict=True) if tree and not labelled(tree)
    ]
    if not unlabelled:
        return []
    note = (
        f"no dependency arcs for {count_of(len(unlabelled), 'tree')} without Penn Treebank "
        "labels, which head rules need"
    )
    hidden = [
        origin
        for tree, origin in zip(trees, origins, strict=True)
        if tree and origin != INDUCED and labels_hidden(tree)
    ]
    if INDUCED in unlabelled:
        note += " (a tree read off the model's links has no labels)"
    if hidden:
        note += (
            " (each tree is drawn as the model reads it: SST's trees, and those made like "
            "them, are binarized with their labels hidden as X); `treeattn parse` gives the "
            "parser's labelled trees"
        )
    return [note]


def trees_line(origins: Sequence[str]) -> str:
    """The page's line naming where its trees come from, with counts where they differ."""
    kinds = list(dict.fromkeys(origins))
    if len(kinds) == 1:
        return f"trees: {TREE_ORIGINS[kinds[0]]}"
    counted = [f"{TREE_ORIGINS[k]} ({origins.count(k)})" for k in kinds]
    return "trees: " + "; ".join(counted)


def page_data(about: dict, mechanism: str, task: str, sentences: list[dict]) -> dict:
    """The page's data: ``about`` (title, source, heads, notes, and the lines naming the
    trees and arcs drawn), the model's kind and the sentences; ``layers`` is 0 for a model
    with no word-to-word attention shown."""
    layers = len(sentences[0]["attention"])
    return {
        **about,
        "mechanism": mechanism,
        "task": task,
        "layers": layers,
        "scale": SCALE,
        "levels": LEVELS,
        "sentences": sentences,
    }
