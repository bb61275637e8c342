import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.func import functional_call

from tests.strategies import binary_trees, left_branching, right_branching, trees
from treeattn.models.classifier import TreeClassifier
from treeattn.models.inputs import EncoderInputs
from treeattn.models.tree_lstm import TreeLSTMEncoder
from treeattn.trees import Tree
from treeattn.trees.tensors import collate_trees, encode_tree
from treeattn.trees.transforms import binarize

WORDS = [f"w{i}" for i in range(12)]
VOCAB = {word: i + 1 for i, word in enumerate(WORDS)}  # 0 is padding
LABELS = st.sampled_from(["S", "NP", "VP"])
TAGS = st.sampled_from(["NN", "DT"])
SETTINGS = settings(max_examples=40)

FIXED = [
    "(S (NN w0))",  # one-word sentence: a root over one leaf
    "(NN w1)",  # a lone pre-terminal stays the root node
    "(S (NP (DT w0) (NN w1)))",  # unary phrase over a phrase
    "(S (NP (NN w2)) (VP (NN w3) (NP (DT w4) (NN w5))))",  # unary over a leaf, mixed heights
    "(S w0 (VP w1 (NP w2)))",  # words straight under phrases
]


def make_model(d=6):
    torch.manual_seed(0)
    return TreeLSTMEncoder(len(VOCAB) + 1, 4, d_model=d).double().eval()


def batch(tree_list):
    lnrs, arrays = zip(*(encode_tree(t) for t in tree_list), strict=True)
    n = max(len(lnr.leaves) for lnr in lnrs)
    tokens = torch.zeros(len(lnrs), n, dtype=torch.long)
    for b, lnr in enumerate(lnrs):
        tokens[b, : len(lnr.leaves)] = torch.tensor([VOCAB[w] for w in lnr.leaves])
    trees_ = collate_trees(arrays)
    node_labels = torch.ones_like(trees_.node_height)
    return tokens, node_labels, trees_


def reference(model, tree):
    """Tai et al. (2015) §3.2 written out by recursion: (leaf h list, node h list in
    pre-order), pre-terminals read as their word (as ``to_lnr`` does)."""
    d = model.d_model
    leaf_w, leaf_b = model.leaf_gates.weight, model.leaf_gates.bias
    node_w, node_b = model.node_gates.weight, model.node_gates.bias
    leaf_h, node_h = [], []

    def leaf(word):
        x = model.embed.weight[VOCAB[word]]
        i, o, u = (leaf_w @ x + leaf_b).split(d)
        c = torch.sigmoid(i) * torch.tanh(u)
        h = torch.sigmoid(o) * torch.tanh(c)
        leaf_h.append(h)
        return h, c

    def node(t):
        index = len(node_h)
        node_h.append(None)  # pre-order: numbered before its children
        kids = [
            leaf(k if isinstance(k, str) else k.children[0])
            if isinstance(k, str) or k.is_preterminal()
            else node(k)
            for k in t.children
        ]
        assert len(kids) <= 2
        zero = torch.zeros(d, dtype=torch.float64)
        (h_l, c_l), (h_r, c_r) = kids[0], kids[1] if len(kids) == 2 else (zero, zero)
        i, f_l, f_r, o, u = (node_w @ torch.cat([h_l, h_r]) + node_b).split(d)
        c = torch.sigmoid(i) * torch.tanh(u) + torch.sigmoid(f_l) * c_l + torch.sigmoid(f_r) * c_r
        h = torch.sigmoid(o) * torch.tanh(c)
        node_h[index] = h
        return h, c

    node(tree)
    return torch.stack(leaf_h), torch.stack(node_h)


def check_against_reference(model, tree):
    with torch.no_grad():
        leaves, nodes = model(*batch([tree]))
        want_leaves, want_nodes = reference(model, tree)
    torch.testing.assert_close(leaves[0], want_leaves, atol=1e-6, rtol=0)
    torch.testing.assert_close(nodes[0], want_nodes, atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    "tree",
    [Tree.parse(text) for text in FIXED]
    + [right_branching(7), left_branching(7), right_branching(2)],
)
def test_matches_recursive_reference_on_fixed_trees(tree):
    check_against_reference(make_model(), tree)


@SETTINGS
@given(binary_trees(LABELS, TAGS, st.sampled_from(WORDS)))
def test_matches_recursive_reference_on_binary_trees(tree):
    check_against_reference(make_model(), tree)


@SETTINGS
@given(trees(LABELS, TAGS, st.sampled_from(WORDS)), st.sampled_from(["right", "left"]))
def test_matches_recursive_reference_on_binarised_trees(tree, direction):
    check_against_reference(make_model(), binarize(tree, direction))


@SETTINGS
@given(st.lists(binary_trees(LABELS, TAGS, st.sampled_from(WORDS)), min_size=2, max_size=4))
def test_padded_batch_equals_each_tree_alone(tree_list):
    model = make_model()
    tokens, labels, trees_ = batch(tree_list)
    with torch.no_grad():
        leaves, nodes = model(tokens, labels, trees_)
        for b, tree in enumerate(tree_list):
            alone_leaves, alone_nodes = model(*batch([tree]))
            n, m = alone_leaves.shape[1], alone_nodes.shape[1]
            torch.testing.assert_close(leaves[b, :n], alone_leaves[0], atol=1e-12, rtol=0)
            torch.testing.assert_close(nodes[b, :m], alone_nodes[0], atol=1e-12, rtol=0)
            assert not leaves[b, n:].any() and not nodes[b, m:].any()  # padding is zero


def test_gradcheck_through_embeddings_and_gates():
    model = make_model(d=3)
    inputs = batch(
        [Tree.parse("(S (NP (DT w0) (NN w1)) (VP (NN w2) (NP w3)))"), Tree.parse("(S (NN w4))")]
    )
    names = ["embed.weight", "leaf_gates.weight", "node_gates.weight", "node_gates.bias"]
    params = tuple(dict(model.named_parameters())[name].detach().clone() for name in names)

    def states(*values):
        leaves, nodes = functional_call(model, dict(zip(names, values, strict=True)), inputs)
        return leaves, nodes

    assert torch.autograd.gradcheck(states, tuple(p.requires_grad_() for p in params))


def test_non_binary_tree_is_refused():
    model = make_model()
    with pytest.raises(ValueError, match="binari[sz]e"):
        model(*batch([Tree.parse("(S (NN w0) (NN w1) (NN w2))")]))


def test_gradients_reach_every_parameter_through_the_classifier():
    torch.manual_seed(0)
    classifier = TreeClassifier(TreeLSTMEncoder(len(VOCAB) + 1, 4, d_model=8), 3)
    tree_list = [
        Tree.parse("(S (NP (DT w0) (NN w1)) (VP (NN w2) (NP w3)))"),
        binarize(Tree.parse("(S (NN w5) (NN w6) (NN w7) (NN w8))")),
        Tree.parse("(S (NN w4))"),
    ]
    tokens, labels, trees_ = batch(tree_list)
    logits = classifier(EncoderInputs(tokens, tokens == 0, trees=trees_, node_labels=labels))
    assert logits.shape == (3, 3)
    torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2])).backward()
    for name, p in classifier.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, name
