"""Dependency structures: Eisner (projective), MatrixTree (non-projective), Chu-Liu-Edmonds.

Exact against brute-force enumeration of single-root trees, padding, gradients (also second
derivatives), marginal sums, extreme scores, and conversions between heads and arcs.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest
import torch
from torch.testing import assert_close

from treeattn.structs import matrix_tree
from treeattn.structs.eisner import Eisner
from treeattn.structs.matrix_tree import (
    MatrixTree,
    eliminate,
    lu_log_det_and_gradient,
    shifted_log_weights,
)
from treeattn.structs.mst import (
    arcs_to_heads,
    best_heads,
    chu_liu_edmonds,
    heads_to_arcs,
    real_arcs_mask,
)
from treeattn.trees.dependency import DependencyTree, tree_problem

DTYPE = torch.float64
STRUCTURES = [Eisner, MatrixTree]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


# ---------------------------------------------------------------------- brute force


@functools.cache
def single_root_trees(n: int) -> torch.Tensor:
    """(T, n) heads (1-based, 0 = ROOT) of every single-root tree on n words: n^(n-1)."""
    heads = torch.tensor(list(itertools.product(range(n + 1), repeat=n)))
    heads = heads[(heads == 0).sum(1) == 1]
    # Follow heads n times from every word: only acyclic assignments all reach the ROOT.
    with_root = torch.cat([torch.zeros(len(heads), 1, dtype=torch.long), heads], dim=1)
    position = torch.arange(1, n + 1).expand(len(heads), n)
    for _ in range(n):
        position = with_root.gather(1, position)
    return heads[(position == 0).all(1)]


@functools.cache
def projective_trees(n: int) -> torch.Tensor:
    """(T, n) heads of the single-root trees without crossing arcs."""
    trees = single_root_trees(n)
    keep = [DependencyTree(["w"] * n, tree.tolist()).is_projective() for tree in trees]
    return trees[torch.tensor(keep)]


def tree_arcs(trees: torch.Tensor) -> torch.Tensor:
    """(T, n+1, n+1) 0/1 arcs of (T, n) heads, built independently of the library."""
    count, n = trees.shape
    arcs = torch.zeros(count, n + 1, n + 1, dtype=DTYPE)
    dependents = torch.arange(1, n + 1).expand(count, n)
    arcs[torch.arange(count)[:, None], trees, dependents] = 1.0
    return arcs


def brute_force(scores: torch.Tensor, trees: torch.Tensor) -> dict[str, torch.Tensor]:
    """log Z, marginals, max and argmax of (B, n+1, n+1) scores over the given trees."""
    arcs = tree_arcs(trees)
    tree_scores = torch.einsum("bhm,thm->bt", scores, arcs)
    best = tree_scores.argmax(-1)
    return {
        "log_partition": tree_scores.logsumexp(-1),
        "marginals": torch.einsum("bt,thm->bhm", tree_scores.softmax(-1), arcs),
        "max": tree_scores.max(-1).values,
        "argmax": arcs[best],
    }


def random_tree(n: int, generator: torch.Generator) -> list[int]:
    """Heads of a random single-root tree: words join, in random order, a word already in."""
    order = (torch.randperm(n, generator=generator) + 1).tolist()
    heads = [0] * n
    for index, word in enumerate(order[1:], start=1):
        heads[word - 1] = order[int(torch.randint(index, (1,), generator=generator))]
    return heads


def random_projective_tree(n: int, generator: torch.Generator) -> list[int]:
    """Heads of a random projective single-root tree: each span picks its head word, whose
    left and right parts become spans of their own."""
    heads = [0] * n
    spans = [(1, n, 0)]  # first word, last word, head of the span's head
    while spans:
        first, last, parent = spans.pop()
        word = int(torch.randint(first, last + 1, (1,), generator=generator))
        heads[word - 1] = parent
        if first < word:
            spans.append((first, word - 1, word))
        if word < last:
            spans.append((word + 1, last, word))
    return heads


def heads_row(heads: list[int]) -> torch.Tensor:
    """(1, n+1) heads with -1 at the ROOT position, as ``best_heads`` writes them."""
    return torch.tensor([[-1, *heads]])


def test_enumeration_counts() -> None:
    # n^(n-1) single-root trees; projective ones: 1, 2, 7, 30, 143, 728 (OEIS A006013).
    for n, projective in zip(range(1, 7), [1, 2, 7, 30, 143, 728], strict=True):
        assert len(single_root_trees(n)) == n ** (n - 1)
        assert len(projective_trees(n)) == projective
        for tree in single_root_trees(n)[:50]:
            assert tree_problem(tree.tolist(), single_root=True) is None


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_eisner_matches_brute_force(n: int) -> None:
    torch.manual_seed(n)
    scores = torch.randn(3, n + 1, n + 1, dtype=DTYPE) * 2
    eisner = Eisner(scores)
    expected = brute_force(scores, projective_trees(n))
    assert_close(eisner.log_partition, expected["log_partition"])
    assert_close(eisner.marginals, expected["marginals"])
    assert_close(eisner.max, expected["max"])
    assert_close(eisner.argmax, expected["argmax"])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_matrix_tree_matches_brute_force(n: int) -> None:
    torch.manual_seed(10 + n)
    scores = torch.randn(3, n + 1, n + 1, dtype=DTYPE) * 2
    scores[2] *= 20  # a peaked distribution too
    tree = MatrixTree(scores)
    expected = brute_force(scores, single_root_trees(n))
    assert_close(tree.log_partition, expected["log_partition"])
    assert_close(tree.marginals, expected["marginals"])
    assert_close(tree.max, expected["max"])
    assert_close(tree.argmax, expected["argmax"])


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_chu_liu_edmonds_matches_brute_force(n: int) -> None:
    rng = np.random.default_rng(n)
    trees = single_root_trees(n)
    arcs = tree_arcs(trees).numpy()
    for _ in range(40):
        scores = rng.normal(size=(n + 1, n + 1)) * rng.choice([0.1, 1.0, 100.0])
        scores[0, 1:] += rng.choice([-5.0, 0.0, 5.0])  # root arcs favoured or not
        best = trees[np.einsum("hm,thm->t", scores, arcs).argmax()]
        np.testing.assert_array_equal(chu_liu_edmonds(scores), [-1, *best.tolist()])


def test_ignored_entries_change_nothing() -> None:
    torch.manual_seed(20)
    n, lengths = 5, torch.tensor([5, 3])
    scores = torch.randn(2, n + 1, n + 1, dtype=DTYPE)
    changed = scores.clone()
    changed[:, :, 0] = torch.inf  # arcs into the ROOT
    changed[:, torch.arange(n + 1), torch.arange(n + 1)] = -torch.inf  # self-loops
    changed[1, 4:] = changed[1, :, 4:] = torch.inf  # padding
    for structure in STRUCTURES:
        expected, tree = structure(scores, lengths), structure(changed, lengths)
        assert_close(tree.log_partition, expected.log_partition)
        assert_close(tree.marginals, expected.marginals)
        assert_close(tree.argmax, expected.argmax)
        assert_close(tree.max, expected.max)  # only the chosen arcs are read
        assert_close(tree.log_prob(tree.argmax), expected.log_prob(expected.argmax))
        with pytest.raises(ValueError, match="finite"):  # but not on real arcs
            structure(changed, torch.tensor([5, 4]))
    np.testing.assert_array_equal(
        chu_liu_edmonds(changed[0].numpy()), chu_liu_edmonds(scores[0].numpy())
    )


# ---------------------------------------------------------------------- padding


@pytest.mark.parametrize("structure", STRUCTURES)
@pytest.mark.parametrize("device", DEVICES)
def test_padding_changes_nothing_and_gets_zero_marginals(structure: type, device: str) -> None:
    torch.manual_seed(30)
    n, lengths = 7, [7, 2, 1, 4, 6]
    scores = torch.randn(len(lengths), n + 1, n + 1, dtype=DTYPE, device=device)
    for item, length in enumerate(lengths):  # padding scores that would dominate if read
        scores[item, length + 1 :] = 1e4
        scores[item, :, length + 1 :] = 1e4
    batch = structure(scores, torch.tensor(lengths, device=device))
    log_z, marginals, best, argmax = batch.log_partition, batch.marginals, batch.max, batch.argmax
    for item, length in enumerate(lengths):
        alone = structure(scores[item : item + 1, : length + 1, : length + 1])
        assert_close(log_z[item : item + 1], alone.log_partition)
        assert_close(best[item : item + 1], alone.max)
        assert_close(marginals[item, : length + 1, : length + 1], alone.marginals[0])
        assert_close(argmax[item, : length + 1, : length + 1], alone.argmax[0])
        outside = torch.ones(n + 1, n + 1, dtype=torch.bool, device=device)
        outside[: length + 1, : length + 1] = False
        assert (marginals[item][outside] == 0).all()
        assert (argmax[item][outside] == 0).all()


def test_best_heads_pads_with_minus_one() -> None:
    torch.manual_seed(31)
    scores = torch.randn(3, 6, 6, dtype=DTYPE)
    lengths = torch.tensor([5, 3, 1])
    heads = best_heads(scores, lengths)
    assert heads.dtype == torch.long and heads.shape == (3, 6)
    for item, length in enumerate(lengths.tolist()):
        alone = chu_liu_edmonds(scores[item, : length + 1, : length + 1].numpy())
        assert heads[item, : length + 1].tolist() == alone.tolist()
        assert (heads[item, length + 1 :] == -1).all()
    assert_close(heads_to_arcs(heads, dtype=DTYPE), MatrixTree(scores, lengths).argmax)


# ---------------------------------------------------------------------- gradients


@pytest.mark.parametrize("structure", STRUCTURES)
def test_gradcheck_log_partition(structure: type) -> None:
    torch.manual_seed(40)
    scores = torch.randn(2, 5, 5, dtype=DTYPE, requires_grad=True)
    lengths = torch.tensor([4, 2])
    assert torch.autograd.gradcheck(lambda s: structure(s, lengths).log_partition, (scores,))


@pytest.mark.parametrize("structure", STRUCTURES)
def test_gradcheck_marginals_second_derivatives(structure: type) -> None:
    torch.manual_seed(41)
    scores = torch.randn(2, 4, 4, dtype=DTYPE, requires_grad=True)
    lengths = torch.tensor([3, 2])
    assert torch.autograd.gradcheck(lambda s: structure(s, lengths).marginals, (scores,))


@pytest.mark.parametrize("structure", STRUCTURES)
def test_marginals_keep_the_graph_when_scores_need_grad(structure: type) -> None:
    scores = torch.randn(1, 4, 4, dtype=DTYPE, requires_grad=True)
    assert structure(scores).marginals.requires_grad
    assert not structure(scores).argmax.requires_grad
    assert not structure(scores.detach()).marginals.requires_grad


# ---------------------------------------------------------------------- invariants


def assert_tree_marginals(marginals: torch.Tensor, lengths: torch.Tensor) -> None:
    """Every real word's head marginals sum to 1, and so do the ROOT's (one root word)."""
    for item, length in enumerate(lengths.tolist()):
        heads_of_words = marginals[item, :, 1 : length + 1].sum(0)
        assert_close(heads_of_words, torch.ones_like(heads_of_words))
        assert_close(marginals[item, 0].sum(), torch.ones((), dtype=marginals.dtype))
    assert (marginals >= -1e-12).all() and (marginals <= 1 + 1e-12).all()


@pytest.mark.parametrize("structure", STRUCTURES)
def test_marginals_sum_to_one_per_word_and_at_the_root(structure: type) -> None:
    torch.manual_seed(50)
    lengths = torch.tensor([12, 5, 1, 9])
    scores = torch.randn(4, 13, 13, dtype=DTYPE) * 3
    assert_tree_marginals(structure(scores, lengths).marginals, lengths)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_float32_scores_agree_with_float64(structure: type) -> None:
    torch.manual_seed(51)
    scores = torch.randn(3, 11, 11, dtype=DTYPE) * 3
    single = structure(scores.float())
    assert single.log_partition.dtype == single.marginals.dtype == torch.float32
    assert_close(single.log_partition, structure(scores).log_partition.float(), rtol=1e-5, atol=0)
    assert_close(single.marginals, structure(scores).marginals.float(), atol=1e-5, rtol=1e-4)


def test_lu_is_used_where_exact_and_elimination_elsewhere() -> None:
    torch.manual_seed(44)
    lengths = torch.tensor([12, 7, 12])
    moderate = torch.randn(3, 13, 13, dtype=DTYPE)
    weights, _, _ = shifted_log_weights(moderate, lengths)
    lu_result, _, trusted = lu_log_det_and_gradient(weights)
    assert trusted.all()
    assert_close(lu_result, eliminate(weights), rtol=0, atol=1e-10)
    # Scores this spread make the LU cancel: it must be caught, not trusted.
    extreme, _, _ = shifted_log_weights((torch.rand(3, 13, 13, dtype=DTYPE) - 0.5) * 2e4, lengths)
    assert not lu_log_det_and_gradient(extreme)[2].all()
    mixed = torch.cat([moderate[:1], (torch.rand(1, 13, 13, dtype=DTYPE) - 0.5) * 2e4])
    both = MatrixTree(mixed, lengths[:2])  # one item by each path, in one batch
    for item in range(2):
        alone = MatrixTree(mixed[item : item + 1], lengths[item : item + 1])
        assert_close(both.log_partition[item], alone.log_partition[0])
        assert_close(both.marginals[item], alone.marginals[0])


def test_matrix_tree_float32_stays_precise_far_from_zero() -> None:
    # Shifting every word's column by its best score keeps the weights that matter near
    # 1, so float32 elimination of scores around 1e4 is as precise as of scores near 0.
    torch.manual_seed(52)
    scores = (torch.randn(2, 9, 9, dtype=DTYPE) + 1e4).float()
    single = MatrixTree(scores, dtype=torch.float32)
    double = MatrixTree(scores.double())
    assert_close(single.marginals.double(), double.marginals, atol=1e-6, rtol=0)
    assert_close(single.log_partition.double(), double.log_partition, atol=0, rtol=1e-6)


@pytest.mark.parametrize("structure", STRUCTURES)
def test_extreme_scores_give_finite_marginals_on_the_best_tree(structure: type) -> None:
    torch.manual_seed(60)
    lengths = torch.tensor([20, 13, 2])
    scores = (torch.rand(3, 21, 21, dtype=DTYPE) * 2 - 1) * 1e4
    tree = structure(scores, lengths)
    log_z, marginals = tree.log_partition, tree.marginals
    assert log_z.isfinite().all() and marginals.isfinite().all()
    assert_tree_marginals(marginals, lengths)
    # At this scale the best tree takes nearly all the mass (here the runner-up of the
    # first item's non-projective trees is 11.8 below it: marginals 7e-6 off 0/1).
    assert_close(marginals, tree.argmax, atol=1e-5, rtol=0)
    assert_close(log_z, tree.max)
    # Second derivatives too (training through the marginals).
    leaf = scores.clone().requires_grad_()
    weights = torch.randn_like(scores)
    (grad,) = torch.autograd.grad((structure(leaf, lengths).marginals * weights).sum(), leaf)
    assert grad.isfinite().all()


@pytest.mark.parametrize("structure", STRUCTURES)
def test_dominated_scores_give_the_gold_tree(structure: type) -> None:
    generator = torch.Generator().manual_seed(61)
    n, lengths = 25, torch.tensor([25, 18])
    make_tree = random_projective_tree if structure is Eisner else random_tree
    gold = torch.zeros(2, n + 1, n + 1, dtype=DTYPE)
    for item, length in enumerate(lengths.tolist()):
        heads = heads_row(make_tree(length, generator))
        gold[item, : length + 1, : length + 1] = heads_to_arcs(heads, dtype=DTYPE)[0]
    scores = torch.where(gold == 1, 1e4, -1e4).to(DTYPE)
    tree = structure(scores, lengths)
    assert tree.log_partition.isfinite().all()
    assert_close(tree.marginals, gold, atol=1e-12, rtol=0)
    assert_close(tree.argmax, gold)
    assert_close(tree.log_partition, tree.score(gold))


@pytest.mark.parametrize("structure", STRUCTURES)
def test_bad_input_raises(structure: type) -> None:
    scores = torch.zeros(2, 4, 4)
    scores[1, 2, 3] = torch.nan
    with pytest.raises(ValueError, match="NaN"):
        structure(scores)
    with pytest.raises(ValueError, match="n\\+1"):
        structure(torch.zeros(2, 4, 5))
    with pytest.raises(ValueError, match="n\\+1"):
        structure(torch.zeros(2, 1, 1))
    with pytest.raises(ValueError, match="lengths"):
        structure(torch.zeros(2, 4, 4), torch.tensor([3, 4]))


def test_chu_liu_edmonds_rejects_bad_scores() -> None:
    scores = np.zeros((4, 4))
    scores[1, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        chu_liu_edmonds(scores)
    with pytest.raises(ValueError, match="finite"):
        best_heads(torch.from_numpy(scores)[None])
    with pytest.raises(ValueError, match="n\\+1"):
        chu_liu_edmonds(np.zeros((3, 4)))
    scores[1, 2] = 0.0
    scores[2, 2] = scores[3, 0] = np.nan  # ignored entries may hold anything
    assert chu_liu_edmonds(scores)[0] == -1


# ---------------------------------------------------------------------- long sentences


@pytest.mark.parametrize("n", [80, 300])
def test_chu_liu_edmonds_on_long_sentences(n: int) -> None:
    rng = np.random.default_rng(n)
    for _ in range(2 if n == 300 else 4):
        scores = rng.normal(size=(n + 1, n + 1))
        heads = chu_liu_edmonds(scores)
        assert heads[0] == -1
        assert tree_problem(heads[1:].tolist(), single_root=True) is None
        best = scores[heads[1:], np.arange(1, n + 1)].sum()
        projective = Eisner(torch.from_numpy(scores)[None]).max.item()
        assert best >= projective - 1e-9
    # More root-friendly scores than word-friendly ones still give one root word.
    scores[0, 1:] += 10.0
    assert (chu_liu_edmonds(scores)[1:] == 0).sum() == 1


def test_chu_liu_edmonds_equals_matrix_tree_argmax_of_a_batch() -> None:
    torch.manual_seed(70)
    scores = torch.randn(4, 31, 31, dtype=DTYPE)
    heads = best_heads(scores)
    for item in range(4):
        assert heads[item].tolist() == chu_liu_edmonds(scores[item].numpy()).tolist()
    # The best non-projective tree scores at least as much as the best projective one.
    assert (MatrixTree(scores).max >= Eisner(scores).max - 1e-9).all()


# ---------------------------------------------------------------------- conversions


def test_heads_and_arcs_round_trip() -> None:
    heads = torch.tensor([[-1, 2, 0, 2], [-1, 0, 1, -1]])
    arcs = heads_to_arcs(heads)
    assert arcs.shape == (2, 4, 4) and arcs.dtype == torch.float32
    assert arcs[0, 2, 1] == arcs[0, 0, 2] == arcs[0, 2, 3] == 1 and arcs[0].sum() == 3
    assert arcs[1, 0, 1] == arcs[1, 1, 2] == 1 and arcs[1].sum() == 2
    lengths = torch.tensor([3, 2])
    assert arcs_to_heads(arcs, lengths).tolist() == heads.tolist()
    assert heads_to_arcs(heads, n=5).shape == (2, 6, 6)
    with pytest.raises(ValueError, match="exactly one head"):
        arcs_to_heads(arcs, torch.tensor([3, 3]))
    with pytest.raises(ValueError):
        heads_to_arcs(torch.tensor([[-1, 4]]))


def test_eisner_argmax_converts_to_projective_heads() -> None:
    torch.manual_seed(80)
    lengths = torch.tensor([9, 6])
    eisner = Eisner(torch.randn(2, 10, 10, dtype=DTYPE), lengths)
    heads = arcs_to_heads(eisner.argmax, lengths)
    assert (heads[1, 7:] == -1).all() and (heads[:, 0] == -1).all()
    for item, length in enumerate(lengths.tolist()):
        tree = DependencyTree(["w"] * length, heads[item, 1 : length + 1].tolist())
        tree.validate(single_root=True)
        assert tree.is_projective()


def test_real_arcs_mask() -> None:
    mask = real_arcs_mask(torch.tensor([2]), 3)[0]
    expected = torch.tensor(
        [[0, 1, 1, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]], dtype=torch.bool
    )
    assert torch.equal(mask, expected)


# ---------------------------------------------------------------------- matrix-tree paths


def elimination_marginals(scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Marginals by autograd through the log-space elimination alone (exact at any scale),
    differentiable: the reference of the LU route's closed form and its backward."""
    log_weights, shifts, _ = shifted_log_weights(scores, lengths)
    log_z = eliminate(log_weights) + shifts.sum(-1)
    (marginals,) = torch.autograd.grad(log_z.sum(), scores, create_graph=True)
    return marginals


@pytest.mark.parametrize("lengths", [None, [7, 4, 7]])
def test_matrix_tree_marginals_and_their_gradient_match_elimination(lengths) -> None:
    # One LU item, one at a scale the LU cannot be trusted with, one in between; equal
    # lengths (one shift for the batch) and padding (a shift per column).
    torch.manual_seed(70)
    scores = torch.randn(3, 8, 8, dtype=DTYPE) * torch.tensor([1.0, 1e4, 10.0])[:, None, None]
    lengths = torch.tensor(lengths if lengths else [7] * 3)
    weights = torch.randn_like(scores)
    leaf = scores.clone().requires_grad_()
    marginals = MatrixTree(leaf, lengths).marginals
    (gradient,) = torch.autograd.grad((marginals * weights).sum(), leaf)
    reference_leaf = scores.clone().requires_grad_()
    expected = elimination_marginals(reference_leaf, lengths)
    (expected_gradient,) = torch.autograd.grad((expected * weights).sum(), reference_leaf)
    assert_close(marginals, expected.detach())
    assert_close(gradient, expected_gradient)


@pytest.mark.parametrize("eliminate_all", [False, True])
def test_gradcheck_matrix_tree_marginals_of_equal_lengths(eliminate_all: bool, monkeypatch) -> None:
    # The existing gradcheck pads; this one takes the equal-length path, and with the trust
    # check failing every item, the elimination's backward inside the marginals' own.
    if eliminate_all:
        monkeypatch.setattr(
            matrix_tree,
            "trusted_items",
            lambda marginals, _: torch.zeros(len(marginals), dtype=torch.bool),
        )
    torch.manual_seed(71)
    scores = torch.randn(2, 5, 5, dtype=DTYPE, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: MatrixTree(s).marginals, (scores,))
    assert torch.autograd.gradcheck(lambda s: MatrixTree(s).log_partition, (scores,))


def test_matrix_tree_float32_wide_spread_takes_a_shift_per_column() -> None:
    # Spread beyond what one float32 shift keeps normal: each column is shifted alone.
    torch.manual_seed(72)
    scores = torch.randn(2, 9, 9, dtype=DTYPE) * 12
    single, double = MatrixTree(scores.float()), MatrixTree(scores)
    assert_close(single.log_partition.double(), double.log_partition, atol=0, rtol=1e-5)
    assert_close(single.marginals.double(), double.marginals, atol=1e-4, rtol=0)
