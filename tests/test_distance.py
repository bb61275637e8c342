"""Syntactic distances (Shen et al. 2018) and the tree they give back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import DEEP, binary_trees, left_branching, right_branching, trees
from treeattn.trees import (
    Tree,
    format_tree,
    syntactic_distances,
    to_dependency,
    tree_from_distances,
)

SETTINGS = settings(max_examples=100)

LABELS = st.sampled_from(["S", "NP", "VP", "X"])
TAGS = st.sampled_from(["NN", "DT", "X"])
WORDS = st.sampled_from(["a", "b", "c", "the", "."])
TREES = trees(LABELS, TAGS, WORDS)
# Every node but the pre-terminals has exactly two children.
BINARY_TREES = binary_trees(LABELS, TAGS, WORDS)

PAPER = "(S I (VP swim (PP across (NP the river))) .)"


def lca_heights(tree: Tree) -> list[int]:
    """Reference: for each adjacent pair, search all nodes for the lowest that holds both."""
    nodes = list(zip(tree.spans(include_preterminals=True), tree.subtrees(), strict=True))
    out = []
    for i in range(len(tree.leaves()) - 1):
        holding = [node for (_, start, end), node in nodes if start <= i and i + 1 < end]
        out.append(holding[-1].height())  # pre-order: the last ancestor found is the lowest
    return out


def relabel(tree: Tree, label: str) -> Tree:
    if tree.is_preterminal():
        return tree.copy()
    return Tree(label, [c if isinstance(c, str) else relabel(c, label) for c in tree.children])


def wide_spans(tree: Tree) -> set[tuple[int, int]]:
    return {(i, j) for i, j in tree.unlabeled_spans() if j - i > 1}


def test_paper_example() -> None:
    assert syntactic_distances(Tree.parse(PAPER)) == [4, 3, 2, 1, 4]
    tagged = Tree.parse(
        "(S (NP (PRP I)) (VP (VBP swim) (PP (IN across) (NP (DT the) (NN river)))) (. .))"
    )
    assert syntactic_distances(tagged) == [4, 3, 2, 1, 4]


def test_paper_example_back_to_a_tree() -> None:
    tree = Tree.parse(PAPER)
    rebuilt = tree_from_distances(tree.leaves(), [4, 3, 2, 1, 4])
    # Ties split at the leftmost maximum: "I" first, then the VP against ".".
    assert rebuilt.to_brackets() == "(X I (X (X swim (X across (X the river))) .))"
    assert wide_spans(tree) <= wide_spans(rebuilt)


def test_ties_split_leftmost_and_tags() -> None:
    assert tree_from_distances(list("abc"), [1, 1]).to_brackets() == "(X a (X b c))"
    assert tree_from_distances(list("abc"), [2, 1]).to_brackets() == "(X a (X b c))"
    assert tree_from_distances(list("abc"), [1, 2]).to_brackets() == "(X (X a b) c)"
    assert tree_from_distances(["a", "b"], [0.3], label="S", tags=["DT", ""]).to_brackets() == (
        "(S (DT a) b)"
    )
    assert tree_from_distances(["a"], []).to_brackets() == "(X a)"
    assert tree_from_distances(["a"], [], tags=["NN"]).to_brackets() == "(NN a)"
    assert syntactic_distances(Tree.parse("(NN a)")) == []


def test_bad_lengths() -> None:
    with pytest.raises(ValueError, match="2 distances for 2 words"):
        tree_from_distances(["a", "b"], [1, 2])
    with pytest.raises(ValueError, match="no words"):
        tree_from_distances([], [])
    with pytest.raises(ValueError, match="tags"):
        tree_from_distances(["a", "b"], [1], tags=["NN"])


def test_nan_distance_is_an_error() -> None:
    nan = float("nan")
    with pytest.raises(ValueError, match=r"distances\[2\] is NaN"):
        tree_from_distances(list("abcd"), [1.0, 2.0, nan])
    with pytest.raises(ValueError, match=r"distances\[0\] is NaN"):
        tree_from_distances(["a", "b"], [nan])
    # Infinities still order: the split goes at the largest.
    assert tree_from_distances(list("abc"), [float("inf"), 1.0]).to_brackets() == "(X a (X b c))"


@pytest.mark.parametrize("build", [right_branching, left_branching], ids=["right", "left"])
def test_long_sentences_give_trees_that_every_method_walks(build) -> None:
    deep = build(DEEP)
    words, tags = deep.leaves(), deep.tags()
    distances = syntactic_distances(deep)
    # Right-branching: heights fall from the left; left-branching: they rise.
    steps = range(DEEP - 1, 0, -1) if build is right_branching else range(1, DEEP)
    assert distances == list(steps)
    rebuilt = tree_from_distances(words, distances, tags=tags)
    assert rebuilt == deep  # the deep tree's methods, on a tree built from distances
    assert rebuilt.copy() == deep and rebuilt.height() == DEEP - 1
    assert len(rebuilt.spans()) == DEEP - 1
    assert Tree.parse(format_tree(rebuilt, indent=1)) == deep
    assert len(to_dependency(rebuilt).heads) == DEEP


@SETTINGS
@given(TREES)
def test_distances_are_lowest_common_ancestor_heights(tree: Tree) -> None:
    distances = syntactic_distances(tree)
    assert len(distances) == len(tree.leaves()) - 1
    assert distances == lca_heights(tree)
    assert all(1 <= d <= tree.height() for d in distances)


@SETTINGS
@given(BINARY_TREES)
def test_binary_tree_round_trip_is_exact(tree: Tree) -> None:
    rebuilt = tree_from_distances(tree.leaves(), syntactic_distances(tree), tags=tree.tags())
    assert rebuilt.unlabeled_spans() == tree.unlabeled_spans()
    assert rebuilt.pos() == tree.pos()
    assert rebuilt == relabel(tree, "X")
    plain = tree_from_distances(tree.leaves(), syntactic_distances(tree))
    assert plain.unlabeled_spans() == tree.unlabeled_spans() or tree.is_preterminal()


@SETTINGS
@given(TREES)
def test_any_tree_gives_a_binarisation_of_itself(tree: Tree) -> None:
    rebuilt = tree_from_distances(tree.leaves(), syntactic_distances(tree))
    assert all(len(node.children) == 2 for node in rebuilt.subtrees()) or len(tree) == 1
    assert wide_spans(tree) <= wide_spans(rebuilt)


@SETTINGS
@given(st.lists(st.integers(min_value=0, max_value=5), min_size=0, max_size=30))
def test_distances_to_tree_and_back_keep_the_order(distances: list[int]) -> None:
    words = [f"w{i}" for i in range(len(distances) + 1)]
    rebuilt = tree_from_distances(words, distances)
    assert rebuilt.leaves() == words
    again = syntactic_distances(rebuilt)
    # The tree's heights need not equal the input, but they split in the same places.
    assert tree_from_distances(words, again) == rebuilt
