"""A parsed sentence carried onto another tokenization's tokens, and the constituents it
leaves there.

The parser reads a sentence's text as ``treeattn parse`` reads a line (``tokenize_with_offsets``,
each word keeping its place in the text): its tree over the Penn Treebank's words, as
``treeattn parse`` writes brackets, and its dependencies over the words that ``treeattn
parse --format conllu`` writes (UD English EWT's cut for a parser of Universal
Dependencies, where ``do n't``, ``e-mail`` and ``1969 - 1970`` are words; else the same
Penn Treebank words). A pipeline's tokens (spaCy's, say) cut the same text their own way.
Tokens and words meet by characters: a token and a word whose characters overlap belong
together, and tokens and words that overlap in a chain form one *group* (the tree's words
and the dependencies' words each form their own groups). Most groups are one token and
one word. The rules for the rest:

- a token the parser splits (a whitespace tokenizer's ``can't``, which the parser reads as
  ``ca n't``): the token is one leaf; its tag and dependency are those of the group's word
  nearest the root of the dependency tree (the first of them on a tie), and a constituent
  that would begin or end inside the token is left out (its children go to its parent);
- words the parser joins (spaCy's ``e - mail`` for the parser's ``e-mail``): each token is a
  leaf, tagged as the word is; the last token takes the word's head and relation, and the
  others depend on it with the relation ``subtok`` (what spaCy's ``merge_subtokens`` merges);
- a token of white space (spaCy keeps a second space or a line break as a token) is in no
  word: it is a leaf of the smallest constituent around it, starts or ends no constituent
  but the sentence, is tagged ``_SP`` and depends on the token before it (the one after it
  at the start of a sentence) with the relation ``dep``; bracket strings leave it out.

The sentence's constituents are kept as benepar keeps them: one entry per token span,
pre-order (by start, longer first), a unary chain one entry whose ``labels`` go from the
top down (pre-terminal tags are not labels), every token an entry of its own (labels
``()`` when no phrase is just that token), and the top constituent spanning the whole
sentence. A dropped constituent's labels are lost with it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree
from treeattn.trees.tokenize import ESCAPES, Token

SPACE_TAG = "_SP"  # spaCy's tag for white space
SPACE_DEP = "dep"
SUBTOKEN_DEP = "subtok"

# A sentence's data as a Doc keeps it (plain lists, so that it serializes): "start" and
# "end" (its tokens in the doc), "tree" (bracketed, or None when it was not parsed, with the
# "reason"), the constituents "starts", "ends" (doc token indices), "labels", "nodes" (the
# index of the entry's top node in the tree's pre-order, -1 for none), and each token's tag.
Record = dict[str, Any]


@dataclass
class Projection:
    """One sentence's tree and dependencies on tokens ``start`` .. ``end - 1`` of a doc.

    ``starts``, ``ends``, ``labels`` and ``nodes`` list the constituents as the module says;
    ``tags``, ``heads`` (doc token indices; a root is its own head) and ``deps`` hold one
    value per token of the sentence; ``tree_tags`` the tags of the tree's words carried
    onto the tokens, which bracket strings show (None: ``tags``, the dependencies' words
    being the tree's)."""

    start: int
    end: int
    starts: list[int]
    ends: list[int]
    labels: list[list[str]]
    nodes: list[int]
    tags: list[str]
    heads: list[int]
    deps: list[str]
    tree_tags: list[str] | None = None

    def with_dependencies(self, other: Projection) -> Projection:
        """These constituents with ``other``'s tags, heads and relations (a projection of
        the same tokens from other words); these tags stay the brackets'."""
        return replace(
            self,
            tags=other.tags,
            heads=other.heads,
            deps=other.deps,
            tree_tags=self.tree_tags or self.tags,
        )

    def record(self, tree: Tree | None) -> Record:
        """What a doc keeps of the sentence (``Record``)."""
        return {
            "start": self.start,
            "end": self.end,
            "tree": None if tree is None else tree.to_brackets(),
            "reason": "",
            "starts": self.starts,
            "ends": self.ends,
            "labels": self.labels,
            "nodes": self.nodes,
            "tags": self.tree_tags or self.tags,
        }


def unparsed_record(start: int, end: int, reason: str) -> Record:
    """The record of a sentence left unparsed, saying why: it has no constituents."""
    return {"start": start, "end": end, "tree": None, "reason": reason}


def blank(start: int, end: int) -> Projection:
    """A sentence of white space alone (tokens ``start`` .. ``end - 1``): no tree, and no
    heads (each token its own, with no relation: spaCy's missing head); the sentence and
    each token are constituents without labels, so that asking them does not fail."""
    spans = sorted({(start, end)} | {(k, k + 1) for k in range(start, end)}, key=_preorder)
    count = end - start
    return Projection(
        start,
        end,
        [a for a, _ in spans],
        [b for _, b in spans],
        [[] for _ in spans],
        [-1] * len(spans),
        [SPACE_TAG] * count,
        list(range(start, end)),
        [""] * count,
    )


def _preorder(span: tuple[int, int]) -> tuple[int, int]:
    return span[0], -span[1]


class _Group(NamedTuple):
    """Words ``first_word`` .. ``last_word`` and tokens ``first_token`` .. ``last_token``
    of a sentence (inclusive) that overlap in a chain."""

    first_word: int
    last_word: int
    first_token: int
    last_token: int


def _groups(token_spans: Sequence[tuple[int, int]], words: Sequence[Token]) -> list[_Group]:
    """The groups of a sentence's tokens (character spans, in order) and words."""
    token_starts = [start for start, _ in token_spans]
    found: list[list[int]] = []  # [first word, last word, first token, last token]
    for w, word in enumerate(words):
        first = bisect.bisect_right(token_starts, word.start) - 1
        last = bisect.bisect_left(token_starts, word.end, lo=max(first, 0)) - 1
        if first < 0 or token_spans[first][1] <= word.start or last < first:
            raise ValueError(f"the word {word.form!r} at {word.start} lies in no token")
        if found and first <= found[-1][3]:
            found[-1][1] = w
            found[-1][3] = max(last, found[-1][3])
        else:
            found.append([w, w, first, last])
    return [_Group(*group) for group in found]


def _nodes(tree: Tree) -> list[tuple[str, int, int, bool]]:
    """Every node of ``tree``, pre-order: its label, the words it spans (start, end) and
    whether it is a pre-terminal (``Tree.spans`` and ``Tree.subtrees`` in one pass)."""
    out: list[tuple[str, int, int, bool]] = []
    position = 0  # words seen so far
    # A node, a word, or (an int) the index in ``out`` of a node whose words all are seen.
    stack: list[Tree | str | int] = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            position += 1
        elif isinstance(item, int):
            label, start, _, preterminal = out[item]
            out[item] = (label, start, position, preterminal)
        else:
            preterminal = len(item.children) == 1 and isinstance(item.children[0], str)
            out.append((item.label, position, position, preterminal))
            stack.append(len(out) - 1)
            stack.extend(reversed(item.children))
    return out


def _depths(heads: Sequence[int]) -> list[int]:
    """Each word's distance from the root; ``heads`` 1-based, 0 for the root."""
    depth = [-1] * len(heads)
    for w in range(len(heads)):
        path = []
        while w >= 0 and depth[w] < 0:
            path.append(w)
            w = heads[w] - 1
        known = depth[w] if w >= 0 else -1
        for v in reversed(path):
            known += 1
            depth[v] = known
    return depth


def project(
    token_spans: Sequence[tuple[int, int]],
    first: int,
    words: Sequence[Token],
    tree: Tree | None,
    dependencies: DependencyTree,
) -> Projection:
    """Carry ``tree`` and ``dependencies`` (over ``words``, placed in the same text as the
    tokens) onto the tokens of a sentence: ``token_spans`` their character spans, in
    order, ``first`` the doc index of the first. The module's rules. The tree is as the
    parser gives it: every word under a tag, a phrase at the top (None: the dependencies
    alone, for ``Projection.with_dependencies``; the sentence and its tokens are then
    the only constituents)."""
    if dependencies.n != len(words):
        raise ValueError(f"dependencies of {dependencies.n} words for {len(words)} words")
    count, n = len(token_spans), len(words)
    groups = _groups(token_spans, words)
    # Where a constituent may start and end: a group's first word starts at its first
    # token, its last word ends at its last token; -1 inside a group.
    starts_at, ends_at = [-1] * n, [-1] * n
    alone = [-1] * n  # a word that is its group, one token: that token
    group_of_word, group_of_token = [0] * n, [-1] * count
    for g, (first_word, last_word, first_token, last_token) in enumerate(groups):
        starts_at[first_word], ends_at[last_word] = first_token, last_token
        if first_word == last_word and first_token == last_token:
            alone[first_word] = first_token
        group_of_word[first_word : last_word + 1] = [g] * (last_word - first_word + 1)
        group_of_token[first_token : last_token + 1] = [g] * (last_token - first_token + 1)

    # Constituents, keyed (start, -end) so that sorting the keys gives pre-order.
    entries: dict[tuple[int, int], tuple[list[str], int]] = {}
    leaf_node: dict[int, int] = {}  # token -> its word's pre-terminal (one token, one word)
    for index, (label, i, j, preterminal) in enumerate(_nodes(tree) if tree else []):
        if preterminal:
            if alone[i] >= 0:
                leaf_node[alone[i]] = index
            continue
        start, end = starts_at[i], ends_at[j - 1]
        if start < 0 or end < 0:
            continue  # an edge inside a token
        if i == 0 and j == n:  # the top: the whole sentence, edge white space too
            start, end = 0, count - 1
        key = (first + start, -(first + end + 1))
        if key in entries:
            entries[key][0].append(label)  # a unary chain
        else:
            entries[key] = ([label], index)
    # The sentence is a constituent even when the tree's top is a tag over one word.
    entries.setdefault((first, -(first + count)), ([], 0))
    for k in range(count):
        key = (first + k, -(first + k + 1))
        if key not in entries:
            entries[key] = ([], leaf_node.get(k, -1))
    order = sorted(entries)

    # Dependencies: a group hangs from its word nearest the root, on its last token.
    word_heads, tags, relations = dependencies.heads, dependencies.xpos, dependencies.relations
    depth = _depths(word_heads)
    top_word = [
        g.first_word
        if g.first_word == g.last_word
        else min(range(g.first_word, g.last_word + 1), key=lambda w: (depth[w], w))
        for g in groups
    ]
    heads, deps, token_tags = [0] * count, [""] * count, [SPACE_TAG] * count
    previous = -1  # the last token that is in a word
    for k in range(count):
        g = group_of_token[k]
        if g < 0:  # white space: on the token before, or the first in a word after it
            heads[k] = first + (previous if previous >= 0 else groups[0].first_token)
            deps[k] = SPACE_DEP
            continue
        previous = k
        word, last = top_word[g], groups[g].last_token
        token_tags[k] = tags[word]
        if k != last:
            heads[k], deps[k] = first + last, SUBTOKEN_DEP
            continue
        head = word_heads[word]
        target = k if head == 0 else groups[group_of_word[head - 1]].last_token
        heads[k], deps[k] = first + target, relations[word]
    return Projection(
        first,
        first + count,
        [start for start, _ in order],
        [-end for _, end in order],
        [entries[key][0] for key in order],
        [entries[key][1] for key in order],
        token_tags,
        heads,
        deps,
    )


# ---------------------------------------------------------------- reading a record
def position(record: Record, start: int, end: int) -> int | None:
    """The entry of the constituent over tokens ``start`` .. ``end - 1`` (None: no such)."""
    starts, ends = record["starts"], record["ends"]
    p = bisect.bisect_left(starts, start)
    while p < len(starts) and starts[p] == start and ends[p] >= end:
        if ends[p] == end:
            return p
        p += 1
    return None


def _subtree_end(record: Record, p: int) -> int:
    """The first entry after ``p`` that is not inside it."""
    return bisect.bisect_left(record["starts"], record["ends"][p], lo=p + 1)


def inside(record: Record, p: int) -> range:
    """Entry ``p`` and every entry inside it, pre-order."""
    return range(p, _subtree_end(record, p))


def children(record: Record, p: int) -> Iterator[int]:
    """The entries of ``p``'s children, left to right."""
    q, end = p + 1, _subtree_end(record, p)
    while q < end:
        yield q
        q = _subtree_end(record, q)


def parent(record: Record, p: int) -> int | None:
    """The entry of ``p``'s parent (None for the sentence's top)."""
    ends = record["ends"]
    for q in range(p - 1, -1, -1):
        if ends[q] >= ends[p]:
            return q
    return None


def brackets(record: Record, p: int, texts: Sequence[str], spaces: Sequence[bool]) -> str:
    """Entry ``p`` as a bracketed tree over the tokens (``texts``, ``spaces``: every token of
    the doc, whether it is white space), each token ``(TAG text)`` with its brackets
    escaped as the Penn Treebank writes them and any white space inside it (a tokenizer
    that keeps "New York" whole) written ``_``; white space tokens left out."""
    start, tags = record["start"], record["tags"]
    starts, ends, labels = record["starts"], record["ends"], record["labels"]

    def wrap(text: str, chain: Sequence[str]) -> str:
        for label in reversed(chain):
            text = f"({label} {text})"
        return text

    # Open entries: (end, labels, parts so far); the bottom one gathers the answer.
    stack: list[tuple[int, Sequence[str], list[str]]] = [(ends[p], (), [])]

    def close() -> None:
        _, chain, parts = stack.pop()
        stack[-1][2].append(wrap(" ".join(parts), chain))

    for q in inside(record, p):
        while len(stack) > 1 and stack[-1][0] <= starts[q]:
            close()
        if ends[q] - starts[q] > 1:
            stack.append((ends[q], labels[q], []))
            continue
        k = starts[q]
        if spaces[k]:
            continue
        text = "".join(ESCAPES.get(char, char) for char in "_".join(texts[k].split()))
        stack[-1][2].append(wrap(f"({tags[k - start]} {text})", labels[q]))
    while len(stack) > 1:
        close()
    return " ".join(stack[0][2])
