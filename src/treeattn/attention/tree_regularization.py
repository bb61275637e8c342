"""Tree regularization (TreeReg; Nandi, Manning & Murty, NAACL 2025, "Sneaking Syntax into
Transformer Language Models with Tree Regularization"): a loss that asks the hidden states
of a chosen layer to respect a silver tree's bracketing. No layer changes and no tree is
read at inference.

What is computed, as the authors' release computes it (``regularizer/``):

- SCIN, span contextual independence: a span of words i..j is represented by the state
  of its last piece, h_e, and its context by the state just before it, h_c (the last
  piece of word i-1). SCIN(i, j) = ||orth(h_e, h_c)||, the length of what is left of h_e
  once its component along h_c is taken away: ``||h_e - (h_e . c) c||``, c = h_c/||h_c||.
  A span that starts the sentence has no context and scores 0.
- Each span of the tree with at least two candidate split points (three words or more)
  scores each split point k (the right part starting at word k) as
  S(i, k, j) = SCIN(i, k-1) + SCIN(k, j) + SCIN_1(k) + SCIN_1(j+1), where SCIN_1(k) is
  the score of the first piece of word k against the last piece of word k-1 (0 past the
  sentence's end): both parts independent of what precedes them.
- p(k | span) = softmax over the span's split points of S; the loss of a span is
  -log p(gold split), averaged over the tree's spans; a sentence without such a span
  (one or two words) adds 0. The batch's loss is the mean over its sentences, and with
  several layers the mean over layers.
- The tree: unary chains collapsed (a node with one child is its child), n-ary nodes
  binarized to the right as the release's trees are (``(X a b c)`` is read as
  ``(X a (X b c))``). Split points are at word boundaries only: on a pretrained
  encoder the words' pieces are the states and a word's pieces are never split.
- ``dims``: as the release's ``sci_heads``, only the first share of the state's
  dimensions enter the scores (the heads' slices a residual stream lays them in).

Deviations, none of which changes the loss or its gradient: the last term SCIN_1(j+1) is
the same for every split point of a span, so the softmax ignores it and it is left out;
every pairwise score is computed at once (a batched matrix product), as the release does
for most sentences, and in float32 even under bfloat16 autocast (the scores subtract two
squares). The release's states are a causal language model's; here the same scores are
taken of a bidirectional encoder's states where that is what is trained. The release
adds the loss every other update by default (``--regularizer_steps 2``), optionally on
batches of a parsed corpus of its own; here it is added at every update, on the task's
own batch, and its weight scales it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from treeattn import plugins
from treeattn.attention.registry import Capabilities, Mechanism
from treeattn.attention.tree_loss import WordPositions
from treeattn.trees import Tree
from treeattn.trees.tree import fold_tree

NAME = "tree-regularization"


# -- a sentence's targets ---------------------------------------------------------------


def split_targets(tree: Tree) -> list[tuple[int, int, int]]:
    """Every span ``(start, end, split)`` of ``tree`` (words start..end-1) that the loss
    scores, with its gold split (the right part starts at word ``split``), after unary
    chains are collapsed and n-ary nodes binarized to the right; spans of fewer than three
    words have one split point or none and are left out. Pre-order.

    >>> split_targets(Tree.parse("(S (NP (DT a) (NN b)) (VP (V c) (NP (D d) (N e) (N f))))"))
    [(0, 6, 2), (2, 6, 3), (3, 6, 4)]
    """

    def combine(node: Tree, values: list) -> tuple[int, list[tuple[int, int, int]]]:
        starts, found, width = [], [], 0
        for child_width, child_spans in values:
            found.extend((width + s, width + e, width + k) for s, e, k in child_spans)
            starts.append(width)
            width += child_width
        # (c1 c2 ... cm) as (c1 (c2 (... (c_{m-1} cm)))): the span from each child's start
        # to the end splits after that child.
        own = [(starts[t], width, starts[t + 1]) for t in range(len(starts) - 1)]
        return width, [span for span in own if span[1] - span[0] >= 3] + found

    _, spans = fold_tree(tree, combine, leaf=lambda word: (1, []))
    return sorted(spans, key=lambda span: (span[0], -span[1]))


@dataclass
class SplitTargets:
    """A batch's spans and their gold splits (``split_targets``), padded: ``start``,
    ``end``, ``split`` (B, S) word indices; ``pad_mask`` (B, S) True at padding; ``widest``:
    the most split points of any span (the width of the score tensors)."""

    start: Tensor
    end: Tensor
    split: Tensor
    pad_mask: Tensor
    widest: int

    def to(self, device: torch.device | str) -> SplitTargets:
        moved = [getattr(self, f.name) for f in fields(self)][:4]
        return SplitTargets(*(x.to(device) for x in moved), self.widest)


def collate_targets(items: Sequence[Tensor]) -> SplitTargets:
    """Sentences' targets ((S_b, 3) long tensors of start, end, split) as one batch."""
    most = max((len(item) for item in items), default=0)
    table = torch.zeros(len(items), most, 3, dtype=torch.long)
    pad_mask = torch.ones(len(items), most, dtype=torch.bool)
    for b, item in enumerate(items):
        table[b, : len(item)] = item
        pad_mask[b, : len(item)] = False
    widths = table[..., 1] - table[..., 0] - 1
    widest = int(widths.masked_fill(pad_mask, 1).max()) if most else 1
    return SplitTargets(table[..., 0], table[..., 1], table[..., 2], pad_mask, max(widest, 1))


# -- the scores and the loss ------------------------------------------------------------


def _sqrt_where_positive(x: Tensor) -> Tensor:
    """sqrt(x), 0 where x <= 0, with a gradient of 0 there (never inf or NaN)."""
    positive = x > 0
    return torch.where(positive, x.clamp(min=torch.finfo(x.dtype).tiny).sqrt(), 0.0)


def orthogonal_norms(states: Tensor) -> Tensor:
    """(B, L, d) -> (B, L, L): entry [c, e] = ||h_e - (h_e . u_c) u_c||, u_c = h_c / ||h_c||:
    the part of state e orthogonal to state c. Float64 stays float64; anything else is
    computed in float32. A state against itself is exactly 0 (a word with no piece of its
    own reads the piece it shares as both context and end), not the square root of the
    rounding left between two equal squares (about 1e-3 of the state's norm in float32).
    """
    dtype = torch.float64 if states.dtype == torch.float64 else torch.float32
    length = states.shape[1]
    itself = torch.eye(length, dtype=torch.bool, device=states.device)
    with torch.autocast(states.device.type, enabled=False):
        states = states.to(dtype)
        unit = F.normalize(states, dim=-1)
        along = unit @ states.transpose(1, 2)  # (B, L_c, L_e): h_e . u_c
        squared = (states * states).sum(-1)  # (B, L_e)
        orthogonal = (squared[:, None, :] - along * along).masked_fill(itself, 0.0)
        return _sqrt_where_positive(orthogonal)


def _pairs(norms: Tensor, context: Tensor, end: Tensor) -> Tensor:
    """``norms[b, context, end]`` for index tensors (B, ...) of the same shape."""
    length = norms.shape[-1]
    flat = (context * length + end).flatten(1)
    return norms.flatten(1).gather(1, flat).view_as(context)


def _word_state(positions: Tensor, words: Tensor) -> Tensor:
    """``positions[b, words]`` (positions (B, n), words (B, ...) indices, clamped into
    range: out-of-range ones are masked by the caller)."""
    index = words.clamp(0, positions.shape[1] - 1)
    return positions.gather(1, index.flatten(1)).view_as(words)


def split_scores(
    states: Tensor, positions: WordPositions, targets: SplitTargets
) -> tuple[Tensor, Tensor]:
    """The score of every split point of every span (B, S, K) and which are real (B, S, K).

    Split point t of a span (start i, end j) puts the right part's start at
    k = i + 1 + t; it is real for k < j on a span that is not padding.
    S(i, k, j) = SCIN(i, k-1) + SCIN(k, j-1) + SCIN_1(k) (the module docstring).
    """
    norms = orthogonal_norms(states)
    first, last = positions.first, positions.last
    start, end = targets.start, targets.end
    k = start[..., None] + 1 + torch.arange(targets.widest, device=start.device)  # (B, S, K)
    real = (k < end[..., None]) & ~targets.pad_mask[..., None]
    before_span = _word_state(last, start - 1)[..., None].expand_as(k)  # h_c of the span
    left_end = _word_state(last, k - 1)  # last piece of the left part, right part's context
    right_end = _word_state(last, end - 1)[..., None].expand_as(k)
    left = _pairs(norms, before_span, left_end)
    left = left.masked_fill((start == 0)[..., None], 0.0)  # no context: 0
    right = _pairs(norms, left_end, right_end)
    boundary = _pairs(norms, left_end, _word_state(first, k))
    return left + right + boundary, real


def tree_regularization_loss(
    states: Tensor, positions: WordPositions, targets: SplitTargets
) -> Tensor:
    """Each sentence's TreeReg loss (B,): the mean over its spans of -log p(gold split),
    0 for a sentence without a span to score. ``states`` (B, L, d) the hidden states
    read (words or pieces), ``positions`` where the words lie among them."""
    scores, real = split_scores(states, positions, targets)
    # Padded spans get every split point, all scored 0, so that nothing is -inf alone.
    live = targets.pad_mask[..., None] | real
    scores = scores.masked_fill(~live, float("-inf")).masked_fill(~real & live, 0.0)
    log_p = scores.log_softmax(-1)
    gold = (targets.split - targets.start - 1).clamp(min=0)
    nll = -log_p.gather(2, gold[..., None].clamp(max=targets.widest - 1))[..., 0]
    kept = (~targets.pad_mask).to(nll.dtype)
    return (nll * kept).sum(1) / kept.sum(1).clamp(min=1.0)


# -- the mechanism ----------------------------------------------------------------------


@dataclass(frozen=True)
class TreeRegularizationOptions:
    """``layers``: the hidden states scored (0 the embeddings, i the output of layer i,
    -1 the last; several: the mean of their losses); ``dims``: the share of each state's
    dimensions scored, its first ones (1.0: all; the release's ``sci_heads``)."""

    layers: tuple[int, ...] = (-1,)
    dims: float = 1.0


class TreeRegularization:
    """The TreeReg loss as a mechanism (``Capabilities.loss``; ``attention.tree_loss``):
    ``from_options(layers=[2], dims=0.5)``, then per sentence ``targets(tree, where)``,
    per batch ``collate``, and ``loss(hidden_states, targets, positions)`` with the states
    of ``layers`` in that order."""

    Options = TreeRegularizationOptions

    def __init__(self, options: TreeRegularizationOptions) -> None:
        self.options = options
        self.layers = options.layers

    @classmethod
    def from_options(cls, **options) -> TreeRegularization:
        known = [f.name for f in fields(cls.Options)]
        for key in options:
            if key not in known:
                raise ValueError(
                    f"{key} is not an option of {NAME}; its options: {', '.join(known)}"
                )
        layers = options.get("layers", cls.Options.layers)
        layers = [layers] if isinstance(layers, int) and not isinstance(layers, bool) else layers
        if (
            not isinstance(layers, (list, tuple))
            or not layers
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in layers)
        ):
            raise ValueError(f"layers={layers!r}: use a layer index or a list of them")
        dims = options.get("dims", cls.Options.dims)
        if isinstance(dims, bool) or not isinstance(dims, (int, float)) or not 0 < dims <= 1:
            raise ValueError(f"dims={dims!r}: use a share of the dimensions in (0, 1]")
        return cls(cls.Options(tuple(layers), float(dims)))

    def targets(self, tree: Tree, where: str) -> Tensor:
        """One sentence's spans and gold splits, (S, 3) long (``split_targets``)."""
        spans = split_targets(tree)
        return torch.tensor(spans, dtype=torch.long).view(len(spans), 3)

    def collate(self, items: Sequence[Tensor]) -> SplitTargets:
        return collate_targets(items)

    def __call__(
        self, hidden_states: Sequence[Tensor], targets: SplitTargets, positions: WordPositions
    ) -> Tensor:
        """The batch's loss: the mean over sentences and over ``hidden_states`` (those of
        ``layers``, each (B, L, d))."""
        if len(hidden_states) != len(self.layers):
            raise ValueError(f"{len(hidden_states)} hidden states for layers {self.layers}")
        width = max(1, int(self.options.dims * hidden_states[0].shape[-1]))
        # Every layer at once: the layers stacked as more sentences of one batch.
        count = len(hidden_states)
        states = torch.cat([h[..., :width] for h in hidden_states])  # (layers * B, L, w)
        return tree_regularization_loss(
            states, _repeated(positions, count), _repeated(targets, count)
        ).mean()


def _repeated(batch: WordPositions | SplitTargets, count: int) -> Any:
    """The batch's tensors ``count`` times over along the batch axis."""
    kept = [getattr(batch, f.name) for f in fields(batch)]
    return type(batch)(*(x.repeat(count, 1) if isinstance(x, Tensor) else x for x in kept))


plugins.mechanisms.register(
    Mechanism(
        NAME,
        capabilities=Capabilities(
            "a loss on chosen layers' hidden states from each sentence's tree: scores of span "
            "independence per split point (Nandi et al. 2025); no change to the model",
            loss=TreeRegularization,
        ),
    )
)
