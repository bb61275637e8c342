import math

import numpy as np
import pytest
import torch

from treeattn.trees import Tree
from treeattn.viz.attention import attention_share, plot_attention
from treeattn.viz.trees import draw_tree, tree_layout

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def deep_tree(levels: int) -> Tree:
    """A right-branching spine ``levels`` phrases deep, one tagged word per level."""
    tree = Tree("NN", ["end"])
    for i in range(levels):
        tree = Tree("X", [Tree("DT", [f"w{i}"]), tree])
    return tree


SENTENCE = Tree.parse(
    "(S (NP (DT the) (JJ old) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
)


def test_layout_leaves_in_order_and_parents_centred():
    layout = tree_layout(SENTENCE)
    words = [node for node in layout.nodes if node.is_word]
    assert [w.label for w in words] == SENTENCE.leaves()
    assert [w.x for w in words] == list(range(len(words)))  # distinct, increasing
    assert all(w.y == 0 for w in words)
    children: dict[int, list[int]] = {}
    for parent, child in layout.edges:
        children.setdefault(parent, []).append(child)
    assert len(children) == len(list(SENTENCE.subtrees()))
    for parent, kids in children.items():
        xs = [layout.nodes[k].x for k in kids]
        assert xs == sorted(xs)
        assert layout.nodes[parent].x == (xs[0] + xs[-1]) / 2
        assert min(xs) <= layout.nodes[parent].x <= max(xs)
        assert layout.nodes[parent].y > max(layout.nodes[k].y for k in kids)
    root = layout.nodes[-1]
    assert (root.label, root.y) == ("S", layout.top)
    assert layout.top == max(node.y for node in layout.nodes)


def test_layout_needs_no_recursion():
    layout = tree_layout(deep_tree(5000))
    assert layout.n_words == 5001
    assert layout.top == 5001


def test_draw_tree_png_and_svg(tmp_path):
    png = draw_tree(SENTENCE, tmp_path / "tree.png", title="a sentence")
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert png.stat().st_size > 1024
    svg = draw_tree(SENTENCE, tmp_path / "sub" / "tree.svg")
    text = svg.read_text(encoding="utf-8")
    assert "<svg" in text and svg.stat().st_size > 1024


def test_draw_deep_tree(tmp_path):
    png = draw_tree(deep_tree(80), tmp_path / "deep.png")
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert png.stat().st_size > 1024


def test_plot_attention_png_and_svg(tmp_path):
    weights = torch.softmax(torch.randn(5, 7), dim=-1)
    rows = [f"q{i}" for i in range(5)]
    columns = [f"k{i}" for i in range(7)]
    png = plot_attention(weights, rows, columns, tmp_path / "attn.png", title="layer 1")
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert png.stat().st_size > 1024
    svg = plot_attention(weights.numpy(), rows, columns, tmp_path / "attn.svg")
    assert "<svg" in svg.read_text(encoding="utf-8") and svg.stat().st_size > 1024
    with pytest.raises(ValueError):
        plot_attention(weights, rows[:-1], columns, tmp_path / "bad.png")


# One tree of 1 node and 2 leaves, positions [node, leaf, leaf, padding]; 2 heads.
NODE_MASK = torch.tensor([[True, False, False, False]])
PAD_MASK = torch.tensor([[False, False, False, True]])
WEIGHTS = torch.tensor(
    [
        [
            [  # head 0
                [0.50, 0.25, 0.25, 0.0],  # node: 50 to nodes
                [0.20, 0.80, 0.00, 0.0],  # leaf: 20 to nodes
                [0.60, 0.20, 0.20, 0.0],  # leaf: 60 to nodes
                [1.00, 0.00, 0.00, 0.0],  # padding: would be 100 to nodes if counted
            ],
            [  # head 1
                [0.10, 0.45, 0.45, 0.0],  # node: 10 to nodes
                [0.00, 0.50, 0.50, 0.0],  # leaf: 0 to nodes
                [0.40, 0.30, 0.30, 0.0],  # leaf: 40 to nodes
                [1.00, 0.00, 0.00, 0.0],
            ],
        ]
    ]
)


def test_attention_share_hand_computed():
    share = attention_share(WEIGHTS, NODE_MASK, PAD_MASK)
    assert share["leaf_to_node"] == pytest.approx((20 + 60 + 0 + 40) / 4)
    assert share["leaf_to_leaf"] == pytest.approx(100 - 30)
    assert share["node_to_node"] == pytest.approx((50 + 10) / 2)
    assert share["node_to_leaf"] == pytest.approx(70)
    assert share["leaf_to_node"] + share["leaf_to_leaf"] == pytest.approx(100)
    assert share["node_to_node"] + share["node_to_leaf"] == pytest.approx(100)
    # Without the padding mask the padded row is a leaf query with 100% to nodes.
    unpadded = attention_share(WEIGHTS, NODE_MASK)
    assert unpadded["leaf_to_node"] == pytest.approx((20 + 60 + 100 + 0 + 40 + 100) / 6)


def test_attention_share_layers_and_padded_keys():
    # Two layers count like four heads of one layer.
    layers = [WEIGHTS, WEIGHTS.flip(1)]
    assert attention_share(layers, NODE_MASK, PAD_MASK) == pytest.approx(
        attention_share(torch.cat(layers, dim=1), NODE_MASK, PAD_MASK)
    )
    # Mass on a padded key is not counted: the rest is renormalised.
    leaked = WEIGHTS.clone()
    leaked[0, 0, 1] = torch.tensor([0.1, 0.4, 0.0, 0.5])  # 20% of the real mass to nodes
    share = attention_share(leaked, NODE_MASK, PAD_MASK)
    assert share["leaf_to_node"] == pytest.approx((20 + 60 + 0 + 40) / 4)


def test_attention_share_batch_and_missing_type():
    # Batch of two: the second sequence has no node at all, and its own padding.
    weights = torch.full((2, 1, 3, 3), 1 / 3)
    node_mask = torch.tensor([[True, False, False], [False, False, False]])
    pad_mask = torch.tensor([[False, False, False], [False, False, True]])
    weights[1, 0, :, :2] = 0.5
    weights[1, 0, :, 2] = 0.0
    share = attention_share(weights, node_mask, pad_mask)
    # Leaf queries: two in sequence 0 (1/3 to the node), two in sequence 1 (no nodes).
    assert share["leaf_to_node"] == pytest.approx((100 / 3 + 100 / 3 + 0 + 0) / 4)
    assert share["node_to_node"] == pytest.approx(100 / 3)
    only_leaves = attention_share(weights[1:], node_mask[1:], pad_mask[1:])
    assert math.isnan(only_leaves["node_to_node"]) and math.isnan(only_leaves["node_to_leaf"])
    assert only_leaves["leaf_to_leaf"] == pytest.approx(100)


def test_attention_share_rejects_bad_shapes():
    with pytest.raises(ValueError):
        attention_share(WEIGHTS[0], NODE_MASK, PAD_MASK)
    with pytest.raises(ValueError):
        attention_share(WEIGHTS, NODE_MASK[:, :3], PAD_MASK)
    assert np.isfinite(list(attention_share(WEIGHTS, NODE_MASK, PAD_MASK).values())).all()


def test_tree_pictures_are_wide_enough_for_their_words(tmp_path):
    import matplotlib.image

    from treeattn.trees import Tree
    from treeattn.viz.trees import draw_tree

    short = Tree.parse("(S (NN a) (NN b) (NN c) (NN d) (NN e) (NN f) (NN g) (NN h))")
    long = Tree.parse("(S " + " ".join(f"(NN {w * 14})" for w in "abcdefgh") + ")")
    widths = [
        matplotlib.image.imread(draw_tree(t, tmp_path / f"{i}.png", title="t")).shape[1]
        for i, t in enumerate((short, long))
    ]
    # 14-letter words need about 1.3 inches each, 8 of them: no overlap at 100 dpi.
    assert widths[1] >= 8 * (0.085 * 14) * 100 > widths[0]
