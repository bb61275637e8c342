"""Constituency trees: bracket reading and writing, leaves, tags, spans, heights, depths.

A ``Tree`` has a ``label`` and a list of ``children``; each child is a ``Tree`` or a word
(``str``). A pre-terminal is a tree whose only child is a word, e.g. ``(DT the)``. Spans are
half-open leaf intervals ``(start, end)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, Union

from treeattn.errors import FormatError

Child = Union["Tree", str]
Span = tuple[int, int]
LabeledSpan = tuple[str, int, int]
T = TypeVar("T")

# What separates tokens in bracket text: ASCII whitespace only. Other Unicode spaces are
# word characters: SST has the word "8\xa01\/2" with a no-break space inside.
WHITESPACE = " \t\n\r\f\v"
_WORD = "[^ \\t\\n\\r\\f\\v()]"
# "(" with the label right after it (empty when none follows), ")", or a word.
_BRACKET_TOKEN = re.compile(rf"\(({_WORD}*)|(\))|({_WORD}+)")
# The same, and for the .mrg layout a line break followed by blank lines and then a line
# that is not indented (or the end of the text).
_MRG_TOKEN = re.compile(rf"\(({_WORD}*)|(\))|({_WORD}+)|(\n)(?=(?:[ \t\r\f\v]*\n)+(?![ \t\r\f\v]))")


class Tree:
    """A constituency tree node.

    >>> t = Tree.parse("(S (NP (DT the) (NN cat)) (VP (VBD sat)))")
    >>> t.leaves()
    ['the', 'cat', 'sat']
    >>> t.spans()
    [('S', 0, 3), ('NP', 0, 2), ('VP', 2, 3)]

    Labels and words are non-empty and hold no brackets and no ASCII whitespace (see
    ``WHITESPACE``; other Unicode spaces are word characters), so that the bracket string
    reads back to the same tree; the one exception is the empty label of an outer
    wrapper node over trees, as in PTB ``( (S ...) )``.
    """

    __slots__ = ("label", "children")

    def __init__(self, label: str, children: Sequence[Child]) -> None:
        if not children:
            raise ValueError(f"tree node {label!r} has no children")
        self.label = label
        self.children: list[Child] = list(children)

    @classmethod
    def _unchecked(cls, label: str, children: list[Child]) -> Tree:
        # For the parser, which already knows ``children`` is a fresh non-empty list.
        node = cls.__new__(cls)
        node.label = label
        node.children = children
        return node

    # ------------------------------------------------------------------ reading, writing
    @classmethod
    def parse(cls, text: str, source: str = "<string>", first_line: int = 1) -> Tree:
        """Parse one bracketed tree. ``first_line`` is the line of ``text`` in ``source``.

        An outer unlabeled bracket (``( (S ...) )``, as in PTB ``.mrg`` files) is read as a
        node with the empty label; any other node must have a label.
        """
        trees = list(iter_parse(text, source, first_line))
        if len(trees) != 1:
            raise FormatError(f"expected one tree, found {len(trees)}", source, first_line)
        return trees[0]

    def to_brackets(self) -> str:
        """One-line bracket string; ``Tree.parse(t.to_brackets()) == t``."""
        parts: list[str] = []
        stack: list[Child | None] = [self]
        while stack:
            item = stack.pop()
            if item is None:
                parts.append(")")
            elif isinstance(item, str):
                parts.append(" " + item)
            else:
                if parts and parts[-1] != "(":
                    parts.append(" ")
                parts.append("(" + item.label)
                stack.append(None)
                stack.extend(reversed(item.children))
        return "".join(parts)

    __str__ = to_brackets

    def __repr__(self) -> str:
        return f"Tree.parse({self.to_brackets()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        # Pairs of nodes still to compare; a stack, not recursion, so deep trees compare.
        stack: list[tuple[Tree, Tree]] = [(self, other)]
        while stack:
            a, b = stack.pop()
            if a is b:
                continue
            if a.label != b.label or len(a.children) != len(b.children):
                return False
            for x, y in zip(a.children, b.children, strict=True):
                if isinstance(x, Tree) and isinstance(y, Tree):
                    stack.append((x, y))
                elif isinstance(x, Tree) or isinstance(y, Tree) or x != y:
                    return False
        return True

    def __hash__(self) -> int:
        return hash(self.to_brackets())

    def copy(self) -> Tree:
        """A deep copy: no node is shared with ``self``."""
        return fold_tree(self, lambda node, kids: Tree._unchecked(node.label, kids))

    @classmethod
    def from_spans(
        cls,
        words: Sequence[str],
        spans: Sequence[LabeledSpan],
        tags: Sequence[str] | None = None,
    ) -> Tree:
        """Build a tree from labeled spans ``(label, start, end)`` over ``words``.

        The inverse of ``spans()``: ``Tree.from_spans(t.leaves(), t.spans(), t.tags()) == t``
        for every tree. Spans must be non-empty, inside ``[0, len(words)]`` and nested or
        disjoint (a crossing pair raises ``ValueError``). Equal spans form a unary chain in
        the order given (first is the top), so pre-order lists round-trip. ``tags[i]`` wraps
        word ``i`` in a pre-terminal; an empty tag leaves the word bare. One span must cover
        all words, unless there is a single word and a non-empty tag. Runs in O(s log s + n).

        >>> Tree.from_spans(["a", "b", "c"], [("S", 0, 3), ("X", 1, 3)]).to_brackets()
        '(S a (X b c))'
        """
        n = len(words)
        if tags is not None and len(tags) != n:
            raise ValueError(f"{len(tags)} tags for {n} words")
        for label, start, end in spans:
            if not 0 <= start < end <= n:
                raise ValueError(f"span ({label!r}, {start}, {end}) is empty or outside 0..{n}")

        def leaf(i: int) -> Child:
            if tags is not None and tags[i]:
                return cls(tags[i], [words[i]])
            return words[i]

        # Parents before children: by start, wider first, and given order among equal spans.
        order = sorted(range(len(spans)), key=lambda k: (spans[k][1], -spans[k][2], k))
        # Open frames: (label, end, children); the bottom one is a virtual top over all words.
        stack: list[tuple[str, int, list[Child]]] = [("", n, [])]
        pos = 0  # next word not yet placed

        def close() -> None:
            nonlocal pos
            label, end, children = stack.pop()
            children.extend(leaf(i) for i in range(pos, end))
            pos = end
            stack[-1][2].append(cls(label, children))

        for k in order:
            label, start, end = spans[k]
            while len(stack) > 1 and stack[-1][1] <= start:
                close()
            if end > stack[-1][1]:
                raise ValueError(f"span ({label!r}, {start}, {end}) crosses another span")
            stack[-1][2].extend(leaf(i) for i in range(pos, start))
            pos = start
            stack.append((label, end, []))
        while len(stack) > 1:
            close()
        top = stack[0][2]
        top.extend(leaf(i) for i in range(pos, n))
        if len(top) != 1 or not isinstance(top[0], Tree):
            raise ValueError("no span covers all words (and there is not one tagged word)")
        return top[0]

    # ------------------------------------------------------------------ structure
    def is_preterminal(self) -> bool:
        return len(self.children) == 1 and isinstance(self.children[0], str)

    def subtrees(self) -> Iterator[Tree]:
        """Every node, pre-order (parents before children, left to right)."""
        stack: list[Tree] = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(c for c in reversed(node.children) if isinstance(c, Tree))

    def leaves(self) -> list[str]:
        """The words, left to right."""
        out: list[str] = []
        stack: list[Child] = [self]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                out.append(node)
            else:
                stack.extend(reversed(node.children))
        return out

    def __len__(self) -> int:
        """Number of leaves (words)."""
        return len(self.leaves())

    def pos(self) -> list[tuple[str, str]]:
        """(word, tag) pairs; a word directly under a phrase (no pre-terminal) gets ``""``."""
        out: list[tuple[str, str]] = []
        stack: list[tuple[Child, str]] = [(self, "")]
        while stack:
            node, tag = stack.pop()
            if isinstance(node, str):
                out.append((node, tag))
            else:
                child_tag = node.label if node.is_preterminal() else ""
                stack.extend((c, child_tag) for c in reversed(node.children))
        return out

    def tags(self) -> list[str]:
        return [tag for _, tag in self.pos()]

    def spans(self, include_preterminals: bool = False) -> list[LabeledSpan]:
        """Labeled spans ``(label, start, end)`` of every node, pre-order.

        Pre-terminals are left out unless ``include_preterminals``.
        """
        out: list[LabeledSpan] = []
        position = 0  # words seen so far
        # A node, a word, or (an int) the index in ``out`` of a span whose words all are seen.
        stack: list[Child | int] = [self]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                position += 1
            elif isinstance(item, int):
                label, start, _ = out[item]
                out[item] = (label, start, position)
            else:
                if include_preterminals or not item.is_preterminal():
                    out.append((item.label, position, position))  # end set when closed
                    stack.append(len(out) - 1)
                stack.extend(reversed(item.children))
        return out

    def unlabeled_spans(self, include_preterminals: bool = False) -> set[Span]:
        return {(i, j) for _, i, j in self.spans(include_preterminals)}

    def height(self) -> int:
        """Phrase height: words and pre-terminals 0, a phrase 1 + its tallest child.

        This is the height used by syntactic distance (Shen et al. 2018).
        """
        # A word counts as 0, so a phrase over words only has height 1.
        return fold_tree(
            self,
            lambda node, kids: 0 if node.is_preterminal() else 1 + max(kids),
            lambda word: 0,
        )

    def leaf_depths(self) -> list[int]:
        """For each word, the number of nodes above it (pre-terminal included)."""
        out: list[int] = []
        stack: list[tuple[Child, int]] = [(self, 0)]
        while stack:
            node, depth = stack.pop()
            if isinstance(node, str):
                out.append(depth)
            else:
                stack.extend((c, depth + 1) for c in reversed(node.children))
        return out

    def check_leaves(
        self, tokens: Sequence[str], source: str = "<string>", line: int | None = None
    ) -> None:
        """Raise ``FormatError`` unless the tree's words are exactly ``tokens``.

        Leaves and tokens are counted from 1 in the message.
        """
        words = self.leaves()
        if len(words) != len(tokens):
            raise FormatError(
                f"tree has {len(words)} leaves but {len(tokens)} tokens were given", source, line
            )
        for i, (word, token) in enumerate(zip(words, tokens, strict=True), start=1):
            if word != token:
                raise FormatError(f"leaf {i} is {word!r} but token {i} is {token!r}", source, line)


def fold_tree(
    tree: Tree,
    combine: Callable[[Tree, list[Any]], T],
    leaf: Callable[[str], Any] | None = None,
    children: Callable[[Tree], Sequence[Child]] | None = None,
) -> T:
    """Compute a value bottom-up with an explicit stack, so that deep trees need no recursion.

    Each node gives ``combine(node, values)``, with the values of its children left to
    right in a fresh list: a word's value is ``leaf(word)`` (the word itself when ``leaf``
    is ``None``), a child node's is what ``combine`` gave for it. Words are met left to
    right. ``children(node)`` (default: ``node.children``) chooses what is visited below a
    node, so a transform can skip or splice nodes; it is called once per node visited.

    >>> fold_tree(Tree.parse("(S (NP a b) c)"), lambda node, kids: sum(kids), len)
    3
    """
    # The current node, its children not yet visited and their values; ``frames`` holds
    # the same for each ancestor. The default cases make no call (this runs per node).
    frames: list[tuple[Tree, Iterator[Child], list[Any]]] = []
    node, values = tree, []
    todo = iter(tree.children if children is None else children(tree))
    while True:
        for child in todo:
            if isinstance(child, str):
                values.append(child if leaf is None else leaf(child))
            else:
                frames.append((node, todo, values))
                node, values = child, []
                todo = iter(child.children if children is None else children(child))
                break
        else:  # every child has its value
            result = combine(node, values)
            if not frames:
                return result
            node, todo, values = frames.pop()
            values.append(result)


def iter_parse(
    text: str, source: str = "<string>", first_line: int = 1, mrg_layout: bool = False
) -> Iterator[Tree]:
    """Parse every bracketed tree in ``text``, in order; errors give line and column.

    See ``iter_parse_with_positions`` for the arguments.
    """
    for tree, _, _ in iter_parse_with_positions(text, source, first_line, mrg_layout):
        yield tree


def iter_parse_with_positions(
    text: str,
    source: str = "<string>",
    first_line: int = 1,
    mrg_layout: bool = False,
    treebank_words: bool = False,
) -> Iterator[tuple[Tree, int, int]]:
    """Like ``iter_parse`` but yield ``(tree, line, column)``: where each tree's ``(`` is.

    ``treebank_words``: words sit in brackets of their own, as in treebank files, so a word
    beside a phrase (``(NP the (NN cat))``: a word without its tag, or an SST word without
    its label) raises ``FormatError`` at that word.

    Lines and columns are 1-based; ``first_line`` is the line of ``text`` in ``source``.
    A label follows its ``(`` directly; only the outermost bracket of a tree may go without
    one, and only around trees (PTB's ``( (S ...) )``): ``(S ( a b))`` and ``( a b)`` raise
    ``FormatError`` "missing label".

    ``mrg_layout``: the text is a treebank file in the free layout of PTB ``.mrg`` files,
    where a ``(`` at the start of a line opens a new tree and the lines inside a tree are
    indented. Inside a tree that is still open, a ``(`` at the start of a line, or a blank
    line not followed by an indented line, raises ``FormatError`` naming the line where
    that tree opened, rather than joining two trees into one. (A blank line followed by an
    indented line is accepted: seven trees of the PTB WSJ sample have one, e.g.
    ``wsj_0041.mrg`` line 190.)
    """
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def where(offset: int) -> tuple[int, int]:
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:  # last line start <= offset
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return first_line + lo, offset - line_starts[lo] + 1

    def fail(message: str, offset: int) -> FormatError:
        line, column = where(offset)
        return FormatError(message, source, line, column)

    def opened_at() -> str:
        line, column = where(stack[0][2])
        return f"the tree opened at line {line}, column {column}"

    missing_label = "missing label after '(' (only a bracket around whole trees may lack one)"
    # Each open frame: [label, children, offset of its "("]. One match per "(label", ")",
    # word (or blank line) keeps this loop, which runs over whole treebanks, short.
    stack: list[list] = []
    for match in (_MRG_TOKEN if mrg_layout else _BRACKET_TOKEN).finditer(text):
        kind = match.lastindex
        if kind == 1:  # "(" and its label
            label = match.group(1)
            start = match.start()
            if stack:
                if text[start - 1] == "\n" and mrg_layout:
                    raise fail(
                        f"'(' at the start of a line opens a new tree, but {opened_at()} "
                        "is not closed",
                        start,
                    )
                if not label:
                    if text[start - 1] == "\n":
                        # "( (S" at the start of a line inside a tree: in .mrg files this is
                        # the next tree, and the one before lacks a ")".
                        raise fail(
                            f"missing label after '(', or unbalanced '(': {opened_at()} "
                            "is not closed",
                            start,
                        )
                    raise fail(missing_label, start)
            stack.append([label, [], start, None])
        elif kind == 2:  # ")"
            if not stack:
                raise fail("unbalanced ')' with no matching '('", match.start())
            label, children, start, first_word = stack.pop()
            if not children:
                raise fail(f"node {label!r} has no children", start)
            if treebank_words and first_word is not None and len(children) > 1:
                word = next(c for c in children if isinstance(c, str))
                raise fail(
                    f"word {word!r} has no bracket of its own (a tag, or a label): in a "
                    f"treebank every word sits alone in one, as ({label} ... (TAG {word}) ...)",
                    first_word,
                )
            node = Tree._unchecked(label, children)
            if stack:
                stack[-1][1].append(node)
            else:
                yield (node, *where(start))
        elif kind == 3:  # a word
            if not stack:
                raise fail(f"word {match.group(3)!r} outside any bracket", match.start())
            frame = stack[-1]
            if not frame[0]:  # "( a b)": words need a labeled bracket
                raise fail(missing_label, frame[2])
            frame[1].append(match.group(3))
            if frame[3] is None:
                frame[3] = match.start(3)
        elif stack:  # mrg_layout: a blank line inside a tree, and the tree is not continued
            line, _ = where(match.end())
            raise FormatError(
                f"blank line inside a tree, not followed by an indented line: {opened_at()} is "
                "still open",
                source,
                line,
            )
    if stack:
        raise fail(f"unbalanced '(': {len(stack)} bracket(s) never closed", stack[-1][2])
