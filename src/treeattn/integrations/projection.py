"""A parsed sentence carried onto another tokenization's tokens, and the constituents it
leaves there.

The parser reads a sentence's text as ``treeattn parse`` reads a line (Penn Treebank words,
``tokenize_with_offsets``, each word keeping its place in the text); a pipeline's tokens
(spaCy's, say) cut the same text their own way. Tokens and words meet by characters: a
token and a word whose characters overlap belong together, and tokens and words that
overlap in a chain form one *group*. Most groups are one token and one word. The rules
for the rest:

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
from dataclasses import dataclass
from typing import Any

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
    value per token of the sentence."""

    start: int
    end: int
    starts: list[int]
    ends: list[int]
    labels: list[list[str]]
    nodes: list[int]
    tags: list[str]
    heads: list[int]
    deps: list[str]

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
            "tags": self.tags,
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


@dataclass(frozen=True)
class _Group:
    """Words ``first_word`` .. ``last_word`` and tokens ``first_token`` .. ``last_token``
    of a sentence (inclusive) that overlap in a chain."""

    first_word: int
    last_word: int
    first_token: int
    last_token: int


def _groups(token_spans: Sequence[tuple[int, int]], words: Sequence[Token]) -> list[_Group]:
    """The groups of a sentence's tokens (character spans, in order) and words."""
    token_starts = [start for start, _ in token_spans]
    groups: list[_Group] = []
    for w, word in enumerate(words):
        first = bisect.bisect_right(token_starts, word.start) - 1
        last = bisect.bisect_left(token_starts, word.end) - 1
        if first < 0 or token_spans[first][1] <= word.start or last < first:
            raise ValueError(f"the word {word.form!r} at {word.start} lies in no token")
        if groups and first <= groups[-1].last_token:
            top = groups.pop()
            groups.append(_Group(top.first_word, w, top.first_token, max(last, top.last_token)))
        else:
            groups.append(_Group(w, w, first, last))
    return groups


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
    tree: Tree,
    dependencies: DependencyTree,
) -> Projection:
    """Carry ``tree`` and ``dependencies`` (over ``words``, placed in the same text as the
    tokens) onto the tokens of a sentence: ``token_spans`` their character spans, in
    order, ``first`` the doc index of the first. The module's rules."""
    if len(tree.leaves()) != len(words) or dependencies.n != len(words):
        raise ValueError(f"a tree of {len(tree.leaves())} words for {len(words)} words")
    count = len(token_spans)
    groups = _groups(token_spans, words)
    group_of_word = [0] * len(words)
    group_of_token = [-1] * count
    for g, group in enumerate(groups):
        group_of_word[group.first_word : group.last_word + 1] = [g] * (
            group.last_word - group.first_word + 1
        )
        for k in range(group.first_token, group.last_token + 1):
            group_of_token[k] = g

    # Constituents: each node of the tree whose edges fall on group edges, by token span.
    entries: dict[tuple[int, int], tuple[list[str], int]] = {}
    leaf_node: dict[int, int] = {}  # token -> its word's pre-terminal (one token, one word)
    nodes = list(tree.subtrees())
    for index, ((label, i, j), node) in enumerate(
        zip(tree.spans(include_preterminals=True), nodes, strict=True)
    ):
        gi, gj = groups[group_of_word[i]], groups[group_of_word[j - 1]]
        if node.is_preterminal():
            if gi.first_word == gi.last_word and gi.first_token == gi.last_token:
                leaf_node[gi.first_token] = index
            continue
        if gi.first_word != i or gj.last_word != j - 1:
            continue  # an edge inside a token
        if i == 0 and j == len(words):  # the top: the whole sentence, edge white space too
            span = (first, first + count)
        else:
            span = (first + gi.first_token, first + gj.last_token + 1)
        entries.setdefault(span, ([], index))[0].append(label)
    for k in range(count):
        entries.setdefault((first + k, first + k + 1), ([], leaf_node.get(k, -1)))
    order = sorted(entries, key=_preorder)

    # Dependencies: a group hangs from its word nearest the root, on its last token.
    word_heads = dependencies.heads
    depth = _depths(word_heads)
    tags = tree.tags()
    top_word = [
        min(range(g.first_word, g.last_word + 1), key=lambda w: (depth[w], w)) for g in groups
    ]
    heads, deps, token_tags = [0] * count, [""] * count, [SPACE_TAG] * count
    for k in range(count):
        g = group_of_token[k]
        if g < 0:
            continue
        word = top_word[g]
        token_tags[k] = tags[word]
        if k != groups[g].last_token:
            heads[k], deps[k] = first + groups[g].last_token, SUBTOKEN_DEP
            continue
        head = word_heads[word]
        target = k if head == 0 else groups[group_of_word[head - 1]].last_token
        heads[k], deps[k] = first + target, dependencies.relations[word]
    covered = [k for k in range(count) if group_of_token[k] >= 0]
    for k in range(count):
        if group_of_token[k] < 0:
            before = bisect.bisect_left(covered, k) - 1
            heads[k] = first + covered[before if before >= 0 else 0]
            deps[k] = SPACE_DEP
    return Projection(
        first,
        first + count,
        [span[0] for span in order],
        [span[1] for span in order],
        [entries[span][0] for span in order],
        [entries[span][1] for span in order],
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
    escaped as the Penn Treebank writes them; white space tokens left out."""
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
        text = "".join(ESCAPES.get(char, char) for char in texts[k])
        stack[-1][2].append(wrap(f"({tags[k - start]} {text})", labels[q]))
    while len(stack) > 1:
        close()
    return " ".join(stack[0][2])
