"""Tree regularization (TreeReg, Nandi et al. 2025): the vectorised loss against the literal
reference of tests/tree_regularization_reference.py (words and pieces, unary chains, n-ary
nodes, one- and two-word sentences), its gradient by gradcheck, padding invariance, its
options, and its place in the registry and ``treeattn mechanisms``."""

from __future__ import annotations

import doctest

import pytest
import torch

from tests.tree_regularization_reference import gold_splits, sentence_loss
from treeattn import plugins
from treeattn.attention import tree_regularization
from treeattn.attention.registry import loss_names
from treeattn.attention.tree_loss import piece_positions, token_positions
from treeattn.attention.tree_regularization import (
    NAME,
    TreeRegularization,
    collate_targets,
    orthogonal_norms,
    split_targets,
    tree_regularization_loss,
)
from treeattn.cli import main
from treeattn.models.registry import encoder_names
from treeattn.trees import Tree

TREES = {
    "n-ary root": (
        "(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
    ),
    "unary chains": "(ROOT (S (VP (VB go) (NP (NP (PRP it)) (ADVP (RB now) (RB here) (RB so))))))",
    "flat": "(X a b c d e f)",
    "left-branching": "(A (B (C (D a b) c) d) e)",
    "one word": "(S (NN hi))",
    "two words": "(S (NN hi) (NN there))",
    "three words": "(S (A a) (B b) (C c))",
}


def trees() -> list[Tree]:
    return [Tree.parse(text) for text in TREES.values()]


def targets_of(batch: list[Tree]):
    return collate_targets([TreeRegularization.from_options().targets(t, "t") for t in batch])


def test_the_scored_spans_collapse_unary_chains_and_binarize_to_the_right():
    assert doctest.testmod(tree_regularization).failed == 0
    found = {name: split_targets(Tree.parse(text)) for name, text in TREES.items()}
    assert found["n-ary root"] == [(0, 7, 2), (2, 7, 6), (2, 6, 3), (3, 6, 4)]
    # (ROOT (S (VP ...))) is one node; (NP (NP it) (ADVP ...)) splits after "it", and the
    # ADVP of three words is (now (here so)).
    assert found["unary chains"] == [(0, 5, 1), (1, 5, 2), (2, 5, 3)]
    assert found["flat"] == [(0, 6, 1), (1, 6, 2), (2, 6, 3), (3, 6, 4)]
    assert found["left-branching"] == [(0, 5, 4), (0, 4, 3), (0, 3, 2)]
    assert found["one word"] == found["two words"] == []
    assert found["three words"] == [(0, 3, 1)]
    # The reference's own reading of the trees has the same gold splits (a word a piece).
    for text in TREES.values():
        tree = Tree.parse(text)
        gold = gold_splits(tree, [1] * len(tree.leaves()))
        wide = {(s, e + 1, k + 1) for (s, e), k in gold.items() if e + 1 - s >= 3}
        assert set(split_targets(tree)) == wide


def test_the_loss_of_words_matches_the_reference():
    batch = trees()
    n = max(len(t.leaves()) for t in batch)
    generator = torch.Generator().manual_seed(0)
    states = torch.randn(len(batch), n, 5, generator=generator, dtype=torch.float64)
    counts = torch.tensor([len(t.leaves()) for t in batch])
    pad_mask = torch.arange(n) >= counts[:, None]
    fast = tree_regularization_loss(states, token_positions(pad_mask), targets_of(batch))
    for b, tree in enumerate(batch):
        k = len(tree.leaves())
        want = sentence_loss(states[b, :k], tree, [1] * k)
        torch.testing.assert_close(fast[b], want, rtol=1e-10, atol=1e-12)
    assert fast[4] == 0 and fast[5] == 0  # one and two words: nothing to score
    assert (fast[:4] > 0).all()


def piece_batch_of(batch: list[Tree], seed: int = 1):
    """Each word one to three pieces, laid out as [CLS] pieces [SEP] then padding; the
    pieces of each word, each piece's word (-1: none) and each word's first piece."""
    generator = torch.Generator().manual_seed(seed)
    per_word = [
        torch.randint(1, 4, (len(t.leaves()),), generator=generator).tolist() for t in batch
    ]
    length = max(sum(p) for p in per_word) + 3  # [CLS], [SEP] and a padded piece at least
    owners = torch.full((len(batch), length), -1)
    firsts = torch.zeros(len(batch), max(len(p) for p in per_word), dtype=torch.long)
    for b, pieces in enumerate(per_word):
        position = 1
        for word, count in enumerate(pieces):
            firsts[b, word] = position
            owners[b, position : position + count] = word
            position += count
    return per_word, owners, firsts


def test_the_loss_of_pieces_matches_the_reference_and_reads_no_special_piece():
    batch = trees()
    per_word, owners, firsts = piece_batch_of(batch)
    generator = torch.Generator().manual_seed(2)
    states = torch.randn(*owners.shape, 6, generator=generator, dtype=torch.float64)
    counts = torch.tensor([len(p) for p in per_word])
    pad_mask = torch.arange(firsts.shape[1]) >= counts[:, None]
    positions = piece_positions(owners, firsts, pad_mask)
    fast = tree_regularization_loss(states, positions, targets_of(batch))
    for b, tree in enumerate(batch):
        pieces = states[b, 1 : 1 + sum(per_word[b])]  # without [CLS] and [SEP]
        want = sentence_loss(pieces, tree, per_word[b])
        torch.testing.assert_close(fast[b], want, rtol=1e-10, atol=1e-12)
    # [CLS], [SEP] and padding are never read.
    other = states.clone()
    other[owners < 0] = torch.randn(int((owners < 0).sum()), 6, dtype=torch.float64)
    torch.testing.assert_close(tree_regularization_loss(other, positions, targets_of(batch)), fast)


def test_a_word_with_no_piece_of_its_own_shares_the_piece_over_it():
    # "cannot": one piece over the words "can" "not"; the second has no piece it owns.
    owners = torch.tensor([[-1, 0, 2, 3, -1]])
    firsts = torch.tensor([[1, 1, 2, 3]])
    positions = piece_positions(owners, firsts, torch.zeros(1, 4, dtype=torch.bool))
    assert positions.first.tolist() == [[1, 1, 2, 3]]
    assert positions.last.tolist() == [[1, 1, 2, 3]]


def test_layers_are_averaged_and_dims_keep_the_first_share():
    batch = trees()[:3]
    n = max(len(t.leaves()) for t in batch)
    generator = torch.Generator().manual_seed(3)
    low, high = torch.randn(2, len(batch), n, 8, generator=generator, dtype=torch.float64)
    counts = torch.tensor([len(t.leaves()) for t in batch])
    positions = token_positions(torch.arange(n) >= counts[:, None])
    loss = TreeRegularization.from_options(layers=[1, 3], dims=0.5)
    targets = loss.collate([loss.targets(t, "t") for t in batch])
    want = [
        torch.stack(
            [
                sentence_loss(s[b, : counts[b]][:, :4], t, [1] * counts[b])
                for b, t in enumerate(batch)
            ]
        )
        for s in (low, high)
    ]
    torch.testing.assert_close(loss([low, high], targets, positions), torch.stack(want).mean())


def test_gradcheck():
    batch = [Tree.parse(TREES["n-ary root"]), Tree.parse(TREES["three words"])]
    per_word, owners, firsts = piece_batch_of(batch, seed=4)
    generator = torch.Generator().manual_seed(5)
    states = torch.randn(*owners.shape, 3, generator=generator, dtype=torch.float64)
    states.requires_grad_(True)
    counts = torch.tensor([len(p) for p in per_word])
    positions = piece_positions(owners, firsts, torch.arange(firsts.shape[1]) >= counts[:, None])
    targets = targets_of(batch)
    assert torch.autograd.gradcheck(
        lambda x: tree_regularization_loss(x, positions, targets), (states,)
    )


def test_padding_and_batch_mates_change_nothing():
    batch = trees()
    generator = torch.Generator().manual_seed(6)
    alone = []
    for tree in batch:
        k = len(tree.leaves())
        states = torch.randn(1, k, 16, generator=generator)
        positions = token_positions(torch.zeros(1, k, dtype=torch.bool))
        alone.append((states, tree_regularization_loss(states, positions, targets_of([tree]))))
    n = max(len(t.leaves()) for t in batch) + 4  # more padding than the batch needs
    padded = torch.randn(len(batch), n, 16, generator=generator) * 100  # padding is never read
    for b, (states, _) in enumerate(alone):
        padded[b, : states.shape[1]] = states[0]
    counts = torch.tensor([len(t.leaves()) for t in batch])
    together = tree_regularization_loss(
        padded, token_positions(torch.arange(n) >= counts[:, None]), targets_of(batch)
    )
    torch.testing.assert_close(
        together, torch.cat([loss for _, loss in alone]), rtol=1e-6, atol=1e-6
    )


def test_bfloat16_states_are_scored_in_float32():
    tree = Tree.parse(TREES["flat"])
    states = torch.randn(1, 6, 8)
    positions = token_positions(torch.zeros(1, 6, dtype=torch.bool))
    exact = tree_regularization_loss(states, positions, targets_of([tree]))
    with torch.autocast("cpu", torch.bfloat16):
        rounded = tree_regularization_loss(states.bfloat16(), positions, targets_of([tree]))
    assert rounded.dtype == torch.float32
    torch.testing.assert_close(rounded, exact, rtol=0.05, atol=0.05)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"layer": 2}, "layer is not an option"),
        ({"layers": []}, "layers=\\[\\]"),
        ({"layers": [1.5]}, "layers="),
        ({"dims": 0}, "dims=0"),
        ({"dims": 1.5}, "dims=1.5"),
    ],
)
def test_bad_options_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        TreeRegularization.from_options(**options)


def test_it_is_a_registered_loss_and_listed(capsys):
    assert NAME in loss_names()
    assert NAME not in encoder_names()  # not a value of model.attention
    capabilities = plugins.mechanisms[NAME].capabilities
    assert capabilities.loss is TreeRegularization and "Nandi" in capabilities.description
    assert main(["mechanisms"]) == 0
    out = capsys.readouterr().out
    assert f"  {NAME}" in out and capabilities.description in out
    assert "layers=(-1,), dims=1.0" in out


def test_a_shared_piece_scores_exactly_zero_against_itself():
    # Word 1 has no piece of its own: it shares word 0's, its context and its end alike.
    owners = torch.tensor([[-1, 0, 2, 3, -1]])
    positions = piece_positions(owners, torch.tensor([[1, 1, 2, 3]]), torch.zeros(1, 4).bool())
    states = torch.randn(1, 5, 8, requires_grad=True)
    loss = tree_regularization_loss(states, positions, targets_of([Tree.parse("(S a b c d)")]))
    loss.sum().backward()
    assert torch.isfinite(states.grad).all()
    assert (orthogonal_norms(states).diagonal(dim1=1, dim2=2) == 0).all()
