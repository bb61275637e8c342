"""Hierarchical accumulation (Nguyen et al. 2020): (L, N, R), tree tensors, the fast
accumulation against the literal equations, attention masks, the encoder, bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import DEEP, left_branching, right_branching, trees
from treeattn.attention.hierarchical import (
    HierarchicalAccumulation,
    HierarchicalAttention,
    TreeCrossAttention,
    hierarchical_accumulation,
    tree_attention_allowed,
)
from treeattn.models.classifier import TreeClassifier
from treeattn.models.hierarchical import HierarchicalEncoder
from treeattn.models.inputs import EncoderInputs
from treeattn.testing.hierarchical_reference import (
    dense_accumulation,
    literal_accumulation,
    literal_cross_attention,
    literal_self_attention,
    path_accumulation,
)
from treeattn.trees import Tree
from treeattn.trees.lnr import from_lnr, to_lnr
from treeattn.trees.tensors import collate_trees, encode_tree, split_subwords

LABELS = st.sampled_from(["S", "NP", "VP", "PP"])
TAGS = st.sampled_from(["DT", "NN", "VB"])
WORDS = st.sampled_from(["a", "b", "c", "d"])
TREES = trees(LABELS, TAGS, WORDS)


def drop_preterminals(tree: Tree) -> Tree:
    kids = [
        c.children[0] if isinstance(c, Tree) and c.is_preterminal() else c for c in tree.children
    ]
    return Tree(tree.label, [drop_preterminals(k) if isinstance(k, Tree) else k for k in kids])


# ---------------------------------------------------------------------------- (L, N, R)
@settings(max_examples=150)
@given(TREES)
def test_lnr_rebuilds_the_tree_from_its_subtree_sets(tree):
    assert from_lnr(to_lnr(tree, collapse_preterminals=False)) == [tree]
    # Pre-terminals below the root are not nodes; a root that is one stays a node.
    assert from_lnr(to_lnr(tree)) == [drop_preterminals(tree)]


@settings(max_examples=60)
@given(st.lists(TREES, min_size=1, max_size=3))
def test_a_forest_rebuilds_tree_by_tree(forest):
    lnr = to_lnr(forest, collapse_preterminals=False)
    assert from_lnr(lnr) == forest
    assert list(lnr.leaves) == [w for t in forest for w in t.leaves()]


def test_lnr_of_a_small_tree():
    lnr = to_lnr(Tree.parse("(S (NP (DT the) (NN cat)) (VP (VBD sat)))"))
    assert lnr.leaves == ("the", "cat", "sat")
    assert lnr.labels == ("S", "NP", "VP")
    assert lnr.subtree(0) == (frozenset({0, 1, 2}), frozenset({0, 1, 2}))
    assert lnr.subtree(1) == (frozenset({1}), frozenset({0, 1}))
    # A one-word sentence keeps its pre-terminal as the root node.
    assert to_lnr(Tree.parse("(2 fine)")).labels == ("2",)


@settings(max_examples=100)
@given(TREES)
def test_tree_arrays_hold_every_node_leaf_pair(tree):
    lnr, arrays = encode_tree(tree)
    pairs = {(int(t), j) for j, row in enumerate(arrays.paths) for t in row if t >= 0}
    expected = {(i, j) for i in range(len(lnr.labels)) for j in lnr.subtree(i)[1]}
    assert pairs == expected
    assert len(pairs) == sum(tree.leaf_depths()) - sum(
        1 for t in tree.subtrees() if t.is_preterminal() and t is not tree
    )
    for j, row in enumerate(arrays.paths):
        for k, t in enumerate(row[row >= 0]):
            leaves = sorted(lnr.subtree(int(t))[1])
            assert arrays.horizontal[j, k] == leaves.index(j)  # |H_j^i| - 1
            assert (
                k
                == len(
                    [s for s in lnr.ancestors(lnr.leaf_parent[j]) if s in lnr.subtree(int(t))[0]]
                )
                - 1
            )


# ------------------------------------------------------------------- the accumulation
def random_inputs(arrays_list, k, generator, embeddings=True, heads=2):
    """A padded batch, leaf and node values (B, n | m, H, k), leaf weights (B, n, H) and
    head-wide embedding tables, float64, requiring gradients."""
    batch = collate_trees(arrays_list)
    B, n = batch.leaf_pad_mask.shape
    m = batch.node_pad_mask.shape[1]
    D = batch.paths.shape[2]

    def param(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64).requires_grad_()

    tables = (param(D + 2, k // 2), param(n + 2, k - k // 2)) if embeddings else (None, None)
    return batch, param(B, n, heads, k), param(B, m, heads, k), param(B, n, heads), tables


def literal_heads(leaves, nodes, w, lnr, tables, b, n, m):
    """Item b of a batch, each head through the literal equations -> (m, H, k)."""
    return torch.stack(
        [
            literal_accumulation(leaves[b, :n, h], nodes[b, :m, h], lnr, w[b, :n, h], *tables)
            for h in range(leaves.shape[2])
        ],
        dim=1,
    )


@settings(max_examples=40)
@given(st.lists(TREES, min_size=1, max_size=3), st.booleans(), st.integers(0, 2**31))
def test_fast_accumulation_equals_the_literal_equations(forest, embeddings, seed):
    """Forward and backward, float64, each tree and head of a padded batch against Eqs.
    5-10, the embedding tables shared by the heads."""
    encoded = [encode_tree(t) for t in forest]
    g = torch.Generator().manual_seed(seed)
    batch, leaves, nodes, w, tables = random_inputs([a for _, a in encoded], 6, g, embeddings)
    fast = hierarchical_accumulation(leaves, nodes, batch, w, *tables)
    probe = torch.randn(fast.shape, generator=g, dtype=torch.float64)
    inputs = [leaves, nodes, w, *(t for t in tables if t is not None)]
    fast_grads = torch.autograd.grad((fast * probe).sum(), inputs)
    literal_total = 0
    for b, (lnr, arrays) in enumerate(encoded):
        n, m = arrays.n_leaves, arrays.n_nodes
        literal = literal_heads(leaves, nodes, w, lnr, tables, b, n, m)
        torch.testing.assert_close(fast[b, :m], literal, atol=1e-6, rtol=0)
        assert torch.all(fast[b, m:] == 0)
        literal_total = literal_total + (literal * probe[b, :m]).sum()
    literal_grads = torch.autograd.grad(literal_total, inputs)
    for got, want in zip(fast_grads, literal_grads, strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=0)


@settings(max_examples=20)
@given(st.lists(TREES, min_size=1, max_size=3), st.integers(0, 2**31))
def test_dense_and_path_references_equal_the_literal_equations(forest, seed):
    encoded = [encode_tree(t) for t in forest]
    g = torch.Generator().manual_seed(seed)
    batch, leaves, nodes, w, tables = random_inputs([a for _, a in encoded], 4, g, heads=1)
    one_head = (leaves[:, :, 0], nodes[:, :, 0], batch, w[..., 0], *tables)
    dense, path = dense_accumulation(*one_head), path_accumulation(*one_head)
    for b, (lnr, arrays) in enumerate(encoded):
        n, m = arrays.n_leaves, arrays.n_nodes
        literal = literal_heads(leaves, nodes, w, lnr, tables, b, n, m)[:, 0]
        torch.testing.assert_close(dense[b, :m], literal, atol=1e-9, rtol=0)
        torch.testing.assert_close(path[b, :m], literal, atol=1e-9, rtol=0)


@pytest.mark.parametrize("shape", [right_branching, left_branching])
def test_fast_accumulation_on_deep_chains(shape):
    lnr, arrays = encode_tree(shape(40))
    g = torch.Generator().manual_seed(0)
    batch, leaves, nodes, w, tables = random_inputs([arrays], 4, g)
    fast = hierarchical_accumulation(leaves, nodes, batch, w, *tables)
    literal = literal_heads(leaves, nodes, w, lnr, tables, 0, 40, arrays.n_nodes)
    torch.testing.assert_close(fast[0], literal)


def test_accumulation_gradcheck():
    trees_ = [Tree.parse("(S (NP a b) (VP c (PP d e)))"), Tree.parse("(S (X f) g)")]
    g = torch.Generator().manual_seed(1)
    batch, leaves, nodes, w, tables = random_inputs([encode_tree(t)[1] for t in trees_], 4, g)
    assert torch.autograd.gradcheck(
        lambda *xs: hierarchical_accumulation(xs[0], xs[1], batch, xs[2], xs[3], xs[4]),
        (leaves, nodes, w, *tables),
    )


# ---------------------------------------------------------------------------- masks
@settings(max_examples=60)
@given(st.lists(TREES, min_size=1, max_size=3))
def test_subtree_mask_follows_the_subtree_sets(forest):
    encoded = [encode_tree(t) for t in forest]
    allowed = tree_attention_allowed(collate_trees([a for _, a in encoded]), subtree_mask=True)
    M = allowed.shape[1] - max(a.n_leaves for _, a in encoded)  # padded node count
    for b, (lnr, a) in enumerate(encoded):
        m, n = a.n_nodes, a.n_leaves
        for i in range(m):
            nodes, leaves = lnr.subtree(i)
            assert {t for t in range(M) if allowed[b, i, t]} == nodes
            assert {j for j in range(n) if allowed[b, i, M + j]} == leaves
        for j in range(n):  # a leaf attends to the real leaves only
            assert not allowed[b, M + j, :M].any()
            assert allowed[b, M + j, M : M + n].all() and not allowed[b, M + j, M + n :].any()


# -------------------------------------------------------------------------- encoder
def make_batch(trees_, vocab=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    arrays = [encode_tree(t)[1] for t in trees_]
    batch = collate_trees(arrays)
    tokens = torch.randint(3, vocab, batch.leaf_pad_mask.shape, generator=g)
    tokens = tokens.masked_fill(batch.leaf_pad_mask, 0)
    labels = torch.randint(1, 4, batch.node_pad_mask.shape, generator=g)
    return tokens, labels.masked_fill(batch.node_pad_mask, 0), batch


SAMPLE = [
    Tree.parse("(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT a) (NN mat)))))"),
    Tree.parse("(3 (2 good))"),
    Tree.parse("(S (A x y z) (B (C u) v))"),
]


@pytest.mark.parametrize(
    "options", [{}, {"subtree_mask": False}, {"hierarchical_embeddings": False}]
)
def test_padded_batch_equals_each_tree_alone(options):
    torch.manual_seed(0)
    encoder = HierarchicalEncoder(20, 4, d_model=16, n_heads=2, d_ff=32, **options).double().eval()
    tokens, labels, batch = make_batch(SAMPLE)
    leaves, nodes = encoder(tokens, labels, batch)
    for b, tree in enumerate(SAMPLE):
        _, arrays = encode_tree(tree)
        n, m = arrays.n_leaves, arrays.n_nodes
        alone = collate_trees([arrays])
        one_leaves, one_nodes = encoder(tokens[b : b + 1, :n], labels[b : b + 1, :m], alone)
        torch.testing.assert_close(leaves[b, :n], one_leaves[0])
        torch.testing.assert_close(nodes[b, :m], one_nodes[0])


def test_encoder_gradcheck():
    torch.manual_seed(0)
    encoder = HierarchicalEncoder(10, 3, d_model=8, n_heads=2, n_layers=1, d_ff=8, dropout=0.0)
    encoder = encoder.double()
    tokens, labels, batch = make_batch(SAMPLE[:2], vocab=10)
    layer = encoder.layers[0]
    x_leaves = torch.randn(*tokens.shape, 8, dtype=torch.float64, requires_grad=True)
    x_nodes = torch.randn(*labels.shape, 8, dtype=torch.float64, requires_grad=True)

    def run(a, b):
        out_leaves, out_nodes = layer(a, b, batch)
        real_leaves = ~batch.leaf_pad_mask[..., None]
        real_nodes = ~batch.node_pad_mask[..., None]
        return out_leaves * real_leaves, out_nodes * real_nodes

    assert torch.autograd.gradcheck(run, (x_leaves, x_nodes))


@pytest.mark.parametrize("subtree_mask", [True, False])
def test_attention_weights_match_the_sdpa_path_and_respect_the_mask(subtree_mask):
    torch.manual_seed(0)
    attention = HierarchicalAttention(8, 2, 0.0, 8, 8, subtree_mask=subtree_mask).double()
    _, _, batch = make_batch(SAMPLE)
    B, n = batch.leaf_pad_mask.shape
    m = batch.node_pad_mask.shape[1]
    leaves = torch.randn(B, n, 8, dtype=torch.float64)
    nodes = torch.randn(B, m, 8, dtype=torch.float64)
    fast = attention(leaves, nodes, batch)
    *slow, weights = attention(leaves, nodes, batch, return_weights=True)
    real_leaves, real_nodes = ~batch.leaf_pad_mask, ~batch.node_pad_mask  # padding differs
    torch.testing.assert_close(fast[0][real_leaves], slow[0][real_leaves])
    torch.testing.assert_close(fast[1][real_nodes], slow[1][real_nodes])
    allowed = tree_attention_allowed(batch, subtree_mask)
    assert torch.all(weights.masked_select(~allowed[:, None]) == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones_like(weights.sum(-1)))


OPTIONS = [
    {},
    {"leaf_weights": "single"},
    {"hierarchical_embeddings": False},
    {"subtree_mask": False},
]


@pytest.mark.parametrize("options", OPTIONS)
def test_self_attention_equals_the_literal_per_head_equations(options):
    """Eqs. 12-20 head by head, float64, each tree of a padded batch alone against the
    literal loops of src/treeattn/testing/hierarchical_reference.py."""
    torch.manual_seed(0)
    subtree_mask = options.get("subtree_mask", True)
    accumulation = {k: v for k, v in options.items() if k != "subtree_mask"}
    attention = HierarchicalAttention(
        12, 3, 0.0, 8, 8, subtree_mask=subtree_mask, **accumulation
    ).double()
    _, _, batch = make_batch(SAMPLE)
    B, n = batch.leaf_pad_mask.shape
    m = batch.node_pad_mask.shape[1]
    leaves = torch.randn(B, n, 12, dtype=torch.float64)
    nodes = torch.randn(B, m, 12, dtype=torch.float64)
    out_leaves, out_nodes = attention(leaves, nodes, batch)
    for b, tree in enumerate(SAMPLE):
        lnr, arrays = encode_tree(tree)
        nb, mb = arrays.n_leaves, arrays.n_nodes
        want_leaves, want_nodes = literal_self_attention(
            attention, leaves[b, :nb], nodes[b, :mb], lnr, subtree_mask
        )
        torch.testing.assert_close(out_leaves[b, :nb], want_leaves, atol=1e-10, rtol=0)
        torch.testing.assert_close(out_nodes[b, :mb], want_nodes, atol=1e-10, rtol=0)


@pytest.mark.parametrize("options", OPTIONS[:3])
def test_cross_attention_equals_the_literal_per_head_equations(options):
    """Eqs. 21-24 head by head, float64, each source tree of a padded batch alone."""
    torch.manual_seed(0)
    cross = TreeCrossAttention(12, 3, 0.0, max_depth=8, max_width=8, **options).double()
    _, _, batch = make_batch(SAMPLE)
    B, n = batch.leaf_pad_mask.shape
    m = batch.node_pad_mask.shape[1]
    leaves = torch.randn(B, n, 12, dtype=torch.float64)
    nodes = torch.randn(B, m, 12, dtype=torch.float64)
    queries = torch.randn(B, 5, 12, dtype=torch.float64)
    out = cross(queries, leaves, nodes, batch)
    for b, tree in enumerate(SAMPLE):
        lnr, arrays = encode_tree(tree)
        nb, mb = arrays.n_leaves, arrays.n_nodes
        want = literal_cross_attention(cross, queries[b], leaves[b, :nb], nodes[b, :mb], lnr)
        torch.testing.assert_close(out[b], want, atol=1e-10, rtol=0)


def test_tree_attention_gradcheck():
    trees_ = [Tree.parse("(S (NP a b) (VP c (PP d e)))"), Tree.parse("(S (X f) g)")]
    batch = collate_trees([encode_tree(t)[1] for t in trees_])
    torch.manual_seed(2)
    attention = HierarchicalAttention(8, 2, 0.0, 8, 8).double()
    cross = TreeCrossAttention(8, 2, 0.0, 8, 8).double()
    B, n = batch.leaf_pad_mask.shape
    m = batch.node_pad_mask.shape[1]
    leaves = torch.randn(B, n, 8, dtype=torch.float64, requires_grad=True)
    nodes = torch.randn(B, m, 8, dtype=torch.float64, requires_grad=True)
    queries = torch.randn(B, 3, 8, dtype=torch.float64, requires_grad=True)
    real_leaves = ~batch.leaf_pad_mask[..., None]
    real_nodes = ~batch.node_pad_mask[..., None]

    def both(x_leaves, x_nodes, x_queries):
        new_leaves, new_nodes = attention(x_leaves, x_nodes, batch)
        crossed = cross(x_queries, x_leaves, x_nodes, batch)
        return new_leaves * real_leaves, new_nodes * real_nodes, crossed

    assert torch.autograd.gradcheck(both, (leaves, nodes, queries))


def test_every_head_sees_both_hierarchical_embeddings():
    # With zero values and w = 1, a node's accumulation is the mean of its embeddings: each
    # head must get the vertical part and the horizontal part (§4.2), not one of them.
    accumulate = HierarchicalAccumulation(8, 2, max_depth=8, max_width=8)
    with torch.no_grad():
        accumulate.leaf_weight.weight.zero_()
        accumulate.leaf_weight.bias.fill_(1.0)
    batch = collate_trees([encode_tree(Tree.parse("(S (NP a b) c)"))[1]])
    leaves = torch.randn(1, 3, 8)
    out = accumulate(leaves, torch.zeros(1, 3, 2, 4), torch.zeros(1, 2, 2, 4), batch)
    vertical, horizontal = out[..., :2], out[..., 2:]
    torch.testing.assert_close(vertical[:, :, 0], vertical[:, :, 1])
    torch.testing.assert_close(horizontal[:, :, 0], horizontal[:, :, 1])
    assert vertical.abs().min() > 0 and horizontal.abs().min() > 0


def test_weights_saved_before_the_per_head_fix_are_refused():
    attention = HierarchicalAttention(8, 2, 0.0, 8, 8)
    state = attention.state_dict()
    state.pop("accumulate.leaf_weight.weight")
    state.pop("accumulate.leaf_weight.bias")
    state["accumulate.leaf_weight"] = torch.zeros(8)  # the old u_s, d wide
    with pytest.raises(ValueError, match="made per head"):
        attention.load_state_dict(state)
    with pytest.raises(ValueError, match="leaf_weights='both'"):
        HierarchicalAttention(8, 2, 0.0, leaf_weights="both")


def test_classifier_root_and_every_node_logits():
    torch.manual_seed(0)
    model = TreeClassifier(HierarchicalEncoder(20, 4, d_model=16, n_heads=2), 5).eval()
    tokens, labels, batch = make_batch(SAMPLE)
    inputs = EncoderInputs(tokens, batch.leaf_pad_mask, trees=batch, node_labels=labels)
    root = model(inputs)
    node_logits, leaf_logits = model(inputs, every_node=True)
    assert root.shape == (3, 5) and leaf_logits.shape[:2] == tokens.shape
    torch.testing.assert_close(root, node_logits[:, 0])


# ------------------------------------------------------------- subwords, several trees
def test_subword_pieces_form_a_subtree_under_their_word():
    tree = Tree.parse("(S (NP (DT the) (NN walking)) (VB talks))")
    split = split_subwords(tree, lambda w: [w[:3], w[3:]] if len(w) > 4 else [w])
    assert split == Tree.parse("(S (NP (DT the) (NN wal king)) (VB tal ks))")
    lnr, arrays = encode_tree(split)
    assert lnr.labels == ("S", "NP", "NN", "VB")
    bare = split_subwords(
        Tree.parse("(S walking on)"), lambda w: [w[:3], w[3:]] if len(w) > 4 else [w]
    )
    assert bare == Tree.parse("(S (WORD wal king) on)")
    deep = split_subwords(right_branching(DEEP), lambda w: [w[:1], w[1:]])  # no recursion
    assert deep.leaves()[:4] == ["w", "0", "w", "1"]


def test_several_sentences_in_one_input_are_separate_trees():
    first, second = Tree.parse("(S (A a b) c)"), Tree.parse("(S d (B e f))")
    lnr, arrays = encode_tree([first, second], tokens="a b c d e f".split())
    assert list(arrays.node_depth) == [0, 1, 0, 1]
    allowed = tree_attention_allowed(collate_trees([arrays]), subtree_mask=True)[0]
    assert not allowed[0, 2] and not allowed[0, 4 + 3]  # sentence 1's root sees none of 2


# --------------------------------------------------------------------------- bad input
def test_leaves_that_do_not_match_the_tokens_are_an_error():
    tree = Tree.parse("(S (NP the cat) sat)")
    with pytest.raises(ValueError, match=r"sst.txt:3: .*leaf 2 is 'cat' but token 2 is 'dog'"):
        encode_tree(tree, tokens=["the", "dog", "sat"], where="sst.txt:3")
    with pytest.raises(ValueError, match="tree has 3 leaves but 2 tokens were given"):
        encode_tree(tree, tokens=["the", "cat"])


def test_too_deep_or_too_wide_trees_are_an_error():
    accumulate = HierarchicalAccumulation(8, 2, max_depth=5, max_width=6)
    _, arrays = encode_tree(right_branching(7))
    batch = collate_trees([arrays])
    leaves, nodes = torch.randn(1, 7, 8), torch.randn(1, 6, 2, 4)
    with pytest.raises(ValueError, match="max_depth=5"):
        accumulate(leaves, leaves.view(1, 7, 2, 4), nodes, batch)
    wide = collate_trees([encode_tree(Tree("S", [f"w{i}" for i in range(7)]))[1]])
    with pytest.raises(ValueError, match="7 leaves, more than max_width=6"):
        accumulate(leaves, leaves.view(1, 7, 2, 4), torch.randn(1, 1, 2, 4), wide)


def test_an_empty_tree_is_an_error():
    with pytest.raises(ValueError, match="no children"):
        Tree("S", [])
    with pytest.raises(ValueError, match="empty forest"):
        to_lnr([])
