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
it (``trusted_items``), and otherwise a Gaussian elimination in log space that never
subtracts (``eliminate``): exact to rounding at any scale, at about n^3 / 3 exp/log
operations where an LU takes n^3 / 3 multiply-adds (about 10x the time on a CPU), and
O(n^3) memory per item kept by autograd for the backward pass.

The marginals (the gradient of log Z) come from the same LU and its inverse by Koo et
al.'s closed form, with no autograd pass: ``log_partition`` finds them in its forward pass
(its backward is one product) and ``marginals`` returns them, with a hand-written backward
(``marginals_backward``) for training through them.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

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


@functools.lru_cache(maxsize=16)
def identity_batch(batch: int, n: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(batch, n, n) identities laid out column by column, as a solve's result is: cached
    (read only), the right-hand side of the inverse."""
    return torch.eye(n, dtype=dtype, device=device).expand(batch, n, n).contiguous().mT


@functools.lru_cache(maxsize=64)
def unswapped_pivots(n: int, device: torch.device) -> torch.Tensor:
    """(n,) int32 ``1..n``: LAPACK's pivots of an LU without row swaps. Cached: read only."""
    return torch.arange(1, n + 1, dtype=torch.int32, device=device)


def arc_weights(
    scores: torch.Tensor,
    lengths: torch.Tensor | None,
    dtype: torch.dtype,
    spread: tuple[float, float] | None = None,
) -> tuple[torch.Tensor, torch.Tensor | float, torch.Tensor | None]:
    """Arc weights (B, n+1, n) ``[head 0..n, word 1..n]`` in ``dtype``, the log of what
    they were divided by (B,) or one number for all (log Z = log det + it), and which words
    are padding (B, n), or None when every item is n words long (``lengths`` None says so
    without a look). ``spread``: the lowest and highest score, when known.

    The weights of ``shifted_log_weights``, exponentiated (arcs no tree uses weigh exactly
    0), in fewer operations: no clamp, as no log weight meets autograd here, and a batch of
    equal lengths only overwrites its self-loops. Such a batch whose scores spread little
    takes one shift for all (a full reduction, several times cheaper than one per column):
    its weights stay at or above sqrt(tiny), so they and their products are normal floats,
    and an LU is as exact under any scaling of its columns (partial pivoting compares and
    combines entries of one column at a time).
    """
    n = scores.shape[-1] - 1
    into_words = scores[:, :, 1:]
    if lengths is not None and int(lengths.min()) == n:
        lengths = None
    is_padding = None
    if lengths is None:
        # Ignored entries count in the spread: they can only widen it.
        low, high = spread or (bound.item() for bound in torch.aminmax(into_words))
        if high - low <= -0.5 * math.log(torch.finfo(dtype).tiny):
            weights = (into_words.to(dtype) - high).exp_()
            weights[:, 1:].diagonal(dim1=1, dim2=2).fill_(0.0)  # self-loops weigh 0
            return weights, high * n, None
        # A copy with its self-loops overwritten: cheaper than any mask.
        log_weights = into_words.to(dtype, memory_format=torch.contiguous_format, copy=True)
        log_weights[:, 1:].diagonal(dim1=1, dim2=2).fill_(-torch.inf)
    else:
        real = real_arcs_mask(lengths, n)[:, :, 1:]
        log_weights = torch.where(real, into_words.to(dtype), -torch.inf)
        is_padding = torch.arange(1, n + 1, device=lengths.device) > lengths[:, None]
        # A padding word hangs from the first word with weight 1 (its column's shift is 0).
        log_weights[:, 1].masked_fill_(is_padding, 0.0)
    shifts = log_weights.amax(dim=1)
    return log_weights.sub_(shifts[:, None, :]).exp_(), shifts.sum(-1), is_padding


def laplacian(weights: torch.Tensor) -> torch.Tensor:
    """(B, n, n) the Laplacian with the root row, from arc weights (B, n+1, n), stored
    column by column (its transpose is contiguous), the layout LAPACK factorises: an LU
    of it copies it as it is instead of transposing it first (a quarter of the LU's time).

    ``L[m, m]`` is the weight into word ``m`` from the words, ``L[h, m] = -w[h, m]``, and
    the first row holds the root weights ``w[ROOT, m]`` (Koo et al.). Self-loops must weigh
    0. Written in place into a new tensor: concatenating views copies far more slowly.
    """
    words = weights[:, 1:]
    transposed = torch.neg(words.mT, out=torch.empty_like(words))
    transposed.diagonal(dim1=-2, dim2=-1).add_(words.sum(1))
    transposed[:, :, 0] = weights[:, 0]
    return transposed.mT


def weighted_adjoint(matrix: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """(B, n+1, n+1) ``weights * A(matrix)`` in the layout of the scores (column 0, arcs
    into the root, is 0), where ``A`` is the adjoint of ``laplacian``, applied to ``matrix``
    (B, n, n): ``A(M)`` is the gradient with respect to the arc weights (B, n+1, n) of
    ``<M, laplacian(weights)>``.

    Row 0 (root arcs) of ``A(M)`` is ``M[0, m]``; the word arc ``h -> m`` (words indexed
    from 0) gets ``[m > 0] M[m, m] - [h > 0] M[h, m]``, as the first row and the first
    word's diagonal entry hold root weights. Self-loops weigh 0. Written into the output's
    views: a concatenation and a pad would copy it twice more.
    """
    batch, n, _ = matrix.shape
    into_self = matrix.diagonal(dim1=-2, dim2=-1).clone()
    into_self[:, 0].fill_(0.0)
    out = matrix.new_empty(batch, n + 1, n + 1)
    out[:, :, 0].fill_(0.0)
    body = out[:, :, 1:]
    torch.sub(into_self[:, None, :], matrix[:, 1:], out=body[:, 2:])
    body[:, 1] = into_self
    body[:, 0] = matrix[:, 0]
    body.mul_(weights)
    return out


@dataclass
class LUSolution:
    """What one LU of the Laplacian gives for a batch (see ``lu_solve_laplacian``)."""

    weights: torch.Tensor  # (B, n+1, n) arc weights
    inverse_t: torch.Tensor  # (B, n, n) G = L^-T
    marginals: torch.Tensor  # (B, n+1, n+1) the gradient below, in the scores' layout
    pivots: torch.Tensor  # (B, n) U's diagonal (the LU's pivots)
    trusted: torch.Tensor | None  # (B,) bool, None when every item is trusted

    @property
    def gradient(self) -> torch.Tensor:
        """(B, n+1, n) d log det / d log weights (a view of ``marginals``)."""
        return self.marginals[:, :, 1:]

    def log_det(self) -> torch.Tensor:
        """(B,) log |det L| (the sign is in ``trusted``)."""
        return self.pivots.abs().log().sum(-1)


def lu_solve_laplacian(weights: torch.Tensor) -> LUSolution:
    """log det of the Laplacian with the root row, its gradient and whether to trust them,
    by one LU and the inverse, from arc weights (B, n+1, n). Not differentiable.

    The gradient of log det L is ``G = L^-T``; through the Laplacian's construction, the
    gradient with respect to the log-weights is ``weighted_adjoint(G, weights)``, Koo et
    al.'s closed form: every arc's marginal.
    """
    # L^T, not L, is factorised: L stored row by row is L^T stored column by column, the
    # layout LAPACK works in, so the LU takes it as it is (transposing first costs a
    # quarter of its time), and L^-T is then a plain solve.
    transposed = laplacian(weights).mT
    n = transposed.shape[-1]
    lu, swaps, _ = torch.linalg.lu_factor_ex(transposed)
    right = identity_batch(transposed.shape[0], n, transposed.dtype, transposed.device)
    inverse_t = torch.linalg.lu_solve(lu, swaps, right)
    marginals = weighted_adjoint(inverse_t, weights)
    pivots = lu.diagonal(dim1=-2, dim2=-1)
    # The determinant's sign: its pivots', each flipped where the LU swapped rows (exact:
    # a product of -1, 0 and 1).
    swapped = swaps != unswapped_pivots(n, swaps.device)
    det_sign = torch.where(swapped, -pivots, pivots).sign_().prod(-1)
    trusted = trusted_items(marginals, det_sign)
    return LUSolution(weights, inverse_t, marginals, pivots, trusted)


def trusted_items(marginals: torch.Tensor, det_sign: torch.Tensor) -> torch.Tensor | None:
    """(B,) bool: which items' LU results to trust (None: all), from their marginals
    (B, n+1, n+1) (column 0 is 0) and the sign of their determinant (B,).

    LU gets the determinant from differences, which cancel when the trees' total weight is
    far below the weights it is computed from (see the module docstring). The check needs
    no reference: the marginals must give each word exactly one head. Cancellation breaks
    that identity as much as the marginals themselves, so an item is trusted when its head
    marginals sum to 1 within sqrt(eps) and none is below -sqrt(eps), and its determinant is
    positive and finite. Untrusted items' values are meaningless (maybe NaN).

    All three tests are one: the head sums of column 0 (the root's, 0) are replaced by the
    determinant's sign plus the lowest marginal (at most 0, as column 0 holds zeros), which
    is within sqrt(eps) of 1 exactly when the sign is 1 and no marginal is below
    -sqrt(eps). The batch is looked at as a whole first (one transfer), item by item only
    when it fails.
    """
    tolerance = torch.finfo(marginals.dtype).eps ** 0.5
    # (A singular LU gives an infinite log det and NaN or inf marginals: never trusted.)
    head_sums = marginals.sum(1)
    torch.add(det_sign, marginals.amin(dim=(1, 2)), out=head_sums[:, 0])
    low, high = (bound.item() for bound in torch.aminmax(head_sums))
    if max(high - 1, 1 - low) <= tolerance:
        return None
    return ((head_sums - 1).abs() <= tolerance).all(1)


def lu_log_det_and_gradient(
    log_weights: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(log det, its gradient, trusted): (B,), (B, n+1, n), (B,) from arc log-weights
    (B, n+1, n), by ``lu_solve_laplacian``."""
    solution = lu_solve_laplacian(log_weights.exp())
    trusted = solution.trusted
    if trusted is None:
        trusted = torch.ones(log_weights.shape[0], dtype=torch.bool, device=log_weights.device)
    return solution.log_det(), solution.gradient, trusted


def eliminate_items(
    scores: torch.Tensor, lengths: torch.Tensor, dtype: torch.dtype, create_graph: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(log Z (k,), its gradient (k, n+1, n), the log-weights leaf) of k items by
    ``eliminate`` and autograd, after the shifts of ``shifted_log_weights``. With
    ``create_graph`` the gradient keeps its graph to the leaf, for a second derivative.
    (Outside inference mode: autograd cannot use its tensors.)"""
    with torch.inference_mode(False), torch.enable_grad():
        log_weights, shifts, _ = shifted_log_weights(scores.to(dtype), lengths)
        leaf = log_weights.detach().clone().requires_grad_()
        log_det = eliminate(leaf)
        (gradient,) = torch.autograd.grad(log_det.sum(), leaf, create_graph=create_graph)
    return log_det.detach() + shifts.sum(-1), gradient, leaf


@dataclass(frozen=True)
class ScoreFacts:
    """What a distribution knows of its scores before any pass: that every item is n words
    long (no lengths were given), and the lowest and highest score (None unless every score
    is finite). They spare ``arc_weights`` a look of its own."""

    full_length: bool = False
    spread: tuple[float, float] | None = None


@dataclass
class Solved:
    """The marginals of a batch, maybe log Z, and what a backward pass of the marginals
    needs."""

    log_z: torch.Tensor | None  # (B,), when asked for
    lu: LUSolution  # its gradient holds every item's, eliminated ones included
    is_padding: torch.Tensor | None  # (B, n), None when no item is padded
    # For the items eliminated: which they are (B,), their gradient and its leaf.
    eliminated: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None


def solve(
    scores: torch.Tensor,
    lengths: torch.Tensor,
    dtype: torch.dtype,
    facts: ScoreFacts | None = None,
    log_z: bool = True,
    create_graph: bool = False,
) -> Solved:
    """The gradient of log Z (the marginals) of every item in ``dtype``, and log Z unless
    ``log_z`` is False, in an autograd Function's forward pass (no graph): by
    ``lu_solve_laplacian``, and ``eliminate_items`` for the items it cannot trust (with
    ``create_graph``, their gradients keep a graph for ``marginals_backward``)."""
    facts = facts or ScoreFacts()
    given = None if facts.full_length else lengths
    weights, log_scale, is_padding = arc_weights(scores, given, dtype, facts.spread)
    lu = lu_solve_laplacian(weights)
    log_partition = (lu.log_det() + log_scale) if log_z else None
    eliminated = None
    if lu.trusted is not None:
        untrusted = ~lu.trusted
        items = scores[untrusted], lengths[untrusted]
        log_z_eliminated, gradient, leaf = eliminate_items(*items, dtype, create_graph)
        if log_partition is not None:
            log_partition[untrusted] = log_z_eliminated
        lu.gradient[untrusted] = gradient.detach()
        eliminated = untrusted, gradient, leaf
    return Solved(log_partition, lu, is_padding, eliminated)


def full_marginals(solved: Solved, dtype: torch.dtype) -> torch.Tensor:
    """(B, n+1, n+1) marginals in ``dtype``, the LU's buffer itself where the dtype is its
    own; 0 on the arc from the first word that holds each padding word (not a real arc)."""
    marginals = solved.lu.marginals
    if solved.is_padding is not None:
        marginals[:, 1, 1:].masked_fill_(solved.is_padding, 0.0)
    return marginals.to(dtype)


def marginals_backward(solved: Solved, lengths: torch.Tensor, upstream: torch.Tensor):
    """(B, n+1, n+1) the gradient with respect to the scores of ``<upstream, marginals>``,
    ``upstream`` (B, n+1, n+1).

    With ``mu = w * A(G)`` (``A`` the adjoint of ``laplacian``, ``G = L^-T``, ``L =
    laplacian(w)``) and ``dG = -G dL^T G``, the gradient with respect to the log weights is
    ``upstream * mu - w * A(G (R^T G))`` with ``R = laplacian(upstream * w)``: two matrix
    products, no second factorisation. On ill-conditioned items the products lose digits
    to cancellation in the order ``(G R^T) G``, and so does a G solved for with
    ``left=False`` (up to 1e-3 against 1e-8 at N(0, 20^2) scores in float64, where
    autograd through ``slogdet`` gives 1e-9). Eliminated items take autograd through their
    graph.
    """
    lu = solved.lu
    upstream = upstream.to(lu.weights.dtype)
    if solved.is_padding is not None:  # the padding words' arcs are constant zeros
        upstream = upstream.clone()
        upstream[:, 1, 1:].masked_fill_(solved.is_padding, 0.0)
    weighted = laplacian(upstream[:, :, 1:] * lu.weights)
    through_inverse = lu.inverse_t @ (weighted.mT @ lu.inverse_t)
    gradient = upstream * lu.marginals - weighted_adjoint(through_inverse, lu.weights)
    if solved.eliminated is not None:
        untrusted, eliminated, leaf = solved.eliminated
        # The graph stays with ctx: a backward pass may run more than once (retain_graph).
        (leaf_gradient,) = torch.autograd.grad(
            eliminated, leaf, upstream[untrusted][:, :, 1:], retain_graph=True
        )
        gradient[untrusted] = F.pad(leaf_gradient, (1, 0))
    if solved.is_padding is not None or solved.eliminated is not None:
        gradient = torch.where(real_arcs_mask(lengths, gradient.shape[-1] - 1), gradient, 0.0)
    return gradient


class _LogPartition(torch.autograd.Function):
    """log Z from scores (B, n+1, n+1), its gradient (the marginals) found in the forward
    pass, where the LU's trust check needs it anyway: the backward pass is one product.
    A second derivative (``create_graph``) goes through ``_Marginals``."""

    @staticmethod
    def forward(ctx, scores, lengths, dtype, facts):
        solved = solve(scores, lengths, dtype, facts)
        ctx.dtype, ctx.facts = dtype, facts
        ctx.save_for_backward(scores, lengths, full_marginals(solved, scores.dtype))
        return solved.log_z.to(scores.dtype)

    @staticmethod
    def backward(ctx, grad_log_z: torch.Tensor):
        scores, lengths, marginals = ctx.saved_tensors
        if torch.is_grad_enabled():
            marginals = _Marginals.apply(scores, lengths, ctx.dtype, ctx.facts)
        return grad_log_z[:, None, None] * marginals, None, None, None


class _Marginals(torch.autograd.Function):
    """Marginals (B, n+1, n+1) from scores by the closed form, with a hand-written
    backward (``marginals_backward``). Its backward is not differentiable again."""

    @staticmethod
    def forward(ctx, scores, lengths, dtype, facts):
        needs_gradient = ctx.needs_input_grad[0]
        solved = solve(scores, lengths, dtype, facts, log_z=False, create_graph=needs_gradient)
        marginals = full_marginals(solved, scores.dtype)
        if needs_gradient:
            ctx.solved = solved
            # The output may be the LU's own buffer, which the backward reads: saved, so
            # that changing it in place is an error, not a wrong gradient.
            ctx.save_for_backward(lengths, marginals)
        return marginals

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_marginals: torch.Tensor):
        lengths, _ = ctx.saved_tensors
        gradient = marginals_backward(ctx.solved, lengths, grad_marginals)
        return gradient.to(grad_marginals.dtype), None, None, None


def log_laplacian_determinant(
    scores: torch.Tensor,
    lengths: torch.Tensor,
    dtype: torch.dtype,
    facts: ScoreFacts | None = None,
) -> torch.Tensor:
    """(B,) log Z over single-root non-projective trees (Koo et al. 2007) for scores
    (B, n+1, n+1) and ``lengths`` (B,), computed in ``dtype``, returned in the scores' dtype:
    log det of the Laplacian whose first row holds the root weights, after the column
    shifts of ``shifted_log_weights``.

    Each item takes the LU (fast) where the check of ``lu_solve_laplacian`` trusts it and
    the log-space elimination (``eliminate``, exact at any scale, about 10x slower on a
    CPU) where it does not, so results are exact to rounding whatever the scores. Either
    way the result is differentiable (twice too), and marginals are its gradient.
    """
    return _LogPartition.apply(scores, lengths, dtype, facts)


def arc_marginals(
    scores: torch.Tensor,
    lengths: torch.Tensor,
    dtype: torch.dtype,
    facts: ScoreFacts | None = None,
) -> torch.Tensor:
    """(B, n+1, n+1) marginals of single-root trees, computed in ``dtype`` and returned in
    the scores' dtype: the gradient of ``log_laplacian_determinant`` by its closed form
    (no autograd pass), differentiable once more (``marginals_backward``)."""
    return _Marginals.apply(scores, lengths, dtype, facts)


class MatrixTree(TreeDistribution):
    """Non-projective dependency trees with one root word, scored arc by arc.

    ``scores`` (B, n+1, n+1) as in the module docstring; ``lengths`` (B,) counts each
    item's words (default n): positions past it are padding, with zero marginals. The log
    partition is computed in ``dtype`` (by default the scores' own, float32 for half
    precision; ``torch.float64`` accumulates float32 scores in float64, slower by about a
    third at 80 words) and returned in the scores' dtype; marginals are its gradient, by
    the closed form, differentiable once more for training. ``argmax`` is the best tree
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
        self.facts = ScoreFacts(lengths is None, self.spread)

    def _check_scores(self, scores: torch.Tensor) -> bool:
        """As every structure's, by the scores' lowest and highest value, kept in
        ``spread`` (None unless both are finite) for the weights' shift."""
        self.spread = None
        if scores.numel():
            low, high = (bound.item() for bound in torch.aminmax(scores.detach()))
            if math.isfinite(low) and math.isfinite(high):
                self.spread = (low, high)
                return True
        return super()._check_scores(scores)

    def _max_length(self, scores: torch.Tensor) -> int:
        return scores.shape[-1] - 1

    def _inside(self, scores: torch.Tensor, semiring: Semiring) -> torch.Tensor:
        if semiring is not LogSemiring:
            raise NotImplementedError("MatrixTree sums over trees; its best tree is by CLE")
        return log_laplacian_determinant(scores, self.lengths, self.dtype, self.facts)

    @property
    def marginals(self) -> torch.Tensor:
        """Each arc's probability (B, n+1, n+1): the gradient of log Z, by its closed form
        (``arc_marginals``), differentiable when the scores need grad."""
        return arc_marginals(self.scores, self.lengths, self.dtype, self.facts)

    @property
    def argmax(self) -> torch.Tensor:
        """The best single-root tree (Chu-Liu-Edmonds) as 0/1 arcs, the shape of scores."""
        heads = best_heads(self.scores, self.lengths)
        return heads_to_arcs(heads, self.scores.shape[-1] - 1, dtype=self.scores.dtype)

    @property
    def max(self) -> torch.Tensor:
        """(B,) the best tree's score."""
        return self.score(self.argmax)
