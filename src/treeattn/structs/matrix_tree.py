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
it (``checked_lu_log_det``), and otherwise a Gaussian elimination in log space that never
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
    """Arc log-weights (B, n+1, n) ``[head 0..n, word 1..n]`` and column shifts (B, n).

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
    into_words = scores[:, :, 1:]
    best_incoming = into_words.detach().masked_fill(~real, -torch.inf).amax(dim=1)
    is_padding = best_incoming == -torch.inf  # (B, n): every word has a root arc
    best_incoming = best_incoming.masked_fill(is_padding, 0.0)
    log_weights = (into_words - best_incoming[:, None, :]).masked_fill(~real, IMPOSSIBLE)
    from_first_word = torch.zeros_like(real)
    from_first_word[:, 1] = is_padding
    return log_weights.masked_fill(from_first_word, 0.0), best_incoming


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


def lu_log_det(log_weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(sign, log |det|), each (B,), of the same Laplacian by a library LU (``slogdet``).

    The Laplacian is built from ``exp`` of the (shifted) weights: ``L[m, m]`` the weight
    into word ``m`` from the words, ``L[h, m] = -w[h, m]``, first row the root weights.
    """
    weights = log_weights.exp()
    words = weights[:, 1:]  # self-loops are IMPOSSIBLE: exp gives 0
    laplacian = torch.diag_embed(words.sum(1)) - words
    laplacian = torch.cat([weights[:, :1], laplacian[:, 1:]], dim=1)
    sign, log_abs_det = torch.linalg.slogdet(laplacian)
    return sign, log_abs_det


def checked_lu_log_det(log_weights: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(log |det| by LU, trusted), each (B,): the LU's result and whether it can be trusted.

    LU gets the determinant from differences, which cancel when the trees' total weight is
    far below the weights it is computed from (see the module docstring). The check needs
    no reference: the LU's marginals (the gradient of its log det) must give each word
    exactly one head. Cancellation breaks that identity as much as the marginals
    themselves, so items whose head marginals sum to 1 within sqrt(eps), and lie in
    [0, 1], are trusted; a non-positive or non-finite determinant is not. When the weights
    carry a graph (and grad mode is on) the log det keeps it, so a fully trusted batch needs
    no second factorisation.
    """
    tolerance = torch.finfo(log_weights.dtype).eps ** 0.5
    keep_graph = log_weights.requires_grad and torch.is_grad_enabled()
    with torch.inference_mode(False), torch.enable_grad():
        source = log_weights if keep_graph else log_weights.detach().clone().requires_grad_()
        sign, log_abs_det = lu_log_det(source)
        (marginals,) = torch.autograd.grad(log_abs_det.sum(), source, retain_graph=keep_graph)
    head_sums = marginals.sum(1)  # (B, n): padding words too (their one head)
    trusted = (
        (sign > 0)
        & torch.isfinite(log_abs_det)
        & ((head_sums - 1).abs() <= tolerance).all(1)
        & ((marginals >= -tolerance) & (marginals <= 1 + tolerance)).flatten(1).all(1)
    )
    return (log_abs_det if keep_graph else log_abs_det.detach()), trusted


def log_laplacian_determinant(scores: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B,) log Z over single-root non-projective trees (Koo et al. 2007) for scores
    (B, n+1, n+1) and ``lengths`` (B,): log det of the Laplacian whose first row holds the
    root weights, after the column shifts of ``shifted_log_weights``.

    Each item takes the LU (``slogdet``, fast) where ``checked_lu_log_det`` trusts it and
    the log-space elimination (``eliminate``, exact at any scale, about 10x slower on a
    CPU) where it does not, so results are exact to rounding whatever the scores. Either
    way the result is differentiable, and marginals are its gradient.
    """
    log_weights, shifts = shifted_log_weights(scores, lengths)
    lu_result, trusted = checked_lu_log_det(log_weights)
    if trusted.all():
        return shifts.sum(-1) + lu_result
    # The untrusted items' LU may be singular: its backward (an inverse) would put NaN into
    # their gradients even with zero weight, so the trusted ones are factorised apart.
    log_det = log_weights.new_zeros(scores.shape[0])
    if trusted.any():
        log_det = log_det.index_put((trusted,), lu_log_det(log_weights[trusted])[1])
    log_det = log_det.index_put((~trusted,), eliminate(log_weights[~trusted]))
    return shifts.sum(-1) + log_det


class MatrixTree(TreeDistribution):
    """Non-projective dependency trees with one root word, scored arc by arc.

    ``scores`` (B, n+1, n+1) as in the module docstring; ``lengths`` (B,) counts each
    item's words (default n): positions past it are padding, with zero marginals. The log
    partition is computed in ``dtype`` (float64 by default; float32 is faster, with
    marginals off by up to ~1e-5) and returned in the scores' dtype;
    marginals are its gradient (``TreeDistribution``), differentiable again for training.
    ``argmax`` is the best tree by Chu-Liu-Edmonds (``mst``) as 0/1 arcs, and ``max`` its
    score. Scores on real arcs must be finite (``ValueError`` otherwise): forbid an arc
    with a large negative score (say -1e4), not -inf.

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
        dtype: torch.dtype = torch.float64,
    ) -> None:
        check_arc_scores(scores, type(self).__name__)
        if dtype not in (torch.float32, torch.float64):
            raise ValueError(f"dtype must be torch.float32 or torch.float64, not {dtype}")
        self.dtype = dtype
        super().__init__(scores, lengths)
        check_real_arcs_finite(scores, self.lengths, type(self).__name__)

    def _max_length(self, scores: torch.Tensor) -> int:
        return scores.shape[-1] - 1

    def _inside(self, scores: torch.Tensor, semiring: Semiring) -> torch.Tensor:
        if semiring is not LogSemiring:
            raise NotImplementedError("MatrixTree sums over trees; its best tree is by CLE")
        return log_laplacian_determinant(scores.to(self.dtype), self.lengths).to(scores.dtype)

    @property
    def argmax(self) -> torch.Tensor:
        """The best single-root tree (Chu-Liu-Edmonds) as 0/1 arcs, the shape of scores."""
        heads = best_heads(self.scores, self.lengths)
        return heads_to_arcs(heads, self.scores.shape[-1] - 1, dtype=self.scores.dtype)

    @property
    def max(self) -> torch.Tensor:
        """(B,) the best tree's score."""
        return self.score(self.argmax)
