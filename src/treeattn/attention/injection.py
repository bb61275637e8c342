"""A mechanism's edit of a pretrained encoder's attention: the part each injectable
mechanism writes, in its own file, as a subclass of ``SyntaxInjection``.

A subclass says what it reads of a batch besides its pieces (``reads``: the gap distances
``Reads.GAPS``, or nothing), makes what every chosen layer of one batch shares once
(``prepare``), gives each chosen layer its ``HeadEdit`` from the layer's input states
(``edit``), and says what the viewer shows of an edit (``inspect``). Everything else is
here: which layers and heads, the batch's words and pieces, removing the injection.
``treeattn.models.syntax_injection.inject_syntax`` puts one into a model.

Words and pieces: a piece takes its word's row and column (``words_to_pieces``), so every
piece of a word has the word's syntax; ``[CLS]``, ``[SEP]`` and any other piece of no word
see every piece and are seen by every piece, and padded keys stay shut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch
from torch import Tensor, nn

from treeattn.attention.head_edit import HeadEdit
from treeattn.attention.registry import Reads
from treeattn.trees import Tree
from treeattn.trees.distance import gap_distances
from treeattn.trees.offsets import first_pieces


def words_to_pieces(
    word_values: Tensor,
    word_of_piece: Tensor,
    pad_mask: Tensor,
    open_value: float,
    shut_value: float,
) -> Tensor:
    """Word-pair values (B, n, n) as piece-pair values (B, 1, p, p).

    Pieces i and j take ``word_values[w(i), w(j)]`` (``word_of_piece`` (B, p): each
    piece's word, -1 for special pieces and padding); a row or column of a special piece
    takes ``open_value``, and a padded key ``shut_value``.
    """
    n, length = word_values.shape[-1], word_of_piece.shape[1]
    owner = word_of_piece.clamp(min=0)  # special pieces read word 0, overwritten below
    rows = word_values.gather(1, owner[:, :, None].expand(-1, -1, n))
    values = rows.gather(2, owner[:, None, :].expand(-1, length, -1))
    in_word = word_of_piece >= 0
    values = values.masked_fill(~(in_word[:, :, None] & in_word[:, None, :]), open_value)
    return values.masked_fill(pad_mask[:, None, :], shut_value)[:, None]


def as_word_of_piece(word_ids: Tensor | Sequence[Sequence[int | None]]) -> Tensor:
    """Each piece's word as a (B, p) tensor, -1 for special pieces and padding, from a
    tensor or from lists such as a ``transformers`` encoding's ``word_ids(i)`` (None for
    special pieces; shorter lists are padded)."""
    if isinstance(word_ids, Tensor):
        return word_ids.long()
    width = max(len(row) for row in word_ids)
    return torch.tensor(
        [[-1 if w is None else w for w in row] + [-1] * (width - len(row)) for row in word_ids]
    )


class SyntaxInputs:
    """One batch's syntax for one injection, made by ``SyntaxInjection.inputs``: what a
    model reads through its ``syntax=`` keyword. Called as ``(layer, states)`` it gives
    the layer's ``HeadEdit``, or None for a layer not chosen.

    ``word_of_piece``, ``pad_mask`` (B, p), ``word_lengths`` (B,) and ``first_piece``
    (B, n) place the words among the pieces; ``prepared`` holds what the mechanism made
    once for the batch, and ``passing`` what a chosen layer leaves for the next one in a
    pass (the lowest chosen layer starts afresh, so a batch's inputs serve any pass).
    """

    def __init__(
        self,
        injection: SyntaxInjection,
        word_of_piece: Tensor,
        pad_mask: Tensor,
        word_lengths: Tensor,
        gaps: Tensor | None,
    ) -> None:
        self.injection = injection
        self.word_of_piece, self.pad_mask, self.word_lengths = word_of_piece, pad_mask, word_lengths
        self.first_piece = first_pieces(word_of_piece, int(word_lengths.max()), word_lengths)
        self.prepared: dict[str, Any] = injection.prepare(gaps, self)
        self.passing: dict[str, Any] = {}

    def __call__(self, layer: int, states: Tensor) -> HeadEdit | None:
        if layer not in self.injection.layers:
            return None
        if layer == self.injection.layers[0]:
            self.passing = {}
        return self.injection.edit(layer, states, self)


class SyntaxInjection(nn.Module):
    """Which heads of which layers take a mechanism's syntax, and how: subclasses give
    ``reads``, ``prepare``, ``edit`` and ``inspect`` (the module's docstring).

    ``layers``: layer indices, bottom layer 0; ``heads``: head indices, the same in every
    chosen layer; ``n_layers``, ``n_heads`` and ``d_model``: the encoder's sizes. A
    subclass's keyword options come after these.
    """

    name: ClassVar[str] = ""  # the mechanism's registered name
    reads: ClassVar[frozenset[Reads]] = frozenset()
    # Whether the mechanism has a causal form, in which a position reads no later word, so
    # that it may enter a causal model's self-attention; ``causal`` says which form runs.
    causal_form: ClassVar[bool] = False

    def __init__(
        self,
        layers: Sequence[int],
        heads: Sequence[int],
        n_layers: int,
        n_heads: int,
        d_model: int,
    ) -> None:
        super().__init__()
        self.layers = _indices(layers, n_layers, "layers")
        self.heads = _indices(heads, n_heads, "heads")
        self.causal = False  # set by ``make_causal``
        self._undo: list[Callable[[], Any]] = []  # what ``remove`` runs

    def inputs(
        self,
        trees: Sequence[Tree] | None,
        word_of_piece: Tensor | Sequence[Sequence[int | None]],
        pad_mask: Tensor,
    ) -> SyntaxInputs:
        """A batch's syntax: one tree per sentence (None for a mechanism that reads no
        tree), ``word_of_piece`` (B, p) the word of each piece (-1 or None for ``[CLS]``,
        ``[SEP]`` and padding), ``pad_mask`` (B, p) True at padding. Each sentence's pieces
        must cover its tree's words."""
        word_of_piece = as_word_of_piece(word_of_piece).to(pad_mask.device)
        if word_of_piece.shape != pad_mask.shape:
            raise ValueError(
                f"word_of_piece {tuple(word_of_piece.shape)} and pad_mask "
                f"{tuple(pad_mask.shape)}: expected two (B, p) tensors"
            )
        covered = (word_of_piece.max(1).values + 1).tolist()
        if min(covered) < 1:
            raise ValueError("a sentence of the batch has no piece that belongs to a word")
        if trees is None and self.reads:
            raise ValueError(f"the {self.name} mechanism needs the batch's trees")
        lengths = covered if trees is None else [len(tree.leaves()) for tree in trees]
        if len(lengths) != len(covered):
            raise ValueError(f"{len(lengths)} trees for a batch of {len(covered)} sentences")
        for index, (n, found) in enumerate(zip(lengths, covered, strict=True)):
            if n != found:
                raise ValueError(
                    f"sentence {index + 1}: its tree has {n} words but its pieces belong to {found}"
                )
        word_lengths = torch.tensor(lengths, device=pad_mask.device)
        gaps = None
        if trees is not None and Reads.GAPS in self.reads:
            gaps = torch.zeros(len(trees), max(lengths) - 1, dtype=torch.long)
            for row, tree in enumerate(trees):  # per sentence, once per batch
                gaps[row, : lengths[row] - 1] = torch.tensor(gap_distances([tree]))
        return self.gap_inputs(gaps, word_of_piece, pad_mask, word_lengths)

    def gap_inputs(
        self,
        gaps: Tensor | None,
        word_of_piece: Tensor,
        pad_mask: Tensor,
        word_lengths: Tensor,
    ) -> SyntaxInputs:
        """``inputs`` from the trees' gap distances (B, n-1) already made (None for a
        mechanism that reads none), as a data pipeline batches them; ``word_lengths``
        (B,)."""
        if gaps is None and Reads.GAPS in self.reads:
            raise ValueError(f"the {self.name} mechanism needs the batch's gap distances")
        gaps = None if gaps is None else gaps.to(pad_mask.device)
        return SyntaxInputs(self, word_of_piece, pad_mask, word_lengths, gaps)

    def prepare(self, gaps: Tensor | None, inputs: SyntaxInputs) -> dict[str, Any]:
        """What every chosen layer of one batch shares, made once (by name)."""
        return {}

    def edit(self, layer: int, states: Tensor, inputs: SyntaxInputs) -> HeadEdit:
        """Chosen layer ``layer``'s change, from its input states (B, p, d)."""
        raise NotImplementedError

    def inspect(self, edit: HeadEdit, first_piece: Tensor) -> dict[str, Any]:
        """What the viewer shows of a layer's ``edit`` for one sentence (batch-first, as a
        ``MechanismView`` captures), over the words: ``first_piece`` (n,) the position of
        each word's first piece, which holds the word's row and column."""
        return {}

    def make_causal(self) -> None:
        """Use the causal form, for a causal model's self-attention; a mechanism without one
        is refused by name."""
        if not self.causal_form:
            raise ValueError(
                f"the {self.name} mechanism has no causal form (one in which no position reads "
                "a later word), so it cannot enter a causal model's self-attention"
            )
        self.causal = True

    def remove(self) -> None:
        """Take the injection out of the model it was put in: the plain model again."""
        while self._undo:
            self._undo.pop()()


def word_values(edit_values: Tensor, first_piece: Tensor) -> Tensor:
    """An edit's piece-pair values (B, 1, p, p) as word-pair values (B, n, n), read at
    each word's first piece (``first_piece`` (n,), one sentence's)."""
    return edit_values[:, 0][:, first_piece][:, :, first_piece]


def _indices(chosen: Sequence[int], count: int, what: str) -> tuple[int, ...]:
    picked = tuple(sorted({int(i) for i in chosen}))
    if not picked or picked[0] < 0 or picked[-1] >= count:
        raise ValueError(f"{what} {list(chosen)}: expected indices in 0..{count - 1}")
    return picked
