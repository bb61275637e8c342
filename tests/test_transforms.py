"""Clean-up and normal forms: empty elements, function tags, unary chains, binarisation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import DEEP, left_branching, right_branching, trees
from treeattn.trees import (
    Tree,
    binarize,
    clean_ptb,
    collapse_unary,
    prune,
    remove_empty_elements,
    remove_punctuation,
    strip_function_tags,
    strip_label,
    unbinarize,
    unwrap_root,
)

SETTINGS = settings(max_examples=80)

# As in PTB, -NONE- only ever tags a word.
LABELS = st.sampled_from(["S", "NP", "VP", "NP-SBJ-1", "PP-LOC=2", "S-TPC-1", "-LRB-"])
TAGS = st.sampled_from(["NN", "-NONE-", ",", "-NONE-", "PRP$"])
WORDS = st.sampled_from(["a", "b", "*T*-1", "0", "the"])
# The root may be wider, so that binarisation makes chains of three and more added nodes.
TREES = trees(LABELS, TAGS, WORDS, max_root_children=7)

TRACE_TREE = Tree.parse(
    "( (S (NP-SBJ-1 (NNP John)) (VP (VBD tried) (S (NP-SBJ (-NONE- *-1)) (VP (TO to)"
    " (VP (VB leave) (NP (-NONE- *T*-2)))))) (. .)) )"
)


def non_empty_words(tree: Tree) -> list[str]:
    return [word for word, tag in tree.pos() if tag != "-NONE-"]


def has_empty_element(tree: Tree) -> bool:
    return any(node.label == "-NONE-" for node in tree.subtrees())


# ---------------------------------------------------------------------- hand examples


def test_strip_label() -> None:
    cases = {
        "NP-SBJ-1": "NP",
        "PP-LOC=2": "PP",
        "NP=3": "NP",
        "S-TPC-1": "S",
        "ADVP-PRD-LOC=3": "ADVP",
        "NP": "NP",
        "PRP$": "PRP$",
        "PRT|ADVP": "PRT|ADVP",
        "-NONE-": "-NONE-",
        "-LRB-": "-LRB-",
        "-RRB-": "-RRB-",
        "": "",
    }
    assert {label: strip_label(label) for label in cases} == cases
    # EVALB's cut (modify_label in evalb.c) also cuts at position 0.
    evalb_cut = {"NP-SBJ-1": "NP", "NP=2": "NP", "-NONE-": "", "=X": "", "PRP$": "PRP$", "": ""}
    assert {label: strip_label(label, keep_dash_labels=False) for label in evalb_cut} == evalb_cut


def test_clean_ptb_removes_traces_and_function_tags() -> None:
    cleaned = clean_ptb(TRACE_TREE)
    # The subject S's NP-SBJ and the object NP held only empty elements: both disappear.
    assert cleaned.to_brackets() == (
        "(S (NP (NNP John)) (VP (VBD tried) (S (VP (TO to) (VP (VB leave))))) (. .))"
    )
    assert cleaned.leaves() == non_empty_words(TRACE_TREE)


def test_remove_empty_elements_keeps_labels_and_other_nodes() -> None:
    tree = Tree.parse("(S (NP-SBJ (-NONE- *)) (VP (VB go) (-LRB- -LRB-) (S (-NONE- *U*))))")
    assert remove_empty_elements(tree).to_brackets() == "(S (VP (VB go) (-LRB- -LRB-)))"
    with pytest.raises(ValueError, match="only -NONE-"):
        remove_empty_elements(Tree.parse("(S (NP (-NONE- *)) (-NONE- *T*-1))"))


def test_remove_punctuation() -> None:
    tree = Tree.parse("(S (`` ``) (NP (NN cats)) (VP (VBP purr) (, ,) (ADVP ($ $))) (. .))")
    assert remove_punctuation(tree).to_brackets() == (
        "(S (NP (NN cats)) (VP (VBP purr) (ADVP ($ $))))"
    )


def test_collapse_unary_with_and_without_joined_labels() -> None:
    tree = Tree.parse("(S (VP (VP (VB go) (NP (PRP it)))) (NP (NN x)))")
    assert collapse_unary(tree, keep_joined_labels=True).to_brackets() == (
        "(S (VP+VP (VB go) (NP (PRP it))) (NP (NN x)))"
    )
    assert collapse_unary(tree).to_brackets() == "(S (VP (VB go) (NP (PRP it))) (NP (NN x)))"
    assert collapse_unary(tree, collapse_pos=True).to_brackets() == (
        "(S (VP (VB go) (PRP it)) (NN x))"
    )
    assert collapse_unary(tree, keep_joined_labels=True, collapse_pos=True).to_brackets() == (
        "(S (VP+VP (VB go) (NP+PRP it)) (NP+NN x))"
    )


def test_collapse_unary_chain_at_root_and_above_a_pos() -> None:
    chain = Tree.parse("(S (VP (NP (PRP it))))")
    assert collapse_unary(chain, keep_joined_labels=True).to_brackets() == "(S+VP+NP (PRP it))"
    assert collapse_unary(chain).to_brackets() == "(S (PRP it))"
    assert collapse_unary(chain, collapse_pos=True).to_brackets() == "(PRP it)"
    wrapped = Tree.parse("( (S (VP (VB go) (NP x))) )")
    assert collapse_unary(wrapped, keep_joined_labels=True).to_brackets() == (
        "(S+VP (VB go) (NP x))"
    )
    assert collapse_unary(wrapped).to_brackets() == "(S (VB go) (NP x))"


def test_binarize_examples() -> None:
    tree = Tree.parse("(NP (DT a) (JJ b) (JJ c) (NN d) e)")
    right = binarize(tree)
    left = binarize(tree, direction="left")
    assert right.to_brackets() == "(NP (DT a) (@NP (JJ b) (@NP (JJ c) (@NP (NN d) e))))"
    assert left.to_brackets() == "(NP (@NP (@NP (@NP (DT a) (JJ b)) (JJ c)) (NN d)) e)"
    assert unbinarize(right) == tree and unbinarize(left) == tree
    with pytest.raises(ValueError, match="marker"):
        binarize(Tree.parse("(S (@X a) b c)"))
    with pytest.raises(ValueError, match="direction"):
        binarize(tree, direction="up")  # type: ignore[arg-type]
    # A predicted tree whose root carries the marker still unbinarises.
    assert unbinarize(Tree.parse("(@S (@S a b) c)")).to_brackets() == "(S a b c)"


def test_unwrap_root() -> None:
    assert unwrap_root(Tree.parse("( (S a) )")).to_brackets() == "(S a)"
    several = Tree.parse("( (S a) (S b) )")
    assert unwrap_root(several) == several
    assert unwrap_root(Tree.parse("(S a)")).to_brackets() == "(S a)"


# ---------------------------------------------------------------------- properties


@SETTINGS
@given(TREES)
def test_remove_empty_elements_leaves_no_empty_constituent(tree: Tree) -> None:
    words = non_empty_words(tree)
    if not words:
        with pytest.raises(ValueError):
            remove_empty_elements(tree)
        return
    cleaned = remove_empty_elements(tree)
    assert not has_empty_element(cleaned)
    assert cleaned.leaves() == words
    assert all(node.children for node in cleaned.subtrees())
    assert remove_empty_elements(cleaned) == cleaned


@SETTINGS
@given(TREES)
def test_cleanup_is_idempotent_and_pure(tree: Tree) -> None:
    before = tree.to_brackets()
    stripped = strip_function_tags(tree)
    assert strip_function_tags(stripped) == stripped
    assert [strip_label(node.label) for node in tree.subtrees()] == [
        node.label for node in stripped.subtrees()
    ]
    if non_empty_words(tree):
        cleaned = clean_ptb(tree)
        assert clean_ptb(cleaned) == cleaned
        assert not has_empty_element(cleaned)
    results = [stripped, unwrap_root(tree), binarize(tree), unbinarize(tree)]
    for joined in (False, True):
        for collapse_pos in (False, True):
            collapsed = collapse_unary(tree, joined, collapse_pos)
            assert collapse_unary(collapsed, joined, collapse_pos) == collapsed
            results.append(collapsed)
    if non_empty_words(tree):
        results += [clean_ptb(tree), remove_empty_elements(tree)]
    assert tree.to_brackets() == before  # the input is never changed
    # ... and shares no node with a result, so changing a result cannot change it either.
    inputs = {id(node) for node in tree.subtrees()}
    for result in results:
        assert inputs.isdisjoint(id(node) for node in result.subtrees())


@SETTINGS
@given(TREES, st.booleans())
def test_collapse_unary_removes_chains_and_keeps_the_rest(tree: Tree, joined: bool) -> None:
    collapsed = collapse_unary(tree, keep_joined_labels=joined)
    for node in collapsed.subtrees():
        only = node.children[0] if len(node.children) == 1 else None
        # A single child left is a word or a pre-terminal: no phrase-over-phrase chain.
        assert only is None or isinstance(only, str) or only.is_preterminal()
    assert collapsed.pos() == tree.pos()
    assert collapsed.unlabeled_spans() == tree.unlabeled_spans()
    if joined:
        # Every original label survives inside some joined label.
        pieces = {p for node in collapsed.subtrees() for p in node.label.split("+")}
        assert {node.label for node in tree.subtrees()} <= pieces | {""}

    dropped = collapse_unary(tree, keep_joined_labels=joined, collapse_pos=True)
    for node in dropped.subtrees():
        assert not (len(node.children) == 1 and isinstance(node.children[0], Tree))
    assert dropped.leaves() == tree.leaves()


@SETTINGS
@given(TREES, st.sampled_from(["right", "left"]))
def test_binarize_unbinarize_exact(tree: Tree, direction: str) -> None:
    before = tree.to_brackets()
    binary = binarize(tree, direction=direction)  # type: ignore[arg-type]
    assert all(len(node.children) <= 2 for node in binary.subtrees())
    assert binary.pos() == tree.pos()
    assert tree.unlabeled_spans() <= binary.unlabeled_spans()
    assert unbinarize(binary) == tree
    assert tree.to_brackets() == before


# ---------------------------------------------------------------------- deep trees


@pytest.fixture(params=[right_branching, left_branching], ids=["right", "left"])
def deep(request) -> Tree:
    """A 3000-word binary tree, 2999 phrases deep: far past the recursion limit."""
    return request.param(DEEP)


def test_deep_prune_and_empty_elements(deep: Tree) -> None:
    assert prune(deep, lambda node: False) == deep
    last = f"w{DEEP - 1}"
    pruned = prune(deep, lambda node: node.children == [last])
    assert pruned is not None and pruned.leaves() == [f"w{i}" for i in range(DEEP - 1)]
    traced = deep.copy()
    bottom = list(traced.subtrees())[-1]  # the deepest pre-terminal
    bottom.label = "-NONE-"
    cleaned = remove_empty_elements(traced)
    assert len(cleaned.leaves()) == DEEP - 1 and not has_empty_element(cleaned)
    assert clean_ptb(traced) == cleaned


def test_deep_strip_function_tags(deep: Tree) -> None:
    tagged = deep.copy()
    for node in tagged.subtrees():
        node.label += "-SBJ=1"
    assert strip_function_tags(tagged) == deep
    assert strip_function_tags(deep) == deep


def test_deep_collapse_unary(deep: Tree) -> None:
    assert collapse_unary(deep) == deep  # no unary chain
    chain: Tree = Tree("NN", ["w"])
    for k in range(DEEP):
        chain = Tree(f"X{k}", [chain])
    assert collapse_unary(chain).to_brackets() == f"(X{DEEP - 1} (NN w))"
    joined = collapse_unary(chain, keep_joined_labels=True, collapse_pos=True)
    assert joined.label.count("+") == DEEP and joined.children == ["w"]


def test_deep_binarize_unbinarize(deep: Tree) -> None:
    for direction in ("right", "left"):
        assert binarize(deep, direction) == deep  # already binary
        assert unbinarize(deep) == deep
    flat = Tree("S", [Tree("NN", [f"w{i}"]) for i in range(DEEP)])
    for direction in ("right", "left"):
        binary = binarize(flat, direction)
        assert binary.height() == DEEP - 1  # a chain of 2998 added nodes under S
        assert unbinarize(binary) == flat
