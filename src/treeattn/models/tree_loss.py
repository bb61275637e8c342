"""A loss mechanism (``Capabilities.loss``, ``attention.tree_loss``) in a model a task
trains: its settings in the model section, the loss it names, and the hidden states it
reads, kept from the task's own forward pass (no second pass).

An encoder whose layers a loss can read has ``state_watchers`` (a list of callables it
calls with every hidden state of each pass: 0 the embeddings, i layer i) and
``state_positions(inputs)`` (where each word lies among those states,
``WordPositions``): the Transformer encoder (a token a word) and a pretrained backbone
(its pieces; the layers are the backbone's, also under layers on top of it). On a
backbone the loss reads the pieces themselves, with each word's span mapped to its
pieces' span and split points between words only, as the authors' release runs it on
pretrained models: no pooling to choose, and the states it shapes are exactly those the
backbone's next layer reads (pooled word vectors exist only at the layer the task reads).

``TreeRegularizer`` is the same loss as a library call on any model's hidden states (a
``transformers`` model's ``outputs.hidden_states``), in any training loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor, nn

from treeattn import plugins
from treeattn.attention.injection import as_word_of_piece
from treeattn.attention.registry import loss_names
from treeattn.attention.tree_loss import TreeLoss, WordPositions, piece_positions
from treeattn.trees import Tree
from treeattn.trees.offsets import first_pieces


@dataclass
class TreeLossSettings:
    """A loss on hidden states from each sentence's tree, added to the task's loss:
    ``tree_loss`` names it (None: none), ``tree_loss_weight`` weighs it (0: computed and
    logged, adding nothing), ``tree_loss_options`` are its options."""

    tree_loss: str | None = None
    tree_loss_weight: float = 1.0
    tree_loss_options: dict = field(default_factory=dict)

    def check_tree_loss(self, where: str, encoder: type) -> None:
        """Reject a loss no run can use, naming the key; ``encoder``: the class of the
        encoder the model section builds."""
        if self.tree_loss is None:
            if self.tree_loss_options:
                raise ValueError(f"{where}: model.tree_loss_options without model.tree_loss")
            return
        known = loss_names()
        if self.tree_loss not in known:
            raise ValueError(
                f"{where}: model.tree_loss={self.tree_loss!r} is not a loss; known: "
                f"{', '.join(known) or 'none'}"
            )
        if not self.tree_loss_weight >= 0:
            raise ValueError(f"{where}: model.tree_loss_weight must be 0 or more")
        if not hasattr(encoder, "state_positions"):
            raise ValueError(
                f"{where}: model.tree_loss reads the hidden states of an encoder's layers, "
                f"which {encoder.__name__} does not give; use a Transformer encoder or a "
                "pretrained backbone"
            )
        try:
            self.build_tree_loss()
        except ValueError as error:
            raise ValueError(f"{where}: model.tree_loss_options: {error}") from None

    def build_tree_loss(self) -> TreeLoss | None:
        """The loss ``tree_loss`` names, built with its options (None: none)."""
        if self.tree_loss is None:
            return None
        loss = plugins.mechanisms[self.tree_loss].capabilities.loss
        return loss.from_options(**self.tree_loss_options)


def _unwrapped(model: nn.Module) -> nn.Module:
    """The model inside a ``DistributedDataParallel`` wrapper, or the model."""
    return getattr(model, "module", model)


def encoder_of(model: nn.Module) -> nn.Module:
    """The encoder of a task's model (its ``encoder``)."""
    return _unwrapped(model).encoder


@contextmanager
def keeping_states(encoder: nn.Module, layers: Sequence[int]) -> Iterator[list[Tensor]]:
    """For the block, keep the hidden states ``layers`` (0 the embeddings, i layer i, -1
    the last) of every pass of ``encoder`` (through its ``state_watchers``); the list
    holds them, in the order of ``layers``, once a pass is done (of the last pass, if
    several)."""
    kept: list[Tensor] = []

    def watch(states: list[Tensor]) -> None:
        count = len(states)
        for index in layers:
            if not -count <= index < count:
                raise ValueError(
                    f"model.tree_loss_options.layers: {index} is not a hidden state of the "
                    f"encoder (0: its embeddings, 1..{count - 1}: its layers, -1: the last)"
                )
        kept[:] = [states[index] for index in layers]

    encoder.state_watchers.append(watch)
    try:
        yield kept
    finally:
        encoder.state_watchers.remove(watch)


def with_tree_loss(
    settings: TreeLossSettings,
    tree_loss: TreeLoss,
    model: nn.Module,
    inputs: Any,
    targets: Any,
    task_loss: Callable[[], Tensor],
    offset: int = 0,
) -> tuple[Tensor, Tensor]:
    """(``task_loss()`` plus ``settings.tree_loss_weight`` times ``tree_loss`` of the same
    pass's hidden states, the tree loss alone, detached) for one training batch of typed
    ``inputs`` and the loss's ``targets``; ``offset``: the states before a sentence's first
    word (a ``<s>`` the model reads first). Weight 0 adds nothing at all: the step is the
    plain one, the tree loss only computed to be logged."""
    if targets is None:
        raise ValueError("model.tree_loss: a training batch without its sentences' trees")
    encoder = encoder_of(model)
    with keeping_states(encoder, tree_loss.layers) as states:
        loss = task_loss()
    positions = encoder.state_positions(inputs)
    if offset:
        last = states[0].shape[1] - 1
        positions = WordPositions(
            (positions.first + offset).clamp(max=last),
            (positions.last + offset).clamp(max=last),
            positions.pad_mask,
        )
    value = tree_loss(states, targets, positions)
    weight = settings.tree_loss_weight
    if weight and torch.is_grad_enabled() and not value.requires_grad:
        raise ValueError(
            f"model.tree_loss_options.layers={list(tree_loss.layers)}: no weight below "
            "those states trains (a frozen backbone, model.backbone_tune), so the tree loss "
            "would teach nothing"
        )
    return (loss + weight * value if weight else loss), value.detach()


# -- the library call: any model's hidden states, in any training loop -------------------


@dataclass
class TreeLossBatch:
    """One batch's trees as a loss reads them: its ``targets`` (the loss's ``collate``)
    and where each word lies among the pieces (``positions``)."""

    targets: Any
    positions: WordPositions

    def to(self, device: torch.device | str) -> TreeLossBatch:
        return TreeLossBatch(self.targets.to(device), self.positions.to(device))


class TreeRegularizer:
    """A loss mechanism (``treeattn mechanisms`` lists them under ``model.tree_loss``) on
    the hidden states of any model, in any training loop: ``weight`` times the loss of
    the layers its ``options`` name (``layers``: indices into ``outputs.hidden_states``
    of a ``transformers`` model run with ``output_hidden_states=True``, 0 the
    embeddings, -1 the last), added to the model's own loss while training; nothing is
    needed at inference.

    >>> regularizer = TreeRegularizer("tree-regularization", layers=[3], weight=0.5)
    >>> encoded, aligned, trees = align_text(texts, tokenizer, padding=True,
    ...                                      return_tensors="pt")  # doctest: +SKIP
    >>> syntax = regularizer.inputs(trees, aligned)  # doctest: +SKIP
    >>> outputs = model(**encoded, output_hidden_states=True)  # doctest: +SKIP
    >>> loss = task_loss + regularizer(outputs.hidden_states, syntax)  # doctest: +SKIP

    The words are the parser's, aligned with the model's pieces by characters as
    ``inject_syntax`` aligns them (``treeattn.parsing.alignment``); split points lie
    between words only, and the pieces of no word (``[CLS]``, ``[SEP]``, padding) are
    never read.
    """

    def __init__(self, mechanism: str, *, weight: float = 1.0, **options: Any) -> None:
        settings = TreeLossSettings(mechanism, weight, options)
        if mechanism not in loss_names():
            known = ", ".join(loss_names()) or "none"
            raise ValueError(f"{mechanism!r} is not a loss mechanism; known: {known}")
        if not weight >= 0:
            raise ValueError(f"weight={weight!r}: use 0 or more")
        self.loss = settings.build_tree_loss()
        self.weight = weight

    def inputs(
        self,
        trees: Sequence[Tree],
        aligned: Any = None,
        *,
        word_of_piece: Tensor | Sequence[Sequence[int]] | None = None,
        first_piece: Tensor | Sequence[Sequence[int]] | None = None,
    ) -> TreeLossBatch:
        """The batch's trees (one per sentence, over its words) as the loss reads them,
        made once per batch: where the words lie among the pieces comes from ``aligned``
        (``align_text``'s ``AlignedText``, ``treeattn.parsing.alignment``) or from
        ``word_of_piece`` (B, p) (-1: a piece of no word) and ``first_piece`` (each
        word's first piece; default: as ``trees.offsets.first_pieces`` places it)."""
        if aligned is not None:
            word_of_piece, first_piece = aligned.word_of_piece, aligned.first_piece
        if word_of_piece is None:
            raise ValueError("give the aligned text, or word_of_piece")
        owners = as_word_of_piece(word_of_piece)
        counts = [len(tree.leaves()) for tree in trees]
        if len(trees) != owners.shape[0]:
            raise ValueError(f"{len(trees)} trees for a batch of {owners.shape[0]} sentences")
        n_words = max(counts)
        if first_piece is None:
            firsts = first_pieces(owners, n_words, torch.tensor(counts))
        elif isinstance(first_piece, Tensor):
            firsts = first_piece.long()
        else:
            firsts = torch.tensor([list(row) + [0] * (n_words - len(row)) for row in first_piece])
        for b, count in enumerate(counts):
            owned = int(owners[b].max()) + 1
            if owned > count:
                raise ValueError(
                    f"sentence {b + 1}: its tree has {count} words, its pieces belong to {owned}"
                )
        pad_mask = torch.arange(firsts.shape[1]) >= torch.tensor(counts)[:, None]
        positions = piece_positions(owners, firsts, pad_mask)
        targets = [self.loss.targets(tree, f"sentence {b + 1}") for b, tree in enumerate(trees)]
        return TreeLossBatch(self.loss.collate(targets), positions)

    def unweighted(self, hidden_states: Sequence[Tensor], batch: TreeLossBatch) -> Tensor:
        """The loss of ``hidden_states`` (every layer's, as ``outputs.hidden_states``)
        before its weight."""
        chosen = []
        for index in self.loss.layers:
            if not -len(hidden_states) <= index < len(hidden_states):
                raise ValueError(
                    f"layer {index}: the model gave {len(hidden_states)} hidden states"
                )
            chosen.append(hidden_states[index])
        device = chosen[0].device
        return self.loss(chosen, batch.targets.to(device), batch.positions.to(device))

    def __call__(self, hidden_states: Sequence[Tensor], batch: TreeLossBatch) -> Tensor:
        """``weight`` times the loss (``unweighted``)."""
        return self.weight * self.unweighted(hidden_states, batch)
