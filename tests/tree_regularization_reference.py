"""TreeReg (Nandi, Manning & Murty, NAACL 2025) written straight from its equations, one
sentence at a time, with plain loops, in float64: the slow reference of
``treeattn.attention.tree_regularization``.

The sentence is a sequence of pieces (a word is one piece or several); ``hidden`` holds
their states in order, without any start token's, as the paper's release takes them.
Piece indices below are the release's: spans ``[st, en]`` inclusive.

- orth(x, y) = x - (x . y / ||y||^2) y, the part of x orthogonal to y;
- SCIN(st, en) = ||orth(h[en], h[st - 1])||, 0 when st = 0 (no context), and 0 for the
  one-piece span just past the sentence's end;
- a span [st, en] with a word starting at k + 1 may split after piece k, scored
  S(st, k, en) = SCIN(st, k) + SCIN(k + 1, en) + SCIN(k + 1, k + 1) + SCIN(en + 1, en + 1);
- a span with two or more such split points adds -log softmax(S)[gold] to the loss; the
  tree is binarized to the right (unary chains collapsed) first, and the gold split of
  each node is the start of its second child;
- the sentence's loss is the mean over those spans (0 if none).
"""

from __future__ import annotations

import torch

from treeattn.trees import Tree


def binary(node: Tree | str) -> tuple | str:
    """The tree as nested pairs: a node with one child is that child, and (a b c ...) is
    (a (b (c ...)))."""
    if isinstance(node, str):
        return node
    if len(node.children) == 1:
        return binary(node.children[0])
    return _right(node.children)


def _right(children: list) -> tuple | str:
    if len(children) == 1:
        return binary(children[0])
    return (binary(children[0]), _right(children[1:]))


def _width(node: tuple | str) -> int:
    return 1 if isinstance(node, str) else _width(node[0]) + _width(node[1])


def gold_splits(tree: Tree, pieces_per_word: list[int]) -> dict[tuple[int, int], int]:
    """Each binary node's piece span [st, en] (inclusive) -> the last piece of its left
    child."""
    starts = [0]
    for count in pieces_per_word:
        starts.append(starts[-1] + count)
    found: dict[tuple[int, int], int] = {}

    def visit(node: tuple | str, word: int) -> None:
        if isinstance(node, str):
            return
        left = _width(node[0])
        end = word + _width(node)
        found[(starts[word], starts[end] - 1)] = starts[word + left] - 1
        visit(node[0], word)
        visit(node[1], word + left)

    visit(binary(tree), 0)
    return found


def scin(hidden: torch.Tensor, st: int, en: int) -> torch.Tensor:
    length = hidden.shape[0]
    if st == 0 or st >= length:
        return torch.zeros((), dtype=hidden.dtype)
    x, y = hidden[en], hidden[st - 1]
    along = sum(x[i] * y[i] for i in range(len(x))) / sum(v * v for v in y)
    return torch.sqrt(sum((x[i] - along * y[i]) ** 2 for i in range(len(x))))


def sentence_loss(hidden: torch.Tensor, tree: Tree, pieces_per_word: list[int]) -> torch.Tensor:
    """The TreeReg loss of one sentence: ``hidden`` (P, d) its pieces' states."""
    word_start = [False] * (hidden.shape[0] + 1)
    position = 0
    for count in pieces_per_word:
        word_start[position] = True
        position += count
    word_start[position] = True  # the end of the sentence closes the last word
    gold = gold_splits(tree, pieces_per_word)
    total, terms = torch.zeros((), dtype=hidden.dtype), 0
    for (st, en), best in gold.items():
        candidates = [k for k in range(st, en) if word_start[k + 1]]
        if len(candidates) < 2:
            continue
        scores = [
            scin(hidden, st, k)
            + scin(hidden, k + 1, en)
            + scin(hidden, k + 1, k + 1)
            + scin(hidden, en + 1, en + 1)
            for k in candidates
        ]
        log_total = torch.logsumexp(torch.stack(scores), 0)
        total = total - (scores[candidates.index(best)] - log_total)
        terms += 1
    return total / max(terms, 1)
