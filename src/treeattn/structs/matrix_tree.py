"""Non-projective dependency trees with a single root by the matrix-tree theorem.

Koo, Globerson, Carreras & Collins (2007), "Structured prediction models via the matrix-tree
theorem": with arc weights ``w[h, m] = exp(s[h, m])``, the sum over single-root trees is
the determinant of the word Laplacian (``L[m, m]`` = sum of the word heads' weights into
``m``, ``L[h, m] = -w[h, m]``) whose first row is replaced by the root weights
``w[ROOT, m]``. Scores follow the convention of every dependency structure here (see
``mst``): ``scores`` (B, n+1, n+1), ``scores[b, h, m]`` for the arc ``h -> m``, position 0
the ROOT, column 0 and the diagonal ignored.

A library LU (``slogdet``) gets the determinant, a sum of positive tree weights, from
differences, which cancel once the best tree scores far below the sum of every word's best
incoming arc: with 80 words and N(0, sigma^2) scores, a float64 LU of the column-shifted
Laplacian is off by 1e-5 at sigma = 30, wrong at 100 (negative determinants) and NaN from
a few hundred on. So each item takes the LU only where a check of its own marginals trusts
it (``lu_log_det_and_gradient``), and otherwise a Gaussian elimination in log space that never
subtracts (``eliminate``): exact to rounding at any scale, at about n^3 / 3 exp/log
operations where an LU takes n^3 / 3 multiply-adds (about 10x the time on a CPU), and
O(n^3) memory per item kept by autograd for the backward pass.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from treeattn.structs.base import LogSemiring, Semiring, TreeDistribution
from treeattn.structs.mst import (
    best_heads,
    check_arc_scores,
    check_real_arcs_finite,
    heads_to_arcs,
    real_arcs_mask,
)

# Log weight of an arc that cannot exist (padding): finite, so that no gradient meets
# inf - inf, and so low that exp() of it is exactly 0 next to any real weight.
IMPOSSIBLE = -1e30


def log_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """log(exp(x) + exp(y)), precise, with first and second derivatives free of NaN.

    (``torch.logaddexp``'s second derivative is NaN once ``|x - y|`` passes ~700.)
    """
    high, low = torch.maximum(x, y), torch.minimum(x, y)
    return high + F.softplus(low - high)


def shifted_log_weights(
    scores: torch.Tensor, lengths: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Arc log-weights (B, n+1, n) ``[head 0..n, word 1..n]``, column shifts (B, n) and
    which words are padding (B, n).

    Each word's column is shifted by its best incoming score (a constant, detached): every
    tree gives each word one head, so log Z moves by the sum of the shifts, and the
    weights that matter stay near 1, where float32 is precise too. Arcs no tree may use
    get ``IMPOSSIBLE``. A padding word (past ``lengths``) gets weight 1 from the first word
    and nothing else, so it is a leaf hung from the first word in every tree: the
    determinant and the real words' marginals are unchanged, and padding arcs (masked)
    have zero marginals.
    """
    n = scores.shape[-1] - 1
    real = real_arcs_mask(lengths, n)[:, :, 1:]  # (B, n+1, n): heads 0..n -> words 1..n
    log_weights = torch.where(real, scores[:, :, 1:], -torch.inf)
    best_incoming = log_weights.detach().amax(dim=1)  # (B, n)
    is_padding = torch.arange(1, n + 1, device=lengths.device) > lengths[:, None]
    best_incoming.masked_fill_(is_padding, 0.0)
    log_weights = (log_weights - best_incoming[:, None, :]).clamp(min=IMPOSSIBLE)
    log_weights[:, 1].masked_fill_(is_padding, 0.0)  # padding hangs from the first word
    return log_weights, best_incoming, is_padding


def eliminate(log_weights: torch.Tensor) -> torch.Tensor:
    """(B,) log det of the Laplacian with the root row, from arc log-weights (B, n+1, n).

    Gaussian elimination of the words from the last one to the second, in log space. Taking
    out word ``j`` (pivot ``d_j``, the total weight into ``j`` from the words still there)
    leaves the Laplacian of the smaller graph where each path ``h -> j -> m`` becomes an arc
    of weight ``w[h, j] / d_j * w[j, m]`` (added to ``w[h, m]``) and the root row gets
    ``w[ROOT, j] / d_j * w[j, m]``; the first word is left with its root weight. Then
    ``Z = prod_j d_j * w'[ROOT, first word]``. Each new diagonal is recomputed as a sum of
    its column rather than by the usual subtraction (Grassmann, Taksar & Heyman 1985), so
    every step adds positive numbers: in log space nothing cancels, underflows or overflows,
    whatever the scores, and no floor on small weights is needed.
    """
    n = log_weights.shape[-1]
    # softplus(x) is x itself to within rounding past this point.
    linear_beyond = 2.0 - math.log(torch.finfo(log_weights.dtype).eps)
    root = log_weights[:, 0]  # (B, words left)
    words = log_weights[:, 1:]  # (B, words left, words left): [head, dependent]
    log_z = log_weights.new_zeros(log_weights.shape[0])
    for size in range(n, 1, -1):
        last = size - 1  # the word taken out now
        # split, not three slices: its backward is one concatenation, where each slice
        # would fill a zero gradient the size of ``words``.
        heads_left, from_last = words.split([last, 1], dim=1)
        kept, incoming = heads_left.split([last, 1], dim=2)
        incoming = incoming.squeeze(2)  # (B, last): the words left -> the last word
        outgoing = from_last[:, 0, :last]  # (B, last): the last word -> the words left
        log_pivot = torch.logsumexp(incoming, dim=-1)
        share = incoming - log_pivot[:, None]  # log(w[h, last] / d_last)
        root = log_add(root[:, :last], (root[:, last] - log_pivot)[:, None] + outgoing)
        through_last = share[:, :, None] + outgoing[:, None, :]
        # log(exp(kept) + exp(through_last)), to within rounding of their difference (half
        # the cost of log_add); the diagonal (self-loops) is never read.
        words = kept + F.softplus(through_last - kept, threshold=linear_beyond)
        log_z = log_z + log_pivot
    return log_z + root[:, 0]


def laplacian(weights: torch.Tensor) -> torch.Tensor:
    """(B, n, n) the Laplacian with the root row, from arc weights (B, n+1, n).

    ``L[m, m]`` is the weight into word ``m`` from the words, ``L[h, m] = -w[h, m]``, and
    the first row holds the root weights ``w[ROOT, m]`` (Koo et al.). Written in place
    into a new tensor (autograd follows it): concatenating views copies far more slowly.
    """
    words = weights[:, 1:]  # self-loops are IMPOSSIBLE: their weight is 0
    matrix = words.neg()
    matrix.diagonal(dim1=-2, dim2=-1).add_(words.sum(1))
    matrix[:, 0] = weights[:, 0]
    return matrix


def lu_log_det(log_weights: torch.Tensor) -> torch.Tensor:
    """(B,) log det of the Laplacian with the root row by a library LU, differentiable
    (twice too): the path of second derivatives. Items must have positive determinants."""
    return torch.linalg.slogdet(laplacian(log_weights.exp()))[1]


def lu_log_det_and_gradient(
    log_weights: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(log det, its gradient, trusted): (B,), (B, n+1, n), (B,), by one LU and its inverse.

    The gradient of log det L is ``G = L^-T``; through the Laplacian's construction, the
    gradient with respect to the log-weights is Koo et al.'s closed form, with words
    indexed from 0 as the Laplacian's rows and columns: ``w[ROOT, m] * G[0, m]`` for root
    arcs and ``w[h, m] * ([m > 0] G[m, m] - [h > 0] G[h, m])`` for word arcs (the first row
    and the first word's diagonal entry hold root weights). That gradient is every arc's
    marginal.

    LU gets the determinant from differences, which cancel when the trees' total weight is
    far below the weights it is computed from (see the module docstring). The check needs
    no reference: the marginals must give each word exactly one head. Cancellation breaks
    that identity as much as the marginals themselves, so an item is trusted when its head
    marginals sum to 1 within sqrt(eps) and none is below -sqrt(eps), and its determinant is
    positive and finite. Untrusted items' values are meaningless (maybe NaN).
    """
    weights = log_weights.exp()
    matrix = laplacian(weights)
    n = matrix.shape[-1]
    lu, pivots, _ = torch.linalg.lu_factor_ex(matrix)
    diagonal = lu.diagonal(dim1=-2, dim2=-1)
    swaps = pivots != torch.arange(1, n + 1, device=pivots.device, dtype=pivots.dtype)
    # det > 0: an even count of row swaps and negative pivots (summed at once as an xor).
    positive = (swaps ^ (diagonal < 0)).sum(-1) % 2 == 0
    log_det = diagonal.abs().log().sum(-1)
    identity = torch.eye(n, dtype=matrix.dtype, device=matrix.device).expand_as(matrix)
    inverse_t = torch.linalg.lu_solve(lu, pivots, identity).mT  # G = L^-T
    # G[m, m], but 0 for the first word, whose diagonal entry is its root weight.
    into_self = F.pad(inverse_t.diagonal(dim1=-2, dim2=-1)[:, 1:], (1, 0))[:, None, :]
    gradient = torch.empty_like(weights)
    gradient[:, 0] = inverse_t[:, 0]
    torch.sub(into_self, inverse_t, out=gradient[:, 1:])
    gradient[:, 1] = into_self[:, 0]
    gradient *= weights
    tolerance = torch.finfo(log_weights.dtype).eps ** 0.5
    # Head sums of 1 and no marginal below 0 bound each marginal by 1 + n * tolerance.
    # (A singular LU gives an infinite log det and NaN or inf marginals: never trusted.)
    head_sum_error = (gradient.sum(1) - 1).abs().amax(1)
    lowest = gradient.flatten(1).amin(1)
    trusted = positive & (head_sum_error <= tolerance) & (lowest >= -tolerance)
    return log_det, gradient, trusted


def mixed_log_det(log_weights: torch.Tensor, trusted: torch.Tensor) -> torch.Tensor:
    """(B,) log det by ``lu_log_det`` for trusted items and ``eliminate`` for the others,
    differentiable (twice too). The untrusted items' LU may be singular: its backward (an
    inverse) would put NaN into their gradients even with zero weight, so each path only
    sees its own items."""
    if trusted.all():
        return lu_log_det(log_weights)
    log_det = log_weights.new_zeros(log_weights.shape[0])
    if trusted.any():
        log_det = log_det.index_put((trusted,), lu_log_det(log_weights[trusted]))
    return log_det.index_put((~trusted,), eliminate(log_weights[~trusted]))


class _LogPartition(torch.autograd.Function):
    """log Z from scores (B, n+1, n+1), its gradient (the marginals) found in the forward
    pass, where the LU's trust check needs it anyway: the backward pass is one product.

    Items the LU cannot be trusted with take ``eliminate``, and its gradient by autograd.
    A second derivative (``create_graph``) recomputes the gradient by autograd through
    ``mixed_log_det``, so it is differentiable again.
    """

    @staticmethod
    def forward(ctx, scores: torch.Tensor, lengths: torch.Tensor, dtype: torch.dtype):
        log_weights, shifts, is_padding = shifted_log_weights(scores.detach().to(dtype), lengths)
        log_det, gradient, trusted = lu_log_det_and_gradient(log_weights)
        if not trusted.all():
            untrusted = ~trusted
            needs_gradient = ctx.needs_input_grad[0]
            with torch.inference_mode(False), torch.set_grad_enabled(needs_gradient):
                leaf = log_weights[untrusted].clone().requires_grad_(needs_gradient)
                eliminated = eliminate(leaf)
                if needs_gradient:
                    (leaf_gradient,) = torch.autograd.grad(eliminated.sum(), leaf)
                    gradient = gradient.index_put((untrusted,), leaf_gradient)
            log_det = log_det.index_put((untrusted,), eliminated.detach())
        # Padding words hang from the first word with weight 1: that arc is not real.
        gradient[:, 1].masked_fill_(is_padding, 0.0)
        marginals = F.pad(gradient, (1, 0)).to(scores.dtype)
        ctx.dtype = dtype
        ctx.save_for_backward(scores, lengths, marginals, trusted)
        return (shifts.sum(-1) + log_det).to(scores.dtype)

    @staticmethod
    def backward(ctx, grad_log_z: torch.Tensor):
        scores, lengths, marginals, trusted = ctx.saved_tensors
        if torch.is_grad_enabled():
            log_weights, _, _ = shifted_log_weights(scores.to(ctx.dtype), lengths)
            log_det = mixed_log_det(log_weights, trusted)
            (marginals,) = torch.autograd.grad(log_det.sum(), scores, create_graph=True)
        return grad_log_z[:, None, None] * marginals, None, None


def log_laplacian_determinant(
    scores: torch.Tensor, lengths: torch.Tensor, dtype: torch.dtype
) -> torch.Tensor:
    """(B,) log Z over single-root non-projective trees (Koo et al. 2007) for scores
    (B, n+1, n+1) and ``lengths`` (B,), computed in ``dtype``, returned in the scores' dtype:
    log det of the Laplacian whose first row holds the root weights, after the column
    shifts of ``shifted_log_weights``.

    Each item takes the LU (fast) where the check of ``lu_log_det_and_gradient`` trusts it
    and the log-space elimination (``eliminate``, exact at any scale, about 10x slower on a
    CPU) where it does not, so results are exact to rounding whatever the scores. Either
    way the result is differentiable (twice too), and marginals are its gradient.
    """
    return _LogPartition.apply(scores, lengths, dtype)


class MatrixTree(TreeDistribution):
    """Non-projective dependency trees with one root word, scored arc by arc.

    ``scores`` (B, n+1, n+1) as in the module docstring; ``lengths`` (B,) counts each
    item's words (default n): positions past it are padding, with zero marginals. The log
    partition is computed in ``dtype`` (by default the scores' own, float32 for half
    precision; ``torch.float64`` accumulates float32 scores in float64, slower by about a
    third at 80 words) and returned in the scores' dtype; marginals are its gradient
    (``TreeDistribution``), differentiable again for training. ``argmax`` is the best tree
    by Chu-Liu-Edmonds (``mst``) as 0/1 arcs, and ``max`` its score. Scores on real arcs
    must be finite (``ValueError`` otherwise): forbid an arc with a large negative score
    (say -1e4), not -inf.

    >>> tree = MatrixTree(torch.zeros(1, 4, 4))
    >>> round(tree.log_partition.exp().item())  # single-root trees on 3 words: 3 ** 2
    9
    >>> round(tree.marginals[0, 0, 1:].sum().item(), 6)  # exactly one word on the root
    1.0
    """

    def __init__(
        self,
        scores: torch.Tensor,
        lengths: torch.Tensor | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        check_arc_scores(scores, type(self).__name__)
        if dtype is None:
            dtype = scores.dtype if scores.dtype == torch.float64 else torch.float32
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64, not {dtype}")
        self.dtype = dtype
        super().__init__(scores, lengths)
        if not self.finite:
            check_real_arcs_finite(scores, self.lengths, type(self).__name__)

    def _max_length(self, scores: torch.Tensor) -> int:
        return scores.shape[-1] - 1

    def _inside(self, scores: torch.Tensor, semiring: Semiring) -> torch.Tensor:
        if semiring is not LogSemiring:
            raise NotImplementedError("MatrixTree sums over trees; its best tree is by CLE")
        return log_laplacian_determinant(scores, self.lengths, self.dtype)

    @property
    def argmax(self) -> torch.Tensor:
        """The best single-root tree (Chu-Liu-Edmonds) as 0/1 arcs, the shape of scores."""
        heads = best_heads(self.scores, self.lengths)
        return heads_to_arcs(heads, self.scores.shape[-1] - 1, dtype=self.scores.dtype)

    @property
    def max(self) -> torch.Tensor:
        """(B,) the best tree's score."""
        return self.score(self.argmax)
