"""Tree reading and writing: brackets, spans, treebank files, errors with positions, drawing."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import DEEP, left_branching, right_branching, treebank_shaped, trees
from treeattn.errors import FormatError
from treeattn.trees import (
    Tree,
    detect_one_per_line,
    format_tree,
    iter_parse,
    iter_parse_with_positions,
    read_treebank,
    read_treebank_entries,
    write_treebank,
)

SETTINGS = settings(max_examples=150)

LABELS = st.sampled_from(["S", "NP", "VP", "PP", "X", "NP-SBJ-1", "PP-LOC=2", "-LRB-", "0"])
WORDS = st.text(alphabet="abxyz.,'$*-1", min_size=1, max_size=3)
TREES = trees(LABELS, LABELS, WORDS)


def has_unary_chain(tree: Tree) -> bool:
    """A node whose only child is a phrase: its span repeats, so spans cannot show it."""
    return any(
        len(node.children) == 1 and isinstance(node.children[0], Tree) for node in tree.subtrees()
    )


# ---------------------------------------------------------------------- properties


@SETTINGS
@given(TREES)
def test_brackets_round_trip(tree: Tree) -> None:
    text = tree.to_brackets()
    assert Tree.parse(text) == tree
    assert Tree.parse(text).to_brackets() == text


@SETTINGS
@given(st.lists(TREES, min_size=1, max_size=4))
def test_several_trees_on_several_lines_keep_their_positions(trees: list[Tree]) -> None:
    text = "\n\n".join("  " + tree.to_brackets() for tree in trees) + "\n"
    found = list(iter_parse_with_positions(text, "f.mrg", first_line=10))
    assert [tree for tree, _, _ in found] == trees
    assert [(line, column) for _, line, column in found] == [
        (10 + 2 * k, 3) for k in range(len(trees))
    ]


@SETTINGS
@given(TREES)
def test_spans_round_trip(tree: Tree) -> None:
    assert Tree.from_spans(tree.leaves(), tree.spans(), tree.tags()) == tree


@SETTINGS
@given(TREES)
def test_spans_are_nested_and_match_the_reparsed_tree(tree: Tree) -> None:
    n = len(tree.leaves())
    spans = tree.spans(include_preterminals=True)
    assert spans == Tree.parse(tree.to_brackets()).spans(include_preterminals=True)
    assert spans[0] == (tree.label, 0, n)
    for (_, i, j), (_, k, m) in itertools.combinations(spans, 2):
        assert 0 <= i < j <= n
        # Two constituents are disjoint or one holds the other, never crossing.
        assert j <= k or m <= i or (i <= k and m <= j) or (k <= i and j <= m)
    # Spans list the nodes in pre-order; pre-terminals are the width-one spans of tagged words.
    tags = tree.tags()
    preterminal_starts = []
    for (label, i, j), node in zip(spans, tree.subtrees(), strict=True):
        assert node.label == label
        if node.is_preterminal():
            assert j == i + 1 and tags[i] == label
            preterminal_starts.append(i)
    assert preterminal_starts == [i for i, tag in enumerate(tags) if tag]
    assert len(tree.spans()) == len(spans) - len(preterminal_starts)


@SETTINGS
@given(TREES)
def test_unlabeled_structure_comes_back_from_spans(tree: Tree) -> None:
    # Without unary chains and pre-terminals, the set of unlabeled spans is the structure.
    if has_unary_chain(tree) or tree.is_preterminal():
        return
    words = tree.leaves()
    spans = [("X", i, j) for i, j in sorted(tree.unlabeled_spans(), key=lambda s: (s[0], -s[1]))]
    rebuilt = Tree.from_spans(words, spans)
    assert rebuilt.unlabeled_spans() == tree.unlabeled_spans()
    assert len(list(rebuilt.subtrees())) == len(tree.spans())


@SETTINGS
@given(TREES)
def test_leaves_tags_depths_agree(tree: Tree) -> None:
    words = tree.leaves()
    assert [w for w, _ in tree.pos()] == words
    assert len(tree) == len(words) == len(tree.leaf_depths()) == len(tree.tags())
    assert all(depth >= 1 for depth in tree.leaf_depths())
    assert tree.copy() == tree and tree.copy() is not tree


@SETTINGS
@given(TREES, st.integers(min_value=20, max_value=90))
def test_format_tree_reads_back_and_keeps_to_width(tree: Tree, width: int) -> None:
    drawing = format_tree(tree, width=width)
    assert Tree.parse(drawing) == tree
    for line in drawing.splitlines():
        # Only an unbreakable piece (a pre-terminal or word, with closing brackets) overflows.
        if len(line) > width:
            assert line.strip().rstrip(")").count("(") <= 1, line


def test_format_tree_small_example() -> None:
    tree = Tree.parse("(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (NN mats)))))")
    assert format_tree(tree, width=200) == tree.to_brackets()
    assert format_tree(tree, width=45) == (
        "(S\n  (NP (DT The) (NN cat))\n  (VP (VBD sat) (PP (IN on) (NP (NN mats)))))"
    )
    # One column less and the closing bracket of S no longer fits after VP.
    assert format_tree(tree, width=44).splitlines()[2:] == [
        "  (VP",
        "    (VBD sat)",
        "    (PP (IN on) (NP (NN mats)))))",
    ]


def test_only_ascii_whitespace_separates_tokens() -> None:
    # SST has "8\xa01\/2": a no-break space inside one word.
    text = "(2 (2 8\xa01\\/2)\t(2 x)\r\n)"
    tree = Tree.parse(text)
    assert tree.leaves() == ["8\xa01\\/2", "x"]
    assert Tree.parse(tree.to_brackets()) == tree


def test_from_spans_rejects_crossing_and_missing_root() -> None:
    with pytest.raises(ValueError, match="crosses"):
        Tree.from_spans(list("abc"), [("S", 0, 3), ("A", 0, 2), ("B", 1, 3)])
    with pytest.raises(ValueError, match="covers all words"):
        Tree.from_spans(list("abc"), [("A", 0, 2)])
    with pytest.raises(ValueError, match="outside"):
        Tree.from_spans(list("abc"), [("S", 0, 4)])


# ---------------------------------------------------------------------- bad input


def error_of(text: str) -> FormatError:
    with pytest.raises(FormatError) as caught:
        list(iter_parse(text, "bad.txt", first_line=7))
    return caught.value


def test_unbalanced_open_bracket_names_the_unclosed_one() -> None:
    error = error_of("(S (NP a)\n  (VP (V b)\n")
    # The innermost bracket left open is reported.
    assert (error.source, error.line, error.column) == ("bad.txt", 8, 3)
    assert str(error).startswith("bad.txt:8:3: unbalanced '(': 2 bracket(s) never closed")


def test_unbalanced_close_bracket() -> None:
    error = error_of("(S (NP a))\n(S b))")
    assert (error.line, error.column) == (8, 6)
    assert "unbalanced ')'" in str(error)


def test_missing_label() -> None:
    error = error_of("(S (NP a)\n   ( (V b)))")
    assert (error.line, error.column) == (8, 4)
    assert "bad.txt:8:4: missing label" in str(error)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("(S ( a b))", 7, 4),  # whitespace between "(" and a word is no label
        ("(S (NP x)\n  (\tVP b))", 8, 3),
        ("( a b)", 7, 1),  # an unlabeled bracket at the top holds trees, not words
        ("(S x)\n( (S a) b)", 8, 1),
        ("(\nS a)", 7, 1),
    ],
)
def test_a_label_follows_its_bracket(text: str, line: int, column: int) -> None:
    error = error_of(text)
    assert (error.source, error.line, error.column) == ("bad.txt", line, column)
    assert "missing label" in str(error)


def test_only_the_outer_bracket_of_trees_may_be_unlabeled() -> None:
    assert Tree.parse("( (S a) )").label == ""
    assert Tree.parse("((S a) (S b))").children == [Tree("S", ["a"]), Tree("S", ["b"])]
    assert Tree.parse("(S\n  (NP a))") == Tree("S", [Tree("NP", ["a"])])


def test_mrg_layout_rejects_a_tree_left_open() -> None:
    def mrg_error(text: str) -> FormatError:
        with pytest.raises(FormatError) as caught:
            list(iter_parse(text, "w.mrg", first_line=1, mrg_layout=True))
        return caught.value

    # Without the layout rule the second tree silently becomes part of the first.
    joined = "(S (NP a) (VP b)\n(S (NP c) (VP d)))"
    assert len(list(iter_parse(joined))) == 1
    error = mrg_error(joined)
    assert (error.line, error.column) == (2, 1)
    assert "the tree opened at line 1, column 1 is not closed" in str(error)
    # A blank line inside a tree that the next line does not continue.
    for text in ("(S (NP a)\n\n(VP b))\n", "( (S (NP a)\n  \n\n)\n)", "(S (NP a)\n\n"):
        error = mrg_error(text)
        assert (error.source, error.line, error.column) == ("w.mrg", 2, None), text
        assert "blank line inside a tree" in str(error) and "line 1, column 1" in str(error)
    # A blank line followed by an indented line continues the tree (seven PTB trees do),
    # and blank lines between trees are fine.
    text = "( (S (NP a)\n\n    (VP b)))\n\n\n( (S c))\n"
    found = list(iter_parse_with_positions(text, mrg_layout=True))
    assert [(t.to_brackets(), line) for t, line, _ in found] == [
        ("((S (NP a) (VP b)))", 1),
        ("((S c))", 6),
    ]


def test_empty_node_and_stray_word() -> None:
    assert "no children" in str(error_of("(S (NP a) (VP))"))
    error = error_of("(S a) b")
    assert (error.line, error.column, "outside any bracket" in str(error)) == (7, 7, True)


def test_check_leaves_names_file_and_line() -> None:
    tree = Tree.parse("(S (NP the cat) (VP sat))")
    tree.check_leaves(["the", "cat", "sat"])
    with pytest.raises(FormatError, match=r"^corpus\.txt:12: leaf 2 is 'cat' but token 2 is 'dog'"):
        tree.check_leaves(["the", "dog", "sat"], "corpus.txt", 12)
    with pytest.raises(FormatError, match=r"^corpus\.txt:3: tree has 3 leaves but 2 tokens"):
        tree.check_leaves(["the", "cat"], "corpus.txt", 3)


# ---------------------------------------------------------------------- treebank files

SST_LINES = ["(3 (2 It) (3 (3 works) (2 .)))", "(1 (2 Not) (1 (0 bad)))"]
MRG_TEXT = """
( (S
    (NP-SBJ (NNP John) )
    (VP (VBD left) ))
)
( (NP (NN Fine) (. .) ))
((FRAG (-NONE- *) (NN x)))
"""


def test_one_per_line_file_round_trips_exactly(tmp_path) -> None:
    path = tmp_path / "trees.txt"
    path.write_text("\n".join(SST_LINES) + "\n")
    trees = read_treebank(path)
    assert [t.to_brackets() for t in trees] == SST_LINES
    assert read_treebank(path, one_per_line=True) == trees
    path.write_text("\n".join(SST_LINES))  # no newline at the end is fine as well
    assert read_treebank(path) == trees


def test_empty_line_in_one_per_line_file(tmp_path) -> None:
    path = tmp_path / "trees.txt"
    path.write_text(SST_LINES[0] + "\n\n" + SST_LINES[1] + "\n")
    with pytest.raises(FormatError, match=r"trees\.txt:2:1: empty line") as caught:
        read_treebank(path)
    assert caught.value.source == str(path) and caught.value.line == 2
    path.write_text(SST_LINES[0] + "\n" + SST_LINES[1] + "\n\n")  # blank lines at the end: fine
    assert len(read_treebank(path)) == 2


def test_errors_in_a_one_per_line_file_name_file_line_column(tmp_path) -> None:
    path = tmp_path / "sst.txt"
    path.write_text(SST_LINES[0] + "\n(1 (2 Not) (1 (0 bad))\n")
    with pytest.raises(FormatError, match=r"sst\.txt:2:1: unbalanced '\('"):
        read_treebank(path, one_per_line=True)
    path.write_text(SST_LINES[0] + "\n(1 (2 Not) ( (0 bad)))\n")
    with pytest.raises(FormatError, match=r"sst\.txt:2:12: missing label"):
        read_treebank(path)
    path.write_text(SST_LINES[0] + "\n(1 (2 Not)) (1 (0 bad)))\n")
    with pytest.raises(FormatError, match=r"sst\.txt:2:24: unbalanced '\)'"):
        read_treebank(path)
    path.write_text(SST_LINES[0] + "\n(2 Not) (0 bad)\n")
    with pytest.raises(FormatError, match=r"sst\.txt:2:9: a second tree"):
        read_treebank(path)


def test_mrg_layout_is_detected_and_unwrapped(tmp_path) -> None:
    path = tmp_path / "wsj_0001.mrg"
    path.write_text(MRG_TEXT)
    entries = read_treebank_entries(path)
    assert [e.tree.to_brackets() for e in entries] == [
        "(S (NP-SBJ (NNP John)) (VP (VBD left)))",
        "(NP (NN Fine) (. .))",
        "(FRAG (-NONE- *) (NN x))",
    ]
    assert [(e.source, e.line) for e in entries] == [(str(path), line) for line in (2, 6, 7)]
    kept = read_treebank(path, unwrap=False)
    assert [t.label for t in kept] == ["", "", ""]
    # Same layout without the .mrg suffix is detected from the brackets.
    other = tmp_path / "trees.txt"
    other.write_text(MRG_TEXT)
    assert not detect_one_per_line(MRG_TEXT)
    assert read_treebank(other) == [e.tree for e in entries]


def test_multi_line_errors_name_the_line(tmp_path) -> None:
    path = tmp_path / "wsj_0002.mrg"
    path.write_text(MRG_TEXT.replace("(VBD left) ))", "(VBD left) )"))
    with pytest.raises(FormatError, match=r"wsj_0002\.mrg:6:1: .* line 2, column 1 is not closed"):
        read_treebank(path)
    # A labeled tree at the start of a line is the next tree too: never a child.
    path.write_text("(S (NP a) (VP b)\n(S (NP c) (VP d)))\n")
    with pytest.raises(FormatError, match=r"wsj_0002\.mrg:2:1: .* line 1, column 1 is not closed"):
        read_treebank(path)
    path.write_text(MRG_TEXT.replace("    (VP (VBD left) ))", "\n(VP (VBD left) ))"))
    with pytest.raises(FormatError, match=r"wsj_0002\.mrg:4: blank line inside a tree"):
        read_treebank(path)
    path.write_text(MRG_TEXT.replace("(NN Fine)", "(NN Fine))"))
    with pytest.raises(FormatError, match=r"wsj_0002\.mrg:6:25: unbalanced '\)'"):
        read_treebank(path)


def test_detect_one_per_line() -> None:
    assert detect_one_per_line("\n".join(SST_LINES) + "\n")
    assert detect_one_per_line("(A a)\n\n(B b)\n")  # then the empty line is an error
    assert not detect_one_per_line("(A a\n b)\n")
    assert not detect_one_per_line("(A a) b\n")
    assert not detect_one_per_line("")


@settings(max_examples=40)
@given(st.lists(TREES.map(treebank_shaped), min_size=1, max_size=5))
def test_write_then_read(tmp_path_factory, trees: list[Tree]) -> None:
    path = tmp_path_factory.mktemp("bank") / "out.txt"
    write_treebank(path, trees)
    text = path.read_text()
    assert text.endswith("\n") and text.count("\n") == len(trees)
    assert read_treebank(path) == trees


def test_files_that_are_not_utf8_name_the_position(tmp_path) -> None:
    path = tmp_path / "bad.mrg"
    path.write_bytes(b"( (S (NN a))\r\n  )\n( (S (NN caf\xe9)) )\n")
    with pytest.raises(FormatError, match=r"bad\.mrg:3:13: not valid UTF-8") as caught:
        read_treebank(path)
    assert (caught.value.source, caught.value.line, caught.value.column) == (str(path), 3, 13)
    path = tmp_path / "bad.txt"
    path.write_bytes("(2 (2 caf\u00e9) (2 x))\n(2 \xff)\n".encode("latin-1"))
    with pytest.raises(FormatError, match=r"bad\.txt:1:10: not valid UTF-8"):
        read_treebank(path)


def test_write_rejects_unreadable_trees(tmp_path) -> None:
    with pytest.raises(ValueError, match="word 'a b'"):
        write_treebank(tmp_path / "x.txt", [Tree("S", ["a b"])])
    with pytest.raises(ValueError, match="label"):
        write_treebank(tmp_path / "x.txt", [Tree("S", [Tree("N(P", ["a"])])])
    assert not (tmp_path / "x.txt").exists()


# ---------------------------------------------------------------------- deep trees


@pytest.fixture(params=[right_branching, left_branching], ids=["right", "left"])
def deep(request) -> Tree:
    """A 3000-word binary tree, 2999 phrases deep: far past the recursion limit."""
    return request.param(DEEP)


def test_deep_tree_copy_and_equality(deep: Tree) -> None:
    copy = deep.copy()
    assert copy == deep and copy is not deep
    assert not set(map(id, copy.subtrees())) & set(map(id, deep.subtrees()))
    bottom = list(copy.subtrees())[-1]  # the last pre-terminal, 2999 levels down
    bottom.children[0] = "changed"
    assert copy != deep and deep != copy
    bottom.label = "changed"
    assert copy != deep
    assert Tree.parse(deep.to_brackets()) == deep
    assert hash(deep.copy()) == hash(deep)


def test_deep_tree_height_and_spans(deep: Tree) -> None:
    assert deep.height() == DEEP - 1
    spans = deep.spans()
    assert len(spans) == DEEP - 1 and spans[0] == ("X", 0, DEEP)
    if deep.children[0] == Tree("NN", ["w0"]):  # right-branching
        assert spans == [("X", i, DEEP) for i in range(DEEP - 1)]
    else:
        assert spans == [("X", 0, DEEP - i) for i in range(DEEP - 1)]
    assert len(deep.spans(include_preterminals=True)) == 2 * DEEP - 1
    assert deep.leaves() == [f"w{i}" for i in range(DEEP)]
    assert max(deep.leaf_depths()) == DEEP


def test_deep_tree_drawing_reads_back(deep: Tree) -> None:
    drawing = format_tree(deep, width=40, indent=1)
    assert len(drawing.splitlines()) == 2 * DEEP - 1  # every phrase is broken
    assert Tree.parse(drawing) == deep


def test_a_word_beside_a_phrase_names_its_position(tmp_path) -> None:
    ptb = tmp_path / "untagged.txt"
    ptb.write_text("(S (NP the (NN cat)))\n")
    with pytest.raises(FormatError, match=r"untagged\.txt:1:8: word 'the' has no bracket"):
        read_treebank(ptb)
    sst = tmp_path / "sst.txt"
    sst.write_text("(3 (2 a) (3 this (3 movie)))\n")
    with pytest.raises(FormatError, match=r"sst\.txt:1:13: word 'this' has no bracket"):
        read_treebank(sst)
    with pytest.raises(ValueError, match="word 'a' has no bracket of its own"):
        write_treebank(tmp_path / "out.txt", [Tree.parse("(S a (NN b))")])
