"""Eisner's algorithm: first-order projective dependency trees with a single root.

Scores follow the convention of every dependency structure here: ``scores`` (B, n+1, n+1),
``scores[b, h, m]`` scores the arc from head ``h`` to dependent ``m``; position 0 is the
ROOT and words are ``1..n``. Column 0 (arcs into the root) and the diagonal are ignored,
and exactly one word hangs from the root.
"""

from __future__ import annotations

import torch

from treeattn.structs.base import Semiring, TreeDistribution
from treeattn.structs.mst import check_arc_scores, check_real_arcs_finite, real_arcs_mask


class Eisner(TreeDistribution):
    """Projective dependency trees with one root word, scored arc by arc.

    ``scores`` (B, n+1, n+1) as in the module docstring; ``lengths`` (B,) counts each
    item's words (default n): positions past it are padding, with zero marginals. Parts
    (``marginals``, ``argmax``) have the shape of ``scores`` and are nonzero only on real
    arcs; ``mst.arcs_to_heads`` turns a 0/1 tree into heads. Scores on real arcs must be
    finite (``ValueError`` otherwise): forbid an arc with a large negative score instead.

    >>> eisner = Eisner(torch.zeros(1, 4, 4))
    >>> round(eisner.log_partition.exp().item())  # projective single-root trees, 3 words
    7
    >>> round(eisner.marginals[0, 0, 1:].sum().item(), 6)  # exactly one word on the root
    1.0
    """

    def __init__(self, scores: torch.Tensor, lengths: torch.Tensor | None = None) -> None:
        check_arc_scores(scores, type(self).__name__)
        super().__init__(scores, lengths)
        if not self.finite:
            check_real_arcs_finite(scores, self.lengths, type(self).__name__)

    def _max_length(self, scores: torch.Tensor) -> int:
        return scores.shape[-1] - 1

    def _inside(self, scores: torch.Tensor, semiring: Semiring) -> torch.Tensor:
        """(B,) inside value of the whole sentence, by one loop over span width.

        Words are indexed 0..n-1 here (word ``i`` is position ``i + 1`` of ``scores``). A
        span ``i..j`` (width ``w = j - i``) has four items:

        - complete right ``CR[i, j]``: head ``i`` with its finished right dependents up to
          ``j``; complete left ``CL[i, j]``: head ``j`` with its left dependents from ``i``;
        - incomplete ``IR[i, j]`` (arc ``i -> j``) and ``IL[i, j]`` (arc ``j -> i``), whose
          dependent still collects its own dependents on the inner side.

        In the semiring (``*`` is + of log scores, ``SUM`` is logsumexp or max):

        IR[i, j] = s(i -> j) * SUM_{i <= k < j} CR[i, k] * CL[k + 1, j]   (IL: s(j -> i))
        CR[i, j] = SUM_{i < k <= j} IR[i, k] * CR[k, j]
        CL[i, j] = SUM_{i <= k < j} CL[i, k] * IL[k, j]

        At width ``w`` every sum runs over ``w`` split points. The operands are kept as
        (B, n - w, w) tensors whose row ``i`` lists, in split order, the items the spans
        ``i..i+w`` combine: ``*_by_start`` hold items that start at ``i`` (widths 0, 1, ...)
        and ``*_by_end`` items that end at ``i + w`` (widths decreasing). Moving to width
        ``w + 1`` drops the last row and appends the new width's items as a column (by
        start) or drops the first row and prepends them (by end): concatenation, not
        in-place writes, so autograd (also double backward) sees plain ops, and no span
        needs a Python loop of its own.

        A span only combines scores inside itself, so padding never reaches a real item.
        The root goes on last: Z = SUM_r s(ROOT, r) * CL[0, r] * CR[r, len - 1].
        """
        batch, n = scores.shape[0], scores.shape[-1] - 1
        lengths = self.lengths
        # Ignored and padding entries become 0 so that nothing there (inf) can leak into a
        # gradient; real items never read them.
        scores = scores.masked_fill(~real_arcs_mask(lengths, n), 0.0)
        root_scores = scores[:, 0, 1:]  # (B, n): ROOT -> word
        word_scores = scores[:, 1:, 1:]  # (B, n, n): word h -> word m
        # right_arcs[w][b, i] = s(i -> i + w), left_arcs[w][b, i] = s(i + w -> i): one
        # gather each, so the backward pass is one scatter rather than n diagonal copies.
        offsets = torch.arange(n, device=scores.device)
        span_end = (offsets[:, None] + offsets[None, :]).clamp(max=n - 1).expand(batch, n, n)
        right_arcs = word_scores.gather(2, span_end).unbind(2)
        left_arcs = word_scores.transpose(1, 2).gather(2, span_end).unbind(2)

        # Width-0 items are the semiring's one, 0 in both log and max space.
        empty = scores.new_zeros(batch, n - 1, 1)
        complete_right_by_start = complete_left_by_start = empty
        complete_left_by_end = complete_right_by_end = empty
        incomplete_right_by_start = incomplete_left_by_end = scores.new_zeros(batch, n, 0)
        zero = scores.new_zeros(batch)
        left_from_first = [zero]  # CL[0, w]: word w's left half reaching the first word
        right_to_last = [zero]  # CR[len-1-w, len-1]: a right half reaching the last word
        for width in range(1, n):
            rows = n - width
            inner = semiring.sum(complete_right_by_start + complete_left_by_end, dim=-1)
            incomplete_right = inner + right_arcs[width][:, :rows]
            incomplete_left = inner + left_arcs[width][:, :rows]
            incomplete_right_by_start = torch.cat(
                [incomplete_right_by_start[:, :rows], incomplete_right[..., None]], dim=-1
            )
            incomplete_left_by_end = torch.cat(
                [incomplete_left[..., None], incomplete_left_by_end[:, 1:]], dim=-1
            )
            complete_right = semiring.sum(incomplete_right_by_start + complete_right_by_end, dim=-1)
            complete_left = semiring.sum(complete_left_by_start + incomplete_left_by_end, dim=-1)

            left_from_first.append(complete_left[:, 0])
            last_start = (lengths - 1 - width).clamp(min=0)  # wrong (unused) past the length
            right_to_last.append(complete_right.gather(1, last_start[:, None]).squeeze(1))

            complete_right_by_start = torch.cat(
                [complete_right_by_start[:, : rows - 1], complete_right[:, : rows - 1, None]], -1
            )
            complete_left_by_start = torch.cat(
                [complete_left_by_start[:, : rows - 1], complete_left[:, : rows - 1, None]], -1
            )
            complete_right_by_end = torch.cat(
                [complete_right[:, 1:, None], complete_right_by_end[:, 1:]], -1
            )
            complete_left_by_end = torch.cat(
                [complete_left[:, 1:, None], complete_left_by_end[:, 1:]], -1
            )

        left_halves = torch.stack(left_from_first, dim=1)  # (B, n), index r
        right_halves = torch.stack(right_to_last, dim=1)  # (B, n), index len - 1 - r
        root_child = torch.arange(n, device=scores.device).expand(batch, n)
        right_width = (lengths[:, None] - 1 - root_child).clamp(min=0)
        candidates = root_scores + left_halves + right_halves.gather(1, right_width)
        candidates = candidates.masked_fill(root_child >= lengths[:, None], -torch.inf)
        return semiring.sum(candidates, dim=-1)
