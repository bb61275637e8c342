"""CKY over labeled span scores: binary constituency trees as a ``TreeDistribution``.

A tree over ``len`` words is a binary bracketing with ``2 * len - 1`` spans (the ``len``
one-word spans included), each span with exactly one label. Charts are (B, n, n, L):
``parts[b, i, j, l]`` is the span over words ``i..j`` *inclusive* with label ``l``. The
span lists used by ``Tree.spans`` are ``(label, start, end)`` with ``end`` exclusive;
``spans_tensor``, ``tree_spans`` and ``spans_to_trees`` convert between the two.

``CKY._inside`` is the dynamic program written for autograd (one loop over span width),
the reference. The properties take a faster path with the same results: labels reduced
once, two charts filled in place (no autograd), the marginals by a hand-written outside
pass (``log_inside``, ``log_outside``) and the best tree by Viterbi maxima and backtracking
of the best splits (``max_inside``, ``backtrack``), each one loop over span width.
Second derivatives (marginals of scores that need grad) go through the reference.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from treeattn.structs.base import (
    LogSemiring,
    Semiring,
    TreeDistribution,
    check_lengths,
    gradient_of,
)
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

    @property
    def log_partition(self) -> torch.Tensor:
        """(B,) log of the sum over trees of exp(tree score)."""
        return self._log_partition_of(self.scores)

    def _log_partition_of(self, scores: torch.Tensor) -> torch.Tensor:
        real_cells = None if self.finite else self._real_cells()
        return _LogPartition.apply(
            scores, self.lengths, real_cells, lambda again: self._inside(again, LogSemiring)
        )

    @property
    def marginals(self) -> torch.Tensor:
        """Each labeled span's probability of being in the tree (B, n, n, L): the gradient of
        log Z, by the hand-written outside pass (or, when the scores need grad, through the
        autograd reference alone, so that the marginals are differentiable)."""
        if self.scores.requires_grad and torch.is_grad_enabled():
            return super().marginals  # the fast pass would be thrown away
        return gradient_of(self._log_partition_of, self.scores)

    @property
    def argmax(self) -> torch.Tensor:
        """The best tree (B, n, n, L) 0/1, by Viterbi with best splits kept and followed back
        from the root (no autograd); no graph."""
        scores = self.scores.detach()
        if not self.finite:
            scores = scores.masked_fill(~self._real_cells()[..., None], 0.0)
        by_start, by_end = max_inside(reduce_labels_max(scores))
        return label_one_hot(scores, backtrack(by_start, by_end, self.lengths))

    @property
    def max(self) -> torch.Tensor:
        """(B,) the best tree's score, differentiable (its gradient is the best tree)."""
        return self.score(self.argmax)

    def _inside(self, scores: torch.Tensor, semiring: Semiring) -> torch.Tensor:
        """(B,) inside value of the root span of each item, by one loop over span width,
        written for autograd: the reference of the fast path (``log_inside``,
        ``log_outside``, ``max_inside``, ``backtrack``), and the route of second derivatives.

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


# ---------------------------------------------------------------------- the fast path
#
# Charts (B, n, n) of inside values, filled in place one span width at a time (no
# autograd: each pass has a hand-written counterpart). ``by_start[b, i, w - 1]`` holds the
# span of width ``w`` starting at word ``i``; ``by_end[b, j, n - w]`` the span of width
# ``w`` ending at word ``j``, widths stored backwards so that, for the spans of width
# ``w``, the left parts ``by_start[:, :starts, :w - 1]`` and the right parts
# ``by_end[:, w - 1:, n - w + 1:]`` are two strided views in the same split order (left
# width 1, 2, ..., w - 1): two charts, no copies.


def reduce_labels_log(scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(span log-sums over labels (B, n, n), label weights (B, n, n, L), their sums
    (B, n, n)): ``logsumexp`` over labels as ``log(sum(exp(scores - shift))) + shift``; the
    labels' marginals are then ``weights / sums`` times the span's.

    ``logsumexp`` and ``amax`` over a short last dimension are about 10x slower on a CPU
    than ``exp`` and ``sum`` over the same tensor, so a batch whose scores spread little
    shifts by one number, its largest score (every cell's largest weight stays a normal
    float, so no precision is lost), and only a batch of wider spread by each cell's own
    maximum.
    """
    low, high = (bound.item() for bound in torch.aminmax(scores))
    if high - low <= -0.9 * math.log(torch.finfo(scores.dtype).tiny):
        weights = (scores - high).exp_()
        sums = weights.sum(-1)
        return sums.log().add_(high), weights, sums
    shift = scores.amax(-1, keepdim=True)
    weights = (scores - shift).exp_()
    sums = weights.sum(-1)
    return sums.log().add_(shift.squeeze(-1)), weights, sums


def reduce_labels_max(scores: torch.Tensor) -> torch.Tensor:
    """(B, n, n) the best label score of each span. Halving the labels with overlapping
    halves (max is idempotent) beats ``amax`` over the short last dimension."""
    while scores.shape[-1] > 1:
        labels = scores.shape[-1]
        half = (labels + 1) // 2
        scores = torch.maximum(scores[..., :half], scores[..., labels - half :])
    return scores[..., 0]


def new_charts(spans: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Empty ``by_start`` and ``by_end`` charts (see above) with the one-word spans filled
    in from span values (B, n, n); entries never written are never read."""
    batch, n, _ = spans.shape
    by_start, by_end = spans.new_empty(batch, n, n), spans.new_empty(batch, n, n)
    words = spans.diagonal(dim1=1, dim2=2)
    by_start[:, :, 0] = words
    by_end[:, :, n - 1] = words
    return by_start, by_end


def split_parts(
    by_start: torch.Tensor, by_end: torch.Tensor, width: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The left and right parts (B, starts, width - 1) of every span of ``width``, in split
    order (views)."""
    n = by_start.shape[1]
    return by_start[:, : n - width + 1, : width - 1], by_end[:, width - 1 :, n - width + 1 :]


def store(by_start: torch.Tensor, by_end: torch.Tensor, width: int, values: torch.Tensor):
    """Write the values (B, starts) of the spans of ``width`` into both charts."""
    n = by_start.shape[1]
    by_start[:, : n - width + 1, width - 1] = values
    by_end[:, width - 1 :, n - width] = values


def log_inside(spans: torch.Tensor) -> tuple[torch.Tensor, list]:
    """The ``by_start`` chart of inside log-sums from span values (B, n, n), and per width
    from 2 on, the splits' weights (B, starts, width - 1) and their sums (B, starts), from
    which ``log_outside`` takes each split's share."""
    n = spans.shape[1]
    by_start, by_end = new_charts(spans)
    shares = []
    for width in range(2, n + 1):
        left, right = split_parts(by_start, by_end, width)
        splits = left + right
        shift = splits.amax(-1, keepdim=True)
        weights = splits.sub_(shift).exp_()
        sums = weights.sum(-1)
        values = sums.log().add_(shift.squeeze(-1)).add_(spans.diagonal(width - 1, 1, 2))
        store(by_start, by_end, width, values)
        shares.append((weights, sums))
    return by_start, shares


def log_outside(shares: list, root_gradient: torch.Tensor) -> torch.Tensor:
    """(B, n, n) the gradient of the root values with respect to the span values, from the
    splits' weights of ``log_inside`` and ``root_gradient`` (B, n, n) on ``by_start``
    (nonzero at each item's root).

    Backpropagation by hand, widest spans first: a span's gradient, once all its parents
    are done, goes to its own value and, split by split in proportion to each split's
    weight, to its two parts."""
    n = root_gradient.shape[1]
    to_start, to_end = root_gradient.clone(), torch.zeros_like(root_gradient)
    gradient = torch.zeros_like(root_gradient)
    for width in range(n, 1, -1):
        starts = n - width + 1
        total = to_start[:, :starts, width - 1] + to_end[:, width - 1 :, n - width]
        gradient.diagonal(width - 1, 1, 2).copy_(total)
        weights, sums = shares[width - 2]
        to_parts = weights * (total / sums).unsqueeze(-1)
        left, right = split_parts(to_start, to_end, width)
        left += to_parts
        right += to_parts
    gradient.diagonal(dim1=1, dim2=2).copy_(to_start[:, :, 0] + to_end[:, :, n - 1])
    return gradient


def max_inside(spans: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``by_start`` and ``by_end`` charts of best scores from span values (B, n, n)
    (Viterbi). Only the maxima: which split attains one is found by ``backtrack`` for the
    spans of the best tree alone (a ``max`` with indices over every span costs 4x more)."""
    n = spans.shape[1]
    by_start, by_end = new_charts(spans)
    for width in range(2, n + 1):
        left, right = split_parts(by_start, by_end, width)
        values = (left + right).amax(-1).add_(spans.diagonal(width - 1, 1, 2))
        store(by_start, by_end, width, values)
    return by_start, by_end


def backtrack(by_start: torch.Tensor, by_end: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, n, n) bool: the spans ``[i, j]`` (inclusive) of each item's best tree, from the
    charts of ``max_inside``: from the roots down, each chosen span's best split (the first,
    on ties) marks its two parts."""
    batch, n, _ = by_start.shape
    chosen = torch.zeros(by_start.shape, dtype=torch.bool, device=by_start.device)
    chosen[torch.arange(batch, device=chosen.device), 0, lengths - 1] = True
    for width in range(n, 1, -1):
        items, starts = chosen.diagonal(width - 1, 1, 2).nonzero(as_tuple=True)
        lasts = starts + width - 1
        splits = by_start[items, starts, : width - 1] + by_end[items, lasts, n - width + 1 :]
        middles = starts + splits.argmax(-1)  # the left part's last word
        chosen[items, starts, middles] = True
        chosen[items, middles + 1, lasts] = True
    return chosen


def label_one_hot(scores: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """(B, n, n, L) 0/1: the best label (the first, on ties) of each chosen span
    (``chosen`` (B, n, n) bool)."""
    items, starts, lasts = chosen.nonzero(as_tuple=True)
    labels = scores[items, starts, lasts].argmax(-1)
    parts = torch.zeros_like(scores)
    parts[items, starts, lasts, labels] = 1.0
    return parts


class _LogPartition(torch.autograd.Function):
    """log Z (B,) from scores (B, n, n, L) by ``log_inside``; its backward is ``log_outside``
    (the marginals). A second derivative (``create_graph``) differentiates ``reference``,
    the inside pass written for autograd, instead."""

    @staticmethod
    def forward(ctx, scores, lengths, real_cells, reference):
        work = scores.detach()
        if real_cells is not None:  # scores hold +-inf somewhere: clear the unread cells
            work = work.masked_fill(~real_cells[..., None], 0.0)
        spans, label_weights, label_sums = reduce_labels_log(work)
        by_start, shares = log_inside(spans)
        ctx.save_for_backward(scores, lengths)
        ctx.reference, ctx.shares = reference, shares
        ctx.label_weights, ctx.label_sums = label_weights, label_sums
        return by_start[:, 0].gather(1, (lengths - 1).unsqueeze(1)).squeeze(1)

    @staticmethod
    def backward(ctx, grad_log_z):
        scores, lengths = ctx.saved_tensors
        if torch.is_grad_enabled():
            (gradient,) = torch.autograd.grad(
                ctx.reference(scores), scores, grad_log_z, create_graph=True
            )
            return gradient, None, None, None
        batch, n = scores.shape[:2]
        root = grad_log_z.new_zeros(batch, n, n)
        root[torch.arange(batch, device=root.device), 0, lengths - 1] = grad_log_z
        span_gradient = log_outside(ctx.shares, root)
        # Each label takes its share of its span's gradient.
        gradient = ctx.label_weights * (span_gradient / ctx.label_sums).unsqueeze(-1)
        return gradient, None, None, None


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
