"""CKY over labeled spans: exact against brute-force enumeration, padding, gradients,
conversions between charts, span lists and trees."""

from __future__ import annotations

import functools
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from tests.strategies import binary_trees
from treeattn.structs.base import LogSemiring, MaxSemiring
from treeattn.structs.cky import CKY, spans_tensor, spans_to_trees, tree_spans
from treeattn.trees import Tree

DTYPE = torch.float64


# ---------------------------------------------------------------------- brute force


@functools.cache
def bracketings(start: int, last: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Every binary bracketing of words start..last as its (start, last) inclusive spans."""
    if start == last:
        return (((start, last),),)
    return tuple(
        ((start, last), *left, *right)
        for split in range(start, last)
        for left in bracketings(start, split)
        for right in bracketings(split + 1, last)
    )


def labeled_trees(n: int, n_labels: int) -> torch.Tensor:
    """(T, 2n - 1) flat indices into an (n, n, L) chart of every labeled binary tree."""
    cells = torch.tensor(bracketings(0, n - 1))  # (brackets, 2n - 1, 2)
    base = (cells[..., 0] * n + cells[..., 1]) * n_labels
    n_spans = 2 * n - 1
    # Every assignment of labels to the 2n - 1 spans: the base-L digits of 0..L^spans - 1.
    digits = n_labels ** torch.arange(n_spans)
    assignments = torch.arange(n_labels**n_spans)[:, None] // digits % n_labels
    return (base[:, None, :] + assignments[None]).reshape(-1, n_spans)


def brute_force(scores: torch.Tensor) -> dict[str, torch.Tensor]:
    """log Z, marginals, max and argmax of (B, n, n, L) scores by enumerating all trees."""
    batch, n, _, n_labels = scores.shape
    trees = labeled_trees(n, n_labels)
    flat = scores.reshape(batch, -1)
    tree_scores = flat[:, trees].sum(-1)  # (B, T)
    probs = tree_scores.softmax(-1)
    marginals = torch.zeros_like(flat).index_add_(
        1, trees.flatten(), probs.repeat_interleave(trees.shape[1], dim=1)
    )
    best = tree_scores.argmax(-1)
    argmax = torch.zeros_like(flat).scatter_(1, trees[best], 1.0)
    return {
        "log_partition": tree_scores.logsumexp(-1),
        "marginals": marginals.reshape(scores.shape),
        "max": tree_scores.max(-1).values,
        "argmax": argmax.reshape(scores.shape),
    }


def test_brute_force_counts_catalan_times_labels() -> None:
    for n in range(1, 7):
        assert len(bracketings(0, n - 1)) == math.comb(2 * n - 2, n - 1) // n
    assert labeled_trees(3, 2).shape == (2 * 2**5, 5)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_matches_brute_force(n: int) -> None:
    torch.manual_seed(n)
    scores = torch.randn(2, n, n, 2, dtype=DTYPE)
    cky = CKY(scores)
    expected = brute_force(scores)
    assert_close(cky.log_partition, expected["log_partition"])
    assert_close(cky.marginals, expected["marginals"])
    assert_close(cky.max, expected["max"])
    assert_close(cky.argmax, expected["argmax"])


def test_lower_triangle_is_ignored() -> None:
    torch.manual_seed(0)
    scores = torch.randn(2, 4, 4, 3, dtype=DTYPE)
    below = torch.ones(4, 4, dtype=DTYPE).tril(-1)[:, :, None]  # cells with i > j
    changed = scores + torch.randn_like(scores) * below * 100
    changed[:, 2, 0] = -math.inf  # even -inf below the diagonal changes nothing
    assert_close(CKY(changed).log_partition, CKY(scores).log_partition)
    marginals = CKY(changed).marginals
    assert marginals.isfinite().all()
    assert_close(marginals, CKY(scores).marginals)


def test_loss_augmented_argmax_is_brute_force_cost_augmented_argmax() -> None:
    torch.manual_seed(1)
    n = 5
    scores = torch.randn(3, n, n, 2, dtype=DTYPE)
    trees = labeled_trees(n, 2)
    gold_ids = torch.randint(len(trees), (3,))
    gold = torch.zeros(3, n * n * 2, dtype=DTYPE).scatter_(1, trees[gold_ids], 1.0)
    gold = gold.reshape(scores.shape)
    cky = CKY(scores)
    augmented = cky.loss_augmented(gold)
    expected = brute_force(scores + (1 - gold))
    assert_close(augmented.argmax, expected["argmax"])
    assert_close(augmented.max, expected["max"])
    # The hinge: best cost-augmented score minus gold's; >= 0, and the cost is a Hamming
    # distance, i.e. the spans of the augmented argmax that are not gold.
    best = augmented.argmax
    hamming = (best * (1 - gold)).flatten(1).sum(1)
    assert_close(augmented.max, cky.score(best) + hamming)
    assert (augmented.max - cky.score(gold) >= 0).all()
    # With gold scored far above the rest, the hinge is zero.
    confident = CKY(gold * 10.0)
    assert_close(
        confident.loss_augmented(gold).max - confident.score(gold), torch.zeros(3, dtype=DTYPE)
    )


def test_loss_augmented_rejects_wrong_gold_shape() -> None:
    with pytest.raises(ValueError, match="gold"):
        CKY(torch.zeros(1, 3, 3, 2)).loss_augmented(torch.zeros(1, 3, 3, 1))


# ---------------------------------------------------------------------- padding


def test_padding_changes_nothing_and_gets_zero_marginals() -> None:
    torch.manual_seed(2)
    n, lengths = 6, [6, 2, 1, 4, 5]
    scores = torch.randn(len(lengths), n, n, 3, dtype=DTYPE)
    cky = CKY(scores, torch.tensor(lengths))
    log_z, marginals, best, argmax = cky.log_partition, cky.marginals, cky.max, cky.argmax
    for b, length in enumerate(lengths):
        alone = CKY(scores[b : b + 1, :length, :length])
        assert_close(log_z[b : b + 1], alone.log_partition)
        assert_close(best[b : b + 1], alone.max)
        assert_close(marginals[b, :length, :length], alone.marginals[0])
        assert_close(argmax[b, :length, :length], alone.argmax[0])
        # Everything outside the item's words: padding rows and columns.
        outside = torch.ones(n, n, dtype=torch.bool)
        outside[:length, :length] = False
        assert (marginals[b][outside] == 0).all()
        assert (argmax[b][outside] == 0).all()


def test_padding_scores_never_matter() -> None:
    torch.manual_seed(3)
    lengths = torch.tensor([3, 5])
    scores = torch.randn(2, 5, 5, 2, dtype=DTYPE)
    noisy = scores.clone()
    for high, low in ((1e4, -1e4), (torch.inf, -torch.inf)):
        noisy[0, 3:] = high
        noisy[0, :, 3:] = low
        noisy[1, torch.arange(1, 5), torch.arange(4)] = low  # cells with i > j
        assert_close(CKY(noisy, lengths).log_partition, CKY(scores, lengths).log_partition)
        assert_close(CKY(noisy, lengths).marginals, CKY(scores, lengths).marginals)
        assert_close(CKY(noisy, lengths).max, CKY(scores, lengths).max)


# ---------------------------------------------------------------------- gradients


def test_gradcheck_log_partition() -> None:
    torch.manual_seed(4)
    scores = torch.randn(2, 4, 4, 2, dtype=DTYPE, requires_grad=True)
    lengths = torch.tensor([4, 3])
    assert torch.autograd.gradcheck(lambda s: CKY(s, lengths).log_partition, (scores,))


def test_gradcheck_marginals_second_derivatives() -> None:
    torch.manual_seed(5)
    scores = torch.randn(1, 3, 3, 2, dtype=DTYPE, requires_grad=True)
    assert torch.autograd.gradcheck(lambda s: CKY(s).marginals, (scores,))


def test_marginals_keep_the_graph_when_scores_need_grad() -> None:
    scores = torch.randn(1, 3, 3, 2, dtype=DTYPE, requires_grad=True)
    assert CKY(scores).marginals.requires_grad
    assert not CKY(scores).argmax.requires_grad
    assert not CKY(scores.detach()).marginals.requires_grad


# ---------------------------------------------------------------------- invariants


def is_binary_tree(spans: list[tuple[int, int, int]], length: int) -> bool:
    """2*len - 1 distinct spans that form one binary bracketing of words 0..length-1."""
    cells = {(start, end) for _, start, end in spans}
    if len(cells) != len(spans) or len(spans) != 2 * length - 1:
        return False
    pending = [(0, length)]
    while pending:
        start, end = pending.pop()
        if (start, end) not in cells:
            return False
        if end - start > 1:
            splits = [k for k in range(start + 1, end) if (start, k) in cells and (k, end) in cells]
            if len(splits) != 1:
                return False
            pending += [(start, splits[0]), (splits[0], end)]
    return True


def test_marginals_and_argmax_count_two_n_minus_one_spans() -> None:
    torch.manual_seed(6)
    lengths = torch.tensor([1, 7, 12, 9])
    cky = CKY(torch.randn(4, 12, 12, 5, dtype=DTYPE) * 3, lengths)
    assert_close(cky.marginals.flatten(1).sum(1), (2 * lengths - 1).to(DTYPE))
    argmax = cky.argmax
    assert_close(argmax.flatten(1).sum(1), (2 * lengths - 1).to(DTYPE))
    assert ((argmax == 0) | (argmax == 1)).all()
    for spans, length in zip(tree_spans(argmax, lengths), lengths.tolist(), strict=True):
        assert is_binary_tree(spans, length)
    # The argmax is the best tree: its score is the max.
    assert_close(cky.score(argmax), cky.max)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_extreme_scores_stay_finite(dtype: torch.dtype) -> None:
    torch.manual_seed(7)
    lengths = torch.tensor([10, 4])
    scores = (torch.rand(2, 10, 10, 3, dtype=dtype) * 2 - 1) * 1e4
    cky = CKY(scores, lengths)
    assert cky.log_partition.isfinite().all()
    marginals = cky.marginals
    assert marginals.isfinite().all()
    assert_close(marginals.flatten(1).sum(1), (2 * lengths - 1).to(dtype))
    for spans, length in zip(tree_spans(cky.argmax, lengths), lengths.tolist(), strict=True):
        assert is_binary_tree(spans, length)


def test_float32_agrees_with_float64() -> None:
    torch.manual_seed(8)
    scores = torch.randn(3, 9, 9, 4, dtype=DTYPE)
    lengths = torch.tensor([9, 5, 2])
    single, double = CKY(scores.float(), lengths), CKY(scores, lengths)
    assert single.log_partition.dtype == torch.float32
    assert_close(single.log_partition, double.log_partition.float())
    assert_close(single.marginals, double.marginals.float(), atol=1e-5, rtol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_agrees_with_cpu() -> None:
    torch.manual_seed(9)
    scores = torch.randn(3, 7, 7, 4, dtype=DTYPE)
    lengths = torch.tensor([7, 3, 1])
    cpu, gpu = CKY(scores, lengths), CKY(scores.cuda(), lengths.cuda())
    assert_close(gpu.log_partition.cpu(), cpu.log_partition)
    assert_close(gpu.marginals.cpu(), cpu.marginals)
    assert_close(gpu.argmax.cpu(), cpu.argmax)


# ---------------------------------------------------------------------- errors


def test_nan_scores_raise() -> None:
    scores = torch.zeros(1, 3, 3, 2)
    scores[0, 0, 2, 1] = math.nan
    with pytest.raises(ValueError, match="NaN"):
        CKY(scores)


@pytest.mark.parametrize("lengths", [[0, 3], [3, 4], [3], [-1, 2]])
def test_bad_lengths_raise(lengths: list[int]) -> None:
    with pytest.raises(ValueError, match="lengths"):
        CKY(torch.zeros(2, 3, 3, 2), torch.tensor(lengths))


@pytest.mark.parametrize("shape", [(2, 3, 3), (2, 3, 4, 2), (2, 0, 0, 2), (2, 3, 3, 0)])
def test_bad_score_shapes_raise(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="CKY scores"):
        CKY(torch.zeros(shape))


# ---------------------------------------------------------------------- conversions


def test_spans_tensor_marks_inclusive_cells() -> None:
    parts = spans_tensor([[(1, 0, 3), (0, 0, 1)], []], n=3, n_labels=2, dtype=DTYPE)
    assert parts.shape == (2, 3, 3, 2) and parts.dtype == DTYPE
    assert parts[0, 0, 2, 1] == 1 and parts[0, 0, 0, 0] == 1
    assert parts.sum() == 2
    with pytest.raises(ValueError, match="item 1"):
        spans_tensor([[], [(0, 1, 1)]], n=3, n_labels=2)
    with pytest.raises(ValueError, match="item 0"):
        spans_tensor([[(2, 0, 1)]], n=3, n_labels=2)
    with pytest.raises(ValueError, match="item 0"):
        spans_tensor([[(0, 0, 4)]], n=3, n_labels=2)


def test_spans_tensor_and_tree_spans_round_trip() -> None:
    span_lists = [
        [(2, 0, 4), (0, 0, 1), (1, 1, 4), (0, 1, 3), (0, 1, 2), (1, 2, 3), (0, 3, 4)],
        [(1, 0, 2), (0, 0, 1), (2, 1, 2)],
        [(0, 0, 1)],
    ]
    parts = spans_tensor(span_lists, n=4, n_labels=3)
    assert tree_spans(parts, torch.tensor([4, 2, 1])) == span_lists
    assert tree_spans(parts) == span_lists  # nothing lies past the lengths anyway


def test_tree_spans_is_pre_order_and_skips_padding_and_lower_triangle() -> None:
    parts = torch.zeros(1, 4, 4, 2)
    parts[0, 2, 3, 0] = parts[0, 0, 3, 1] = parts[0, 0, 1, 0] = parts[0, 0, 1, 1] = 1
    parts[0, 3, 1, 0] = 1  # i > j: ignored
    assert tree_spans(parts) == [[(1, 0, 4), (0, 0, 2), (1, 0, 2), (0, 2, 4)]]
    assert tree_spans(parts, [2]) == [[(0, 0, 2), (1, 0, 2)]]


def test_spans_to_trees_builds_the_brackets() -> None:
    labels = ["S", "NP", "VP", "DT", "NN", "VBD"]
    words = [["the", "cat", "sat"], ["dogs"]]
    spans = [
        [(0, 0, 3), (1, 0, 2), (3, 0, 1), (4, 1, 2), (5, 2, 3)],
        [(4, 0, 1)],
    ]
    parts = spans_tensor(spans, n=3, n_labels=len(labels))
    trees = spans_to_trees(parts, torch.tensor([3, 1]), words, labels)
    assert [t.to_brackets() for t in trees] == [
        "(S (NP (DT the) (NN cat)) (VBD sat))",
        "(NN dogs)",
    ]


def test_spans_to_trees_drops_the_empty_label_and_wraps_in_root() -> None:
    labels = ["<empty>", "NP", "VP", "S"]
    words = [["a", "b", "c", "d"], ["e", "f"]]
    spans = [
        # The root is "no constituent": the rest is wrapped in the root label.
        [(0, 0, 4), (1, 0, 2), (0, 0, 1), (0, 1, 2), (2, 2, 4), (0, 2, 3), (0, 3, 4)],
        [(3, 0, 2), (0, 0, 1), (0, 1, 2)],
    ]
    parts = spans_tensor(spans, n=4, n_labels=len(labels))
    trees = spans_to_trees(parts, [4, 2], words, labels, empty_label="<empty>")
    assert [t.to_brackets() for t in trees] == ["(TOP (NP a b) (VP c d))", "(S e f)"]
    trees = spans_to_trees(parts, [4, 2], words, labels, empty_label="<empty>", root_label="ROOT")
    assert trees[0].to_brackets() == "(ROOT (NP a b) (VP c d))"
    # Without an empty label every span is a node, the one-word ones pre-terminals.
    trees = spans_to_trees(parts, [4, 2], words, labels)
    assert [t.to_brackets() for t in trees] == [
        "(<empty> (NP (<empty> a) (<empty> b)) (VP (<empty> c) (<empty> d)))",
        "(S (<empty> e) (<empty> f))",
    ]


def test_spans_to_trees_of_argmax_is_a_binary_tree() -> None:
    torch.manual_seed(10)
    cky = CKY(torch.randn(1, 5, 5, 2, dtype=DTYPE))
    (tree,) = spans_to_trees(cky.argmax, None, [list("abcde")], ["X", "Y"])
    assert tree.leaves() == list("abcde")
    nodes = list(tree.subtrees())
    assert len(nodes) == 9
    assert all(node.is_preterminal() or len(node.children) == 2 for node in nodes)


def test_spans_to_trees_rejects_wrong_words() -> None:
    parts = spans_tensor([[(0, 0, 2)], [(0, 0, 1)]], n=2, n_labels=1)
    with pytest.raises(ValueError, match="item 1"):
        spans_to_trees(parts, [2, 1], [["a", "b"], ["c", "d"]], ["X"])
    with pytest.raises(ValueError, match="word lists"):
        spans_to_trees(parts, [2, 1], [["a", "b"]], ["X"])
    with pytest.raises(ValueError, match="label names"):
        spans_to_trees(parts, [2, 1], [["a", "b"], ["c"]], ["X", "Y"])


LABELS = st.sampled_from(["S", "NP", "VP", "PP", "X"])
TAGS = st.sampled_from(["DT", "NN", "VB", "X"])
WORDS = st.text(alphabet="abxyz", min_size=1, max_size=3)
VOCABULARY = ["S", "NP", "VP", "PP", "X", "DT", "NN", "VB"]


@settings(max_examples=100)
@given(binary_trees(LABELS, TAGS, WORDS))
def test_binary_tree_round_trips_through_the_chart(tree: Tree) -> None:
    words = tree.leaves()
    spans = [(VOCABULARY.index(label), start, end) for label, start, end in tree.spans(True)]
    parts = spans_tensor([spans], n=len(words) + 1, n_labels=len(VOCABULARY))
    assert tree_spans(parts, [len(words)]) == [spans]
    (back,) = spans_to_trees(parts, [len(words)], [words], VOCABULARY)
    assert back == tree


def test_infinite_scores_in_real_cells_are_refused_as_for_every_structure() -> None:
    scores = torch.zeros(2, 3, 3, 2, dtype=DTYPE)
    for value in (torch.inf, -torch.inf):
        bad = scores.clone()
        bad[0, 0, 2, 1] = value
        with pytest.raises(ValueError, match="finite in real cells"):
            CKY(bad, torch.tensor([3, 2]))
    padded = scores.clone()
    padded[1, :, 2] = torch.inf  # past the second item's 2 words: never read
    assert torch.isfinite(CKY(padded, torch.tensor([3, 2])).log_partition).all()


# ---------------------------------------------------------------------- the fast path


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e3])
@pytest.mark.parametrize(("n", "n_labels"), [(1, 3), (2, 1), (7, 4)])
def test_fast_passes_match_the_autograd_reference(scale: float, n: int, n_labels: int) -> None:
    # The hand-written passes (inside with its outside pass, Viterbi with backtracking)
    # against autograd through ``_inside``, which the brute-force tests pin down; scale 1e3
    # takes the per-cell label shift, the others one shift for the batch.
    torch.manual_seed(11)
    lengths = torch.tensor([n, max(1, n - 3), 1])
    scores = (torch.randn(3, n, n, n_labels, dtype=DTYPE) * scale).requires_grad_()
    cky = CKY(scores, lengths)
    reference = cky._inside(scores, LogSemiring)
    assert_close(cky.log_partition, reference)
    (expected,) = torch.autograd.grad(reference.sum(), scores)
    (marginals,) = torch.autograd.grad(cky.log_partition.sum(), scores)
    assert_close(marginals, expected)
    best = cky._inside(scores, MaxSemiring)
    (expected_argmax,) = torch.autograd.grad(best.sum(), scores)
    assert_close(cky.argmax, expected_argmax)
    assert_close(cky.max, best)


def test_fast_backward_runs_twice_with_retain_graph() -> None:
    torch.manual_seed(12)
    scores = torch.randn(2, 6, 6, 3, dtype=DTYPE, requires_grad=True)
    log_z = CKY(scores, torch.tensor([6, 4])).log_partition.sum()
    (first,) = torch.autograd.grad(log_z, scores, retain_graph=True)
    (second,) = torch.autograd.grad(log_z, scores)
    assert_close(first, second)


def test_argmax_breaks_ties_into_one_tree() -> None:
    # Every tree and label scores 0: still one binary tree with one label per span.
    argmax = CKY(torch.zeros(2, 6, 6, 3), torch.tensor([6, 3])).argmax
    assert ((argmax == 0) | (argmax == 1)).all()
    for spans, length in zip(tree_spans(argmax, [6, 3]), [6, 3], strict=True):
        assert is_binary_tree(spans, length)
