"""CKY over labeled span scores: binary constituency trees as a ``TreeDistribution``.

A tree over ``len`` words is a binary bracketing with ``2 * len - 1`` spans (the ``len``
one-word spans included), each span with exactly one label. Charts are (B, n, n, L):
``parts[b, i, j, l]`` is the span over words ``i..j`` *inclusive* with label ``l``. The
span lists used by ``Tree.spans`` are ``(label, start, end)`` with ``end`` exclusive;
``spans_tensor``, ``tree_spans`` and ``spans_to_trees`` convert between the two.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from treeattn.structs.base import Semiring, TreeDistribution, check_lengths
from treeattn.trees.tree import LabeledSpan, Tree

SpanIds = tuple[int, int, int]  # (label id, start, end exclusive)


class CKY(TreeDistribution):
    """Binary trees with labeled spans; a tree's score is the sum of its spans' label scores.

    ``scores`` (B, n, n, L): ``scores[b, i, j, l]`` scores the span over words ``i..j``
    (inclusive, ``i <= j``; entries with ``i > j`` are ignored) with label ``l``.
    ``lengths`` (B,) counts each item's words (default all ``n``); the tree of item ``b``
    covers words ``0..lengths[b] - 1`` and padding gets zero marginals.

    Scores of real cells (i <= j, inside the item) must be finite, as for every structure
    here (``ValueError`` otherwise): an infinite score makes log Z infinite, and a cell with
    every label at ``-inf`` makes the marginals NaN. To forbid a span or a label, give it a
    large finite negative score (say -1e4). Cells outside the items may hold anything but
    NaN.

    >>> scores = torch.zeros(1, 3, 3, 2)
    >>> cky = CKY(scores)
    >>> round(cky.log_partition.item(), 4)  # 2 bracketings, 2 labels on each of 5 spans
    4.1589
    >>> cky.marginals[0, 0, 2].tolist()  # the root: always there, either label
    [0.5, 0.5]
    >>> int(cky.argmax.sum())
    5
    """

    def __init__(self, scores: torch.Tensor, lengths: torch.Tensor | None = None) -> None:
        super().__init__(scores, lengths)
        if not self.finite and (torch.isinf(scores.detach()) & self._real_cells()[..., None]).any():
            raise ValueError("CKY scores must be finite in real cells (use -1e4, not -inf)")

    def _real_cells(self) -> torch.Tensor:
        """(B, n, n) True at the cells i <= j < length of each item."""
        n = self.scores.shape[1]
        offsets = torch.arange(n, device=self.scores.device)
        inside = offsets[None, :] < self.lengths[:, None]
        upper = offsets[:, None] <= offsets[None, :]
        return upper & inside[:, :, None] & inside[:, None, :]

    def _max_length(self, scores: torch.Tensor) -> int:
        if scores.dim() != 4 or scores.shape[1] != scores.shape[2]:
            raise ValueError(f"CKY scores must be (B, n, n, L), got {tuple(scores.shape)}")
        if scores.shape[1] == 0 or scores.shape[3] == 0:
            raise ValueError(
                f"CKY scores need n >= 1 words and L >= 1 labels, got {tuple(scores.shape)}"
            )
        return scores.shape[1]

    def _inside(self, scores: torch.Tensor, semiring: Semiring) -> torch.Tensor:
        """(B,) inside value of the root span of each item, by one loop over span width.

        Two charts hold the inside values found so far, both (B, n, widths so far):
        ``by_start[:, i, w - 1]`` is the span of width ``w`` starting at word ``i``, and
        ``by_end[:, j, t]`` the span ending at word ``j`` whose width is ``widths - t``
        (newest width first). Every span of width ``w`` splits into a left part of width
        ``a`` (1..w-1) and a right part of width ``w - a``; at step ``w`` the left parts of
        all spans are ``by_start[:, :n - w + 1]`` and the right parts ``by_end[:, w - 1:]``,
        both ordered by ``a``. The charts grow by concatenation, not in-place writes, so
        autograd (and double backward, for differentiable marginals) sees plain ops.
        """
        batch, n = scores.shape[:2]
        # Labels are reduced once, (B, n, n). Then ``by_width[w - 1][b, i]`` is the span of
        # width ``w`` starting at word ``i``: one gather for all widths (i + w - 1 clamped
        # past the end, never read), whose backward is one scatter, where a diagonal per
        # width would zero-fill a full chart in the backward pass n times.
        offsets = torch.arange(n, device=scores.device)
        # Cells with i > j and padding cells are never read by a real span. When scores
        # hold +-inf there (a full pass is costly, so only then), those cells are zeroed
        # first so that no inf reaches a gradient through the label reduction.
        if not self.finite:
            scores = scores.masked_fill(~self._real_cells()[..., None], 0.0)
        spans = semiring.sum(scores, dim=-1)
        span_end = (offsets[:, None] + offsets[None, :]).clamp(max=n - 1).expand(batch, n, n)
        by_width = spans.gather(2, span_end).unbind(2)
        word_spans = by_width[0]
        by_start = word_spans.unsqueeze(-1)
        by_end = word_spans.unsqueeze(-1)
        for width in range(2, n + 1):
            starts = n - width + 1
            span_scores = by_width[width - 1][:, :starts]
            # Semiring product is + in both log and max space.
            splits = by_start[:, :starts] + by_end[:, width - 1 :]
            inside = span_scores + semiring.sum(splits, dim=-1)  # (B, starts)
            # Pad to n positions (the padding is never read: see the docstring).
            by_start = torch.cat([by_start, F.pad(inside, (0, width - 1)).unsqueeze(-1)], -1)
            by_end = torch.cat([F.pad(inside, (width - 1, 0)).unsqueeze(-1), by_end], -1)
        # by_start[:, 0, w - 1] is the span over words 0..w-1: the root of a w-word item.
        root = (self.lengths - 1).unsqueeze(1)
        return by_start[:, 0].gather(1, root).squeeze(1)

    def loss_augmented(self, gold: torch.Tensor) -> CKY:
        """The same distribution with a Hamming cost of 1 on every labeled span not in gold.

        ``gold`` (B, n, n, L) is the 0/1 chart of the gold trees. The new scores are
        ``scores + (1 - gold)``, so a tree's new score is its score plus the number of its
        labeled spans that are not gold spans. The structured hinge loss (as in benepar) is
        ``cky.loss_augmented(gold).max - cky.score(gold)``: zero only when the gold tree
        beats every other tree by at least its Hamming distance to gold.
        """
        if gold.shape != self.scores.shape:
            raise ValueError(
                f"gold of shape {tuple(gold.shape)} for scores {tuple(self.scores.shape)}"
            )
        return CKY(self.scores + (1 - gold.to(self.scores.dtype)), self.lengths)


def spans_tensor(
    span_lists: Sequence[Sequence[SpanIds]],
    n: int,
    n_labels: int,
    device: torch.device | str | None = None,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """(B, n, n, L) 0/1 chart from, per item, a list of ``(label_id, start, end)``.

    ``end`` is exclusive (as in ``Tree.spans``): the span fills cell ``[start, end - 1]``.
    ``dtype`` defaults to torch's default float type.

    >>> spans_tensor([[(1, 0, 2), (0, 1, 2)]], n=2, n_labels=2)[0, :, :, 1].tolist()
    [[0.0, 1.0], [0.0, 0.0]]
    """
    index: list[tuple[int, int, int, int]] = []
    for b, spans in enumerate(span_lists):
        for label, start, end in spans:
            if not 0 <= label < n_labels or not 0 <= start < end <= n:
                raise ValueError(
                    f"item {b}: span (label {label}, {start}, {end}) outside "
                    f"{n_labels} labels or words 0..{n}"
                )
            index.append((b, start, end - 1, label))
    parts = torch.zeros(len(span_lists), n, n, n_labels, device=device, dtype=dtype)
    if index:
        parts[tuple(torch.tensor(index, device=parts.device).T)] = 1
    return parts


def tree_spans(
    parts: torch.Tensor, lengths: torch.Tensor | Sequence[int] | None = None
) -> list[list[SpanIds]]:
    """Per item, the ``(label_id, start, end)`` (end exclusive) of every 1 in ``parts``.

    ``parts`` (B, n, n, L) is a 0/1 chart (e.g. ``CKY.argmax``; a cell counts as 1 when it
    is above 0.5); cells with ``i > j`` or past ``lengths[b]`` (default all ``n``) are left
    out. Spans come in pre-order: start ascending, wider first, then by label id.
    """
    if parts.dim() != 4 or parts.shape[1] != parts.shape[2]:
        raise ValueError(f"parts must be (B, n, n, L), got {tuple(parts.shape)}")
    n = parts.shape[1]
    lengths = check_lengths(parts, lengths, n).tolist()
    upper = torch.ones(n, n, dtype=torch.bool, device=parts.device).triu()  # cells with i <= j
    chosen = (parts.detach() > 0.5) & upper[:, :, None]
    found: list[list[SpanIds]] = [[] for _ in lengths]
    for b, start, last, label in chosen.nonzero().tolist():
        if last < lengths[b]:
            found[b].append((label, start, last + 1))
    for spans in found:
        spans.sort(key=lambda span: (span[1], -span[2], span[0]))
    return found


def spans_to_trees(
    parts: torch.Tensor,
    lengths: torch.Tensor | Sequence[int] | None,
    words: Sequence[Sequence[str]],
    labels: Sequence[str],
    empty_label: str | None = None,
    root_label: str = "TOP",
) -> list[Tree]:
    """The ``Tree`` of each item of a 0/1 chart ``parts`` (B, n, n, L).

    ``words[b]`` are item ``b``'s words (as many as ``lengths[b]``), ``labels[l]`` the
    name of label id ``l``. Spans labeled ``empty_label`` (a chart parser's "no
    constituent") are left out; one-word spans that remain become pre-terminals. When no
    remaining span covers all words, the tree is wrapped in a ``root_label`` node.

    >>> parts = spans_tensor([[(0, 0, 3), (1, 1, 3)]], n=3, n_labels=2)
    >>> spans_to_trees(parts, None, [["a", "b", "c"]], ["S", "VP"])[0].to_brackets()
    '(S a (VP b c))'
    """
    span_lists = tree_spans(parts, lengths)
    if len(words) != len(span_lists):
        raise ValueError(f"{len(words)} word lists for a batch of {len(span_lists)}")
    if len(labels) != parts.shape[3]:
        raise ValueError(f"{len(labels)} label names for {parts.shape[3]} labels")
    n_words = check_lengths(parts, lengths, parts.shape[1]).tolist()
    trees: list[Tree] = []
    for b, (spans, item_words) in enumerate(zip(span_lists, words, strict=True)):
        if len(item_words) != n_words[b]:
            raise ValueError(f"item {b}: {len(item_words)} words but length {n_words[b]}")
        named: list[LabeledSpan] = [
            (labels[label], start, end)
            for label, start, end in spans
            if labels[label] != empty_label
        ]
        if not any(start == 0 and end == n_words[b] for _, start, end in named):
            named.insert(0, (root_label, 0, n_words[b]))
        trees.append(Tree.from_spans(item_words, named))
    return trees
