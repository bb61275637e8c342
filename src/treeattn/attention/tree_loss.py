"""A mechanism that is a training loss on hidden states (``Capabilities.loss``), and where
a sentence's words lie among the states it reads.

Such a mechanism changes no layer: it reads the hidden states of chosen layers of any
encoder, from scratch or pretrained, scores them against each sentence's tree, and is
added to the task's loss with a weight; no tree is needed at inference. Its registry
entry names a class with this shape (``TreeLoss``), in the mechanism's own file; the
tasks (``treeattn.models.tree_loss``) and the library call for a ``transformers`` model
ask for it by name.

The states may be words (a from-scratch encoder: a token a word) or a pretrained
encoder's pieces; ``WordPositions`` says where each word's first and last state are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol

import torch
from torch import Tensor

from treeattn.trees import Tree


@dataclass
class WordPositions:
    """Where each word lies among the states (B, L, d) a loss reads: ``first`` and
    ``last`` (B, n), the positions of its first and last state (the same for a token a
    word); ``pad_mask`` (B, n) True past a sentence's end (what ``first`` and ``last``
    hold there is never read)."""

    first: Tensor
    last: Tensor
    pad_mask: Tensor

    def to(self, device: torch.device | str) -> WordPositions:
        return WordPositions(*(getattr(self, f.name).to(device) for f in fields(self)))


def token_positions(pad_mask: Tensor) -> WordPositions:
    """A state per word: word i is position i (``pad_mask`` (B, n), True at padding)."""
    positions = torch.arange(pad_mask.shape[1], device=pad_mask.device).expand_as(pad_mask)
    return WordPositions(positions, positions, pad_mask)


def piece_positions(word_of_piece: Tensor, first_piece: Tensor, pad_mask: Tensor) -> WordPositions:
    """Each word's first and last piece among a pretrained encoder's pieces.

    ``word_of_piece`` (B, p): each piece's word, -1 for special pieces, padding and pieces
    of no word; ``first_piece`` (B, n) each word's first piece (``PieceBatch.first_piece``,
    ``AlignedText.first_piece``: a word in which no piece starts shares the piece over
    its first character, which is then also its last); ``pad_mask`` (B, n) True past a
    sentence's end.
    """
    batch, length = word_of_piece.shape
    n_words = first_piece.shape[1]
    slot = word_of_piece.masked_fill(word_of_piece < 0, n_words)  # no word's: a spare slot
    positions = torch.arange(length, device=word_of_piece.device).expand(batch, -1)
    last = torch.full((batch, n_words + 1), -1, device=word_of_piece.device, dtype=torch.long)
    last = last.scatter_reduce(1, slot, positions, reduce="amax")[:, :n_words]
    last = torch.where(last < first_piece, first_piece, last)
    return WordPositions(first_piece, last, pad_mask)


class TreeLoss(Protocol):
    """What a loss mechanism's class (``Capabilities.loss``) gives.

    ``Options``: the dataclass of its options (the config's ``model.tree_loss_options``),
    ``from_options(**options)`` builds it (an unknown or bad option is a ``ValueError``
    naming it). ``layers``: the hidden states it reads, as indices of an encoder's states
    (0 the embeddings, i the output of layer i, -1 the last). ``targets(tree, where)``:
    one sentence's targets from its tree, made once when the data is encoded (a bad tree
    is an error naming ``where``); ``collate(items)`` batches them. Called with the
    states of ``layers`` (each (B, L, d)), the batch's targets and the words' positions,
    it gives the scalar loss.
    """

    Options: ClassVar[type]
    layers: tuple[int, ...]

    @classmethod
    def from_options(cls, **options: Any) -> TreeLoss: ...

    def targets(self, tree: Tree, where: str) -> Any: ...

    def collate(self, items: Sequence[Any]) -> Any: ...

    def __call__(
        self, hidden_states: Sequence[Tensor], targets: Any, positions: WordPositions
    ) -> Tensor: ...
