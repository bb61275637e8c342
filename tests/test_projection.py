"""A parsed sentence carried onto other tokens (``treeattn.integrations.projection``), with
no spaCy: random trees, random spacing and random tokenizations of the same text."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tests.strategies import treebank_shaped, trees
from treeattn.integrations import projection
from treeattn.parsing.decoding import tree_dependencies
from treeattn.trees import Tree
from treeattn.trees.tokenize import Token

LABELS = st.sampled_from(["S", "NP", "VP", "PP"])
TAGS = st.sampled_from(["DT", "NN", "VB", "IN"])
WORDS = st.text(alphabet="abc", min_size=1, max_size=3)
# Trees as the parser gives them: every word under a tag, a phrase at the top.
PARSED = (
    trees(LABELS, TAGS, WORDS)
    .map(treebank_shaped)
    .map(lambda tree: Tree("S", [tree]) if tree.is_preterminal() else tree)
)


@st.composite
def placed(draw):
    """A tree, its words placed in a text (one, two or three spaces between them), and the
    text cut into tokens another way: words cut inside, words joined (across a single
    space, as a tokenizer may keep "New York"), runs of spaces as tokens of their own."""
    tree = draw(PARSED)
    leaves = tree.leaves()
    gaps = draw(st.lists(st.sampled_from([" ", "  ", "   "]), min_size=len(leaves)))
    lead, trail = draw(st.booleans()), draw(st.booleans())  # white space at the edges
    text, words = " " * lead, []
    for k, word in enumerate(leaves):
        if k:
            text += gaps[k]
        words.append(Token(word, word, len(text), len(text) + len(word)))
        text += word
    tokens: list[tuple[int, int]] = [(0, 1)] if lead else []
    for k, word in enumerate(words):
        cuts = sorted(
            draw(st.sets(st.integers(1, len(word.word) - 1), max_size=2))
            if len(word.word) > 1
            else []
        )
        edges = [word.start, *(word.start + c for c in cuts), word.end]
        pieces = list(zip(edges, edges[1:], strict=False))
        if k and gaps[k] == " " and draw(st.booleans()) and tokens[-1][1] == word.start - 1:
            tokens[-1] = (tokens[-1][0], pieces[0][1])  # joined across the space
            pieces = pieces[1:]
        elif k and len(gaps[k]) > 1:  # spaCy keeps one space after a token, the rest a token
            tokens.append((words[k - 1].end + 1, word.start))
        tokens += pieces
    if trail:
        tokens.append((len(text), len(text) + 1))
        text += "\n"
    return tree, text, words, tokens


def check(result: projection.Projection, first: int, count: int) -> None:
    starts, ends = result.starts, result.ends
    keys = list(zip(starts, [-e for e in ends], strict=True))
    assert keys == sorted(set(keys)), "entries in pre-order, one per span"
    assert (starts[0], ends[0]) == (first, first + count), "the first is the sentence"
    for a, b in zip(starts, ends, strict=True):  # nested or apart
        assert first <= a < b <= first + count
    for p in range(len(starts)):
        for q in range(p + 1, len(starts)):
            assert ends[q] <= ends[p] or starts[q] >= ends[p]
    assert {(k, k + 1) for k in range(first, first + count)} <= set(zip(starts, ends, strict=True))
    roots = [k for k in range(count) if result.heads[k] == first + k]
    assert len(roots) == 1
    for k in range(count):  # every token reaches the root
        seen, at = set(), first + k
        while result.heads[at - first] != at:
            assert at not in seen, "a cycle"
            seen.add(at)
            at = result.heads[at - first]
            assert first <= at < first + count


# A tree whose top is a tag over its one word, and a line break after it.
@example((Tree.parse("(S a)"), "a\n", [Token("a", "a", 0, 1)], [(0, 1), (1, 2)]), 0)
@given(placed(), st.integers(0, 5))
def test_any_tokenization_gives_nested_constituents_and_one_tree_of_heads(case, first):
    tree, text, words, tokens = case
    deps = tree_dependencies(tree, [tag or "XX" for tag in tree.tags()])
    result = projection.project(tokens, first, words, tree, deps)
    check(result, first, len(tokens))
    texts = [text[a:b] for a, b in tokens]
    spaces = [t.isspace() for t in texts]
    record = result.record(tree)
    assert record["tree"] == tree.to_brackets()
    padded = [""] * first + texts, [False] * first + spaces
    leaves = Tree.parse(projection.brackets(record, 0, *padded)).leaves()
    assert leaves == ["_".join(t.split()) for t in texts if not t.isspace()]
    for a, b, labels in zip(result.starts, result.ends, result.labels, strict=True):
        if labels and b - a > 1 and (a, b) != (first, first + len(tokens)):
            assert not spaces[a - first] and not spaces[b - 1 - first]


@given(PARSED)
def test_tokens_that_are_the_words_keep_the_tree_and_its_dependencies(tree):
    leaves = tree.leaves()
    words, at = [], 0
    for word in leaves:
        words.append(Token(word, word, at, at + len(word)))
        at += len(word) + 1
    deps = tree_dependencies(tree, [tag or "XX" for tag in tree.tags()])
    result = projection.project([(w.start, w.end) for w in words], 0, words, tree, deps)
    chains: dict[tuple[int, int], list[str]] = {}
    for label, i, j in tree.spans():
        chains.setdefault((i, j), []).append(label)
    labelled = {
        (a, b): labels
        for a, b, labels in zip(result.starts, result.ends, result.labels, strict=True)
        if labels
    }
    assert labelled == chains
    assert [h - 1 if h else k for k, h in enumerate(deps.heads)] == result.heads
    assert result.deps == deps.relations and result.tags == deps.xpos
    record = result.record(tree)
    assert projection.brackets(record, 0, leaves, [False] * len(leaves)) == tree.to_brackets()


def test_a_word_in_no_token_is_an_error():
    tree = Tree.parse("(S (NN a) (NN b))")
    words = [Token("a", "a", 0, 1), Token("b", "b", 2, 3)]
    deps = tree_dependencies(tree, tree.tags())
    try:
        projection.project([(0, 1)], 0, words, tree, deps)
    except ValueError as error:
        assert "the word 'b' at 2 lies in no token" in str(error)
    else:
        raise AssertionError("no error")
