"""A pretrained model's pieces and the Penn Treebank words of the same text, met by
characters: each piece's character offsets (a fast tokenizer's offset mapping) against each
word's place in the text (``Token.start``, ``Token.end``). A piece belongs to the word in
which its first character that is not white space falls (a byte-level piece "Ġcat" carries
the space before "cat"). Where the two splits disagree:

- a piece that runs over two words (a tokenizer that keeps "cannot" whole where the
  Treebank reads "can not") belongs to the first;
- a word in which no piece starts (the second of those, or a word of characters the
  tokenizer's normaliser drops) shares the last piece of the words before it (the first
  piece of a word, for a sentence's first word): every word has a first piece to be read
  from (``first_pieces``);
- a piece of no word (``[CLS]``, ``</s>``, padding, white space alone) is -1.

>>> from treeattn.trees.tokenize import tokenize_with_offsets
>>> text = "Dogs can't bark."
>>> pieces = [(0, 2), (2, 4), (5, 8), (8, 10), (11, 15), (15, 16)]  # Do gs can 't bark .
>>> owners = piece_words(text, tokenize_with_offsets(text), pieces)
>>> owners
[0, 0, 1, 2, 3, 4]
>>> first_pieces(torch.tensor([owners]), 5).tolist()
[[0, 2, 3, 4, 5]]
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import torch
from torch import Tensor

from treeattn.trees.tokenize import Token


def _owner(tokens: Sequence[Token], starts: Sequence[int], text: str, start: int, end: int) -> int:
    """The word of the piece at ``text[start:end]``: the one its first non-space
    character falls in (-1: none); ``starts``: the words' first characters, in order."""
    while start < end and text[start].isspace():
        start += 1
    index = bisect.bisect_right(starts, start) - 1
    if start >= end or index < 0 or start >= tokens[index].end:
        return -1
    return index


def piece_words(
    text: str,
    tokens: Sequence[Token],
    offsets: Sequence[tuple[int, int]],
    special: Sequence[bool] | None = None,
) -> list[int]:
    """Each piece's word (-1: none), by the module's rules, for the pieces at character
    ``offsets`` of ``text`` and its words ``tokens`` (in order); ``special`` marks the
    pieces a tokenizer added (``[CLS]``, ``<s>``), which belong to no word whatever their
    offsets. A text with words and no piece of any is an error."""
    starts = [token.start for token in tokens]
    owners = [
        -1 if special is not None and special[k] else _owner(tokens, starts, text, int(a), int(b))
        for k, (a, b) in enumerate(offsets)
    ]
    if tokens and max(owners, default=-1) < 0:
        raise ValueError(f"{text!r}: none of the tokenizer's pieces falls in a word")
    return owners


def first_pieces(word_of_piece: Tensor, n_words: int, lengths: Tensor | None = None) -> Tensor:
    """(B, p) -> (B, n): the position of each word's first piece, by the module's rules (a
    word with no piece of its own shares the last piece of the words before it); 0 past a
    sentence's last word. ``word_of_piece``: each piece's word, -1 for none; ``lengths``
    (B,): each sentence's number of words (default: up to its last piece's word)."""
    batch, length = word_of_piece.shape
    device = word_of_piece.device
    slot = word_of_piece.masked_fill(word_of_piece < 0, n_words)  # no word: a spare slot
    positions = torch.arange(length, device=device).expand(batch, -1)
    first = torch.full((batch, n_words + 1), length, device=device)
    first = first.scatter_reduce(1, slot, positions, reduce="amin")[:, :n_words]
    last = torch.full((batch, n_words + 1), -1, device=device)
    last = last.scatter_reduce(1, slot, positions, reduce="amax")[:, :n_words]
    # The last piece of the words before each word; the sentence's first owned piece for
    # its first word.
    before = torch.cat([last.new_full((batch, 1), -1), last[:, :-1].cummax(1).values], 1)
    opening = first.min(1, keepdim=True).values.expand_as(before)
    shared = torch.where(before >= 0, before, opening)
    first = torch.where(first == length, shared, first)
    if lengths is None:
        lengths = word_of_piece.max(1).values + 1
    past_end = torch.arange(n_words, device=device) >= lengths.to(device)[:, None]
    return first.masked_fill(past_end, 0)
