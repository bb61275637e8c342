"""Dependency trees, CoNLL-U reading and writing, and head-rule conversion (no data needed)."""

import itertools
import random

import pytest

from tests.strategies import DEEP, left_branching, right_branching
from treeattn.errors import FormatError
from treeattn.trees.dependency import (
    ConlluRow,
    DependencyTree,
    parse_conllu,
    read_conllu,
    tree_problem,
    write_conllu,
)
from treeattn.trees.head_rules import find_head_child, to_dependency
from treeattn.trees.labels import strip_label
from treeattn.trees.tree import Tree

# A multi-word token (2-3 "don't"), an empty node (4.1) and a comment without "=".
SAMPLE = """\
# newdoc id = doc1
# sent_id = s1
# text = I don't know, he said.
# a comment without a value
1	I	I	PRON	PRP	Case=Nom|Number=Sing|Person=1|PronType=Prs	4	nsubj	4:nsubj	_
2-3	don't	_	_	_	_	_	_	_	_
2	do	do	AUX	VBP	Mood=Ind|Tense=Pres|VerbForm=Fin	4	aux	4:aux	_
3	n't	not	PART	RB	_	4	advmod	4:advmod	_
4	know	know	VERB	VB	VerbForm=Inf	7	ccomp	7:ccomp	SpaceAfter=No
4.1	know	know	VERB	VB	_	_	_	7:ccomp	CopyOf=4
5	,	,	PUNCT	,	_	7	punct	7:punct	_
6	he	he	PRON	PRP	Case=Nom|Gender=Masc	7	nsubj	7:nsubj	_
7	said	say	VERB	VBD	Tense=Past|VerbForm=Fin	0	root	0:root	SpaceAfter=No|Cxn=a=b
8	.	.	PUNCT	.	_	7	punct	7:punct	_

# sent_id = s2
1	Yes	yes	INTJ	UH	_	0	root	0:root	_

"""


# ---------------------------------------------------------------------- CoNLL-U


def test_read_sample_words_heads_relations():
    first, second = parse_conllu(SAMPLE)
    assert first.words == ["I", "do", "n't", "know", ",", "he", "said", "."]
    assert first.heads == [4, 4, 4, 7, 7, 7, 0, 7]
    assert first.relations == ["nsubj", "aux", "advmod", "ccomp", "punct", "nsubj", "root", "punct"]
    assert first.upos[1] == "AUX" and first.xpos[2] == "RB" and first.lemmas[2] == "not"
    assert first.misc[6] == "SpaceAfter=No|Cxn=a=b"
    assert first.metadata == {
        "newdoc id": "doc1",
        "sent_id": "s1",
        "text": "I don't know, he said.",
        "a comment without a value": None,
    }
    assert first.multiword_tokens == [ConlluRow("2-3", "don't")]
    assert [row.id for row in first.empty_nodes] == ["4.1"]
    assert first.n == 8 and first.roots == [7] and first.root == 7
    assert second.words == ["Yes"] and second.heads == [0]


def test_write_reproduces_text_and_reads_back_equal(tmp_path):
    trees = parse_conllu(SAMPLE)
    path = tmp_path / "out.conllu"
    write_conllu(path, trees)
    assert path.read_text(encoding="utf-8") == SAMPLE
    again = read_conllu(path)
    assert again == trees
    assert again[0].multiword_tokens == trees[0].multiword_tokens


def test_comment_with_empty_value_reads_as_written():
    (tree,) = parse_conllu("# key =\n" + SAMPLE.split("\n\n")[1])
    assert tree.metadata == {"key": None, "sent_id": "s2"}
    assert parse_conllu(tree.to_conllu()) == [tree]


def test_equality_sees_every_column():
    tree = parse_conllu(SAMPLE)[0]
    other = parse_conllu(SAMPLE.replace("SpaceAfter=No|Cxn", "Cxn"))[0]
    assert tree != other


def test_arcs_and_children():
    tree = DependencyTree(["the", "cat", "sat"], [2, 3, 0], ["det", "nsubj", "root"])
    assert tree.arcs() == [(2, 1), (3, 2), (0, 3)]
    assert tree.labeled_arcs() == [(2, 1, "det"), (3, 2, "nsubj"), (0, 3, "root")]
    assert tree.children() == [[3], [], [1], [2]]


def test_built_tree_without_columns_writes_underscores():
    tree = DependencyTree(["a", "b"], [0, 1])
    assert tree.to_conllu() == "1\ta\t_\t_\t_\t_\t0\t_\t_\t_\n2\tb\t_\t_\t_\t_\t1\t_\t_\t_\n\n"
    assert parse_conllu(tree.to_conllu()) == [tree]


# ---------------------------------------------------------------------- projectivity


def test_projective_and_crossing_examples():
    # "the cat sat on the mat": nested arcs only.
    assert DependencyTree(["a"] * 6, [2, 3, 0, 3, 6, 4]).is_projective()
    # 1 <- 3 and 2 <- 4 cross (1 < 2 < 3 < 4).
    assert not DependencyTree(["a"] * 4, [3, 4, 0, 3]).is_projective()
    # The root arc counts: 0 -> 2 crosses 1 <- 3 (0 < 1 < 2 < 3).
    assert not DependencyTree(["a"] * 3, [3, 0, 2]).is_projective()
    # Arcs sharing an end do not cross.
    assert DependencyTree(["a"] * 3, [2, 0, 2]).is_projective()


def _crossing_pairwise(heads):
    spans = [(min(h, d), max(h, d)) for d, h in enumerate(heads, start=1)]
    return any(a < c < b < d for (a, b), (c, d) in itertools.permutations(spans, 2))


def _random_tree(rng, n):
    order = list(range(1, n + 1))
    rng.shuffle(order)
    heads = [0] * n
    for k, word in enumerate(order[1:], start=1):
        heads[word - 1] = order[rng.randrange(k)]
    return heads


def test_is_projective_matches_pairwise_definition():
    rng = random.Random(0)
    seen = set()
    for _ in range(2000):
        heads = _random_tree(rng, rng.randint(1, 7))
        expected = not _crossing_pairwise(heads)
        assert DependencyTree(["w"] * len(heads), heads).is_projective() == expected, heads
        seen.add(expected)
    assert seen == {True, False}


# ---------------------------------------------------------------------- validation


def test_tree_problem():
    assert tree_problem([2, 0, 2]) is None
    assert tree_problem([0, 0]) == (1, "more than one root: words 1 and 2 both have head 0")
    assert tree_problem([0, 0], single_root=False) is None
    index, message = tree_problem([0, 3, 4, 2])
    assert index == 1 and "cycle" in message and "2 -> 3 -> 4 -> 2" in message
    assert tree_problem([0, 5])[0] == 1
    assert tree_problem([1])[0] == 0  # its own head


def test_constructor_checks():
    with pytest.raises(FormatError, match="cycle"):
        DependencyTree(["a", "b", "c"], [0, 3, 2])
    with pytest.raises(FormatError, match="out of range"):
        DependencyTree(["a", "b"], [0, 3])
    with pytest.raises(ValueError, match="2 words but 1 heads"):
        DependencyTree(["a", "b"], [0])
    with pytest.raises(ValueError, match="relations"):
        DependencyTree(["a", "b"], [0, 1], ["root"])
    multi_root = DependencyTree(["a", "b"], [0, 0])  # allowed, but not by validate()
    with pytest.raises(FormatError, match="more than one root"):
        multi_root.validate()
    with pytest.raises(ValueError, match="multi-word"):
        DependencyTree(["a", "b"], [0, 1], multiword_tokens=[ConlluRow("2-3", "bc")])


def _lines(text):
    return text.split("\n")


GOOD = "# sent_id = x\n1\tA\ta\tX\tX\t_\t2\tdep\t_\t_\n2\tB\tb\tX\tX\t_\t0\troot\t_\t_\n"

# (broken text, line, column, message fragment): line 3 is word 2, line 2 word 1.
BAD = [
    (GOOD.replace("\t2\tdep", "\t2\tdep\textra"), 2, None, "expected 10 tab-separated"),
    (GOOD.replace("1\tA\ta\tX\tX\t_\t2", "1\tA\ta\tX\tX\t_\tx"), 2, 13, "HEAD .x. is not a word"),
    (GOOD.replace("\t2\tdep", "\t3\tdep"), 2, 13, "out of range 0..2"),
    (GOOD.replace("\t0\troot", "\t1\troot"), 2, 13, "cycle: word 1 -> 2 -> 1"),
    (GOOD.replace("\t2\tdep", "\t0\tdep"), 3, 13, "more than one root"),
    (GOOD.replace("\t2\tdep", "\t_\tdep"), 2, 13, "needs a HEAD"),
    (GOOD.replace("2\tB", "x\tB"), 3, 1, "ID .x. is not a word number"),
    (GOOD.replace("2\tB", "3\tB"), 3, 1, "out of order: expected 2"),
    (GOOD.replace("2\tB", "1-2\tAB\t_\t_\t_\t_\t_\t_\t_\t_\n2\tB"), 3, 1, "start at the next"),
    (GOOD.replace("\tb\t", "\t\t"), 3, 5, "empty LEMMA"),
    (GOOD.replace("2\tB", "2-3\tBC\t_\t_\t_\t_\t_\t_\t_\t_\n2\tB"), 3, 1, "runs past"),
    (GOOD.replace("2\tB", "1.2\tE\t_\t_\t_\t_\t_\t_\t_\t_\n2\tB"), 3, 1, "expected 1.1"),
    (GOOD.replace("2\tB", "1.1\tE\t_\t_\t_\t_\t1\tdep\t_\t_\n2\tB"), 3, 15, "HEAD and DEPREL"),
    (GOOD + "# late\n", 4, None, "comment line after"),
    ("# sent_id = x\n# sent_id = y\n" + GOOD[14:], 2, None, "repeated"),
    ("# only a comment\n", 1, None, "no word lines"),
]


@pytest.mark.parametrize(("text", "line", "column", "message"), BAD)
def test_bad_input_names_file_and_line(tmp_path, text, line, column, message):
    path = tmp_path / "bad.conllu"
    # A good sentence first, so that lines count across sentences.
    path.write_text(GOOD + "\n" + text, encoding="utf-8")
    offset = GOOD.count("\n") + 1
    with pytest.raises(FormatError, match=message) as caught:
        read_conllu(path)
    assert caught.value.source == str(path)
    assert caught.value.line == line + offset
    assert caught.value.column == column


def test_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "latin1.conllu"
    latin1 = "1\tcaf\u00e9\t_\t_\t_\t_\t0\troot\t_\t_\n".encode("latin-1")
    path.write_bytes(GOOD.encode("utf-8") + b"\n" + latin1)
    with pytest.raises(FormatError, match="not valid UTF-8") as caught:
        read_conllu(path)
    line = GOOD.count("\n") + 2
    assert (caught.value.source, caught.value.line, caught.value.column) == (str(path), line, 6)


def test_library_errors_become_format_errors():
    # "2-1" is a range the conllu parser rejects; it must not escape as its own exception.
    with pytest.raises(FormatError, match="ID .2-1. is not a word number") as caught:
        parse_conllu(GOOD.replace("2\tB", "2-1\tB"), source="mem")
    assert str(caught.value).startswith("mem:3:1: ")


def test_multiple_roots_allowed_when_asked():
    text = GOOD.replace("\t2\tdep", "\t0\tdep")
    (tree,) = parse_conllu(text, single_root=False)
    assert tree.roots == [1, 2]


# ---------------------------------------------------------------------- head rules


def _convert(brackets, **kwargs):
    return to_dependency(Tree.parse(brackets), **kwargs)


def test_collins_heads_on_hand_tree():
    tree = _convert(
        "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
    )
    assert tree.words == ["The", "cat", "sat", "on", "the", "mat", "."]
    assert tree.heads == [2, 3, 0, 3, 6, 4, 3]
    assert tree.relations == ["NP/DT", "S/NP", "root", "VP/PP", "NP/DT", "PP/NP", "punct"]
    assert tree.xpos == ["DT", "NN", "VBD", "IN", "DT", "NN", "."]
    tree.validate(single_root=True)
    assert tree.is_projective()


def test_function_tags_and_outer_bracket_are_ignored():
    plain = _convert("(S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .))")
    tagged = _convert("( (S-TPC-1 (NP-SBJ-1 (DT The) (NN cat)) (VP=2 (VBD sat)) (. .)) )")
    assert tagged.heads == plain.heads == [2, 3, 0, 3]
    assert tagged.relations == plain.relations
    assert strip_label("NP-SBJ-1") == "NP" and strip_label("PP-LOC=2") == "PP"
    assert strip_label("-NONE-") == "-NONE-" and strip_label("-LRB-") == "-LRB-"


def test_empty_elements_raise_or_are_dropped():
    brackets = "(S (NP-SBJ (-NONE- *-1)) (VP (VBD sat) (NP (-NONE- *T*-2))) (. .))"
    with pytest.raises(FormatError, match="empty element"):
        _convert(brackets)
    tree = _convert(brackets, drop_empty=True)
    assert tree.words == ["sat", "."] and tree.heads == [0, 1]
    with pytest.raises(FormatError, match="only empty elements"):
        _convert("(S (-NONE- *))", drop_empty=True)


@pytest.mark.parametrize(
    ("brackets", "heads"),
    [
        # NP: a final POS heads its NP; otherwise the rightmost noun.
        ("(NP (NP (NNP John) (POS 's)) (NN dog))", [2, 3, 0]),
        # Coordination: the first conjunct heads, the CC and second conjunct depend on it.
        ("(NP (NNS cats) (CC and) (NNS dogs))", [0, 1, 1]),
        ("(S (S (NP (PRP I)) (VP (VBD ran))) (, ,) (CC and) (S (NP (PRP he)) (VP (VBD hid))))",
         [2, 0, 2, 2, 6, 2]),
        # VP searches left with MD before VB: the modal heads.
        ("(VP (MD will) (VP (VB join) (NP (DT the) (NN board))))", [0, 1, 4, 2]),
        # PP searches from the right: of the two INs the right one heads.
        ("(PP (IN because) (IN of) (NP (NN rain)))", [2, 0, 2]),
        # SBAR: the complementizer heads, the clause depends on it.
        ("(SBAR (IN that) (S (NP (PRP it)) (VP (VBZ works))))", [0, 3, 1]),
        # NP with no noun, NP, $, ADJP, PRN, CD or JJ: the last non-punctuation word.
        ("(NP (DT all) (DT these) (. .))", [2, 0, 2]),
        # FRAG has no list and searches right: punctuation is passed over.
        ("(FRAG (NP (NN Hello)) (. !))", [0, 1]),
        # Unknown label: first child from the left.
        ("(X (NN a) (NN b))", [0, 1]),
    ],
)  # fmt: skip
def test_head_rules(brackets, heads):
    tree = _convert(brackets)
    assert tree.heads == heads
    assert tree.is_projective() and len(tree.roots) == 1


def test_find_head_child():
    assert find_head_child("ADJP", ["RB", "JJ"]) == 1  # JJ is before RB in ADJP's list
    assert find_head_child("ADVP", ["RB", "RB"]) == 1  # ADVP searches from the right
    assert find_head_child("S-TPC-1", ["NP-SBJ", "VP", "."]) == 1
    assert find_head_child("NP", ["NP", ",", "NP"]) == 0
    assert find_head_child("QP", [".", ","]) == 0  # all punctuation: the first one
    custom = {"S": ("right", ("NP",))}
    assert find_head_child("S", ["NP", "VP", "NP"], rules=custom) == 2


def _random_constituency(rng, words, tags):
    """A random bracketing of ``words`` with random PTB-ish phrase labels."""
    nodes = [Tree(tag, [word]) for word, tag in zip(words, tags, strict=True)]
    labels = ["NP", "VP", "S", "PP", "SBAR", "ADJP", "ADVP", "UCP", "FRAG", "QP", "NX", "X"]
    while len(nodes) > 1:
        start = rng.randrange(len(nodes))
        size = rng.randint(1, min(4, len(nodes) - start))
        nodes[start : start + size] = [Tree(rng.choice(labels), nodes[start : start + size])]
    return nodes[0]


def test_conversion_is_always_a_projective_single_root_tree():
    rng = random.Random(1)
    tags = ["NN", "VB", "IN", "DT", "CC", ",", ".", "JJ", "POS", "CD", "RB", "MD"]
    for _ in range(300):
        n = rng.randint(1, 12)
        tree = _random_constituency(rng, [f"w{i}" for i in range(n)], rng.choices(tags, k=n))
        dep = to_dependency(tree)
        assert dep.words == tree.leaves()
        dep.validate(single_root=True)
        assert dep.is_projective(), tree
        # Every phrase's words are headed by one word of the phrase.
        for _, start, end in tree.spans():
            outside = [i for i in range(start, end) if not start < dep.heads[i] <= end]
            assert len(outside) == 1, (tree, start, end)


def test_deep_trees_convert_without_recursion():
    # Unknown label X: the first child heads. Right-branching: each word heads the next.
    right = to_dependency(right_branching(DEEP))
    assert right.heads == list(range(DEEP)) and right.relations[1] == "X/X"
    # Left-branching: the inner X heads, so every word depends on the first.
    left = to_dependency(left_branching(DEEP))
    assert left.heads == [0] + [1] * (DEEP - 1) and left.relations[1] == "X/NN"
    assert right.xpos == left.xpos == ["NN"] * DEEP
    left.validate(single_root=True)
    # Dropping empty elements walks the deep tree too.
    traced = right_branching(DEEP)
    list(traced.subtrees())[-1].label = "-NONE-"
    assert to_dependency(traced, drop_empty=True).n == DEEP - 1
