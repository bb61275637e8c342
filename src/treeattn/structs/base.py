"""One distribution API over tree structures: log partition, marginals, best tree.

A structure's dynamic program is written once, over a *semiring* that says how to add
(``logsumexp`` for the log partition, ``max`` for the best tree). Marginals are the gradient
of log Z with respect to the scores, and the best tree is the gradient of the best score
(Eisner 2016, "Inside-outside and forward-backward algorithms are just backprop").

That program, differentiated by autograd, is each structure's reference. Where autograd is
the cost, a structure adds a hand-written counterpart, checked against the reference in
the tests: CKY's outside pass and backtracking of best splits, the matrix-tree's closed
form of the marginals (``cky``, ``matrix_tree``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch


class LogSemiring:
    """Sums in log space: the inside pass gives log Z."""

    @staticmethod
    def sum(x: torch.Tensor, dim: int) -> torch.Tensor:
        """``logsumexp``, in fewer passes than ``torch.logsumexp`` (about 1.5x faster with
        its backward): the shift by the maximum is a detached constant, so autograd never
        differentiates it, and the gradient is the softmax as before."""
        shift = x.detach().amax(dim=dim, keepdim=True)
        shift = torch.where(shift.isinf(), 0.0, shift)  # all -inf (or a +inf): as torch's
        return (x - shift).exp().sum(dim).log() + shift.squeeze(dim)


class MaxSemiring:
    """Max instead of sum: the inside pass gives the best score (Viterbi).

    ``max`` (not ``amax``) sends the whole gradient to one argument, so the gradient of the
    best score is the 0/1 indicator of one best structure even when scores tie.
    """

    @staticmethod
    def sum(x: torch.Tensor, dim: int) -> torch.Tensor:
        return x.max(dim=dim).values


Semiring = type[LogSemiring] | type[MaxSemiring]


def check_lengths(scores: torch.Tensor, lengths: torch.Tensor | None, n: int) -> torch.Tensor:
    """(B,) long lengths, each in 1..n; ``None`` means every item is ``n`` long."""
    batch = scores.shape[0]
    if lengths is None:
        return torch.full((batch,), n, dtype=torch.long, device=scores.device)
    lengths = torch.as_tensor(lengths, device=scores.device).long()
    if lengths.shape != (batch,):
        raise ValueError(f"lengths of shape {tuple(lengths.shape)} for a batch of {batch}")
    if ((lengths < 1) | (lengths > n)).any():
        raise ValueError(f"lengths must lie in 1..{n}, got {lengths.tolist()}")
    return lengths


def check_no_nan(scores: torch.Tensor, name: str) -> bool:
    """Raise ``ValueError`` if ``scores`` hold NaN; return whether every score is finite."""
    # A finite sum rules out NaN and inf in one cheap pass; only otherwise look closer.
    if math.isfinite(scores.detach().sum().item()):
        return True
    if torch.isnan(scores).any():
        raise ValueError(f"{name} scores contain NaN")
    return False


def gradient_of(
    value: Callable[[torch.Tensor], torch.Tensor], scores: torch.Tensor
) -> torch.Tensor:
    """d value(scores).sum() / d scores, itself differentiable when ``scores`` needs grad.

    When the scores are part of a graph (training), the result keeps that graph
    (``create_graph``), so a loss on marginals trains the scores; otherwise it is computed
    on a detached copy and carries no graph (also under ``torch.inference_mode``, whose
    tensors autograd cannot use: the copy is made outside it).
    """
    if scores.requires_grad and torch.is_grad_enabled():
        (grad,) = torch.autograd.grad(value(scores).sum(), scores, create_graph=True)
        return grad
    with torch.inference_mode(False), torch.enable_grad():
        leaf = scores.detach().clone().requires_grad_()
        (grad,) = torch.autograd.grad(value(leaf).sum(), leaf)
    return grad


class TreeDistribution:
    """Scores over the parts of a tree structure, batched over items of different lengths.

    Subclasses give ``_inside(scores, semiring) -> (B,)``; everything else follows from it.
    ``scores`` has the batch first; ``lengths`` (B,) counts each item's words (positions past
    it are padding: they get zero marginals and never change the real positions' results).
    """

    def __init__(self, scores: torch.Tensor, lengths: torch.Tensor | None = None) -> None:
        self.finite = self._check_scores(scores)  # no +-inf anywhere
        self.scores = scores
        self.lengths = check_lengths(scores, lengths, self._max_length(scores))

    def _check_scores(self, scores: torch.Tensor) -> bool:
        """Raise ``ValueError`` on NaN; return whether every score is finite."""
        return check_no_nan(scores, type(self).__name__)

    def _max_length(self, scores: torch.Tensor) -> int:
        raise NotImplementedError

    def _inside(self, scores: torch.Tensor, semiring: Semiring) -> torch.Tensor:
        raise NotImplementedError

    @property
    def log_partition(self) -> torch.Tensor:
        """(B,) log of the sum over trees of exp(tree score)."""
        return self._inside(self.scores, LogSemiring)

    @property
    def marginals(self) -> torch.Tensor:
        """Each part's probability of being in the tree; the shape of ``scores``."""
        return gradient_of(lambda s: self._inside(s, LogSemiring), self.scores)

    @property
    def max(self) -> torch.Tensor:
        """(B,) the best tree's score."""
        return self._inside(self.scores, MaxSemiring)

    @property
    def argmax(self) -> torch.Tensor:
        """The best tree as a 0/1 tensor of its parts, the shape of ``scores``."""
        return gradient_of(lambda s: self._inside(s, MaxSemiring), self.scores.detach())

    def score(self, parts: torch.Tensor) -> torch.Tensor:
        """(B,) the score of given trees (0/1 part tensors the shape of ``scores``).

        Only the chosen parts are read, so ignored entries may hold -inf (0 * -inf is NaN).
        """
        return torch.where(parts != 0, self.scores * parts, 0.0).flatten(1).sum(1)

    def log_prob(self, parts: torch.Tensor) -> torch.Tensor:
        """(B,) log probability of given trees: their score minus log Z."""
        return self.score(parts) - self.log_partition
