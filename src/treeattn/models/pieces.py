"""PTB-tokenized words as a pretrained encoder's pieces: ``[CLS] pieces [SEP]`` and the word
each piece belongs to, with the tokenizer alone (no weights read).

>>> splitter = load_splitter("minilm")  # doctest: +SKIP
>>> splitter.batch([["Unbelievably", "-LRB-", "``"]]).word_of_piece.tolist()  # doctest: +SKIP
[[-1, 0, 0, 0, 0, 0, 1, 2, -1]]
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch
from torch import Tensor

from treeattn.attention.injection import first_pieces
from treeattn.models.bert import BertConfig
from treeattn.models.weights import TokenizerFiles, WeightsError, read_tokenizer

# PTB's escapes for brackets and quotes, as the characters a pretrained vocabulary knows.
PTB_UNESCAPE = {
    "-LRB-": "(",
    "-RRB-": ")",
    "-LCB-": "{",
    "-RCB-": "}",
    "-LSB-": "[",
    "-RSB-": "]",
    "``": '"',
    "''": '"',
}


class SentenceTooLong(ValueError):
    """A sentence with more pieces than the encoder has positions."""


@dataclass
class PieceBatch:
    """Sentences as padded pieces.

    ``piece_ids`` (B, p): ``[CLS] pieces [SEP]`` then padding; ``pad_mask`` (B, p) True at
    padding; ``word_of_piece`` (B, p): the word each piece belongs to, -1 for the special
    pieces and padding; ``first_piece`` (B, n): the position of each word's first piece
    (0 past a sentence's end); ``word_pad_mask`` (B, n) True past a sentence's end.
    """

    piece_ids: Tensor
    pad_mask: Tensor
    word_of_piece: Tensor
    first_piece: Tensor
    word_pad_mask: Tensor

    def to(self, device: torch.device | str) -> PieceBatch:
        return PieceBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def piece_batch(piece_ids: Tensor, pad_mask: Tensor, word_of_piece: Tensor) -> PieceBatch:
    """A ``PieceBatch`` from padded pieces (B, p) and each piece's word (-1: none)."""
    word_counts = word_of_piece.max(1).values + 1  # (B,)
    n_words = int(word_counts.max())
    word_pad_mask = torch.arange(n_words, device=pad_mask.device) >= word_counts[:, None]
    first = first_pieces(word_of_piece, n_words)
    return PieceBatch(piece_ids, pad_mask, word_of_piece, first, word_pad_mask)


class PieceSplitter:
    """Splits PTB-tokenized words into the pieces of ``tokenizer`` (a
    ``tokenizers.Tokenizer``) for an encoder with ``max_pieces`` positions; a sentence with
    more pieces is refused (``SentenceTooLong``), never truncated."""

    pad_id = 0  # any id: padded keys are masked and padded states never read

    def __init__(self, tokenizer: Any, max_pieces: int) -> None:
        self.tokenizer = tokenizer
        self.max_pieces = max_pieces
        vocab = tokenizer.get_vocab()
        self.cls_id = _special(vocab, ("[CLS]", "<s>"))
        self.sep_id = _special(vocab, ("[SEP]", "</s>"))
        self.unk_id = _special(vocab, ("[UNK]", "<unk>"))

    @classmethod
    def from_files(cls, files: TokenizerFiles) -> PieceSplitter:
        """The splitter of a source's tokenizer, for its encoder's positions."""
        config = BertConfig.from_dict(files.config)
        return cls(files.tokenizer, config.max_position_embeddings)

    def rows(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[int]]]:
        """Each PTB-tokenized sentence's ``[CLS] pieces [SEP]`` ids and the word of each
        piece (-1 for the special pieces); a sentence with more pieces than the encoder's
        positions raises ``SentenceTooLong`` naming it."""
        texts = [[PTB_UNESCAPE.get(word, word) for word in words] for words in sentences]
        encoded = self.tokenizer.encode_batch(texts, is_pretokenized=True, add_special_tokens=False)
        rows = []
        for index, (words, encoding) in enumerate(zip(sentences, encoded, strict=True)):
            if not words:
                raise ValueError(f"sentence {index + 1} of the batch has no words")
            by_word: list[list[int]] = [[] for _ in words]
            for piece, word in zip(encoding.ids, encoding.word_ids, strict=True):
                by_word[word].append(piece)
            ids, owner = [self.cls_id], [-1]
            for word, word_pieces in enumerate(by_word):
                word_pieces = word_pieces or [self.unk_id]  # a word the normaliser empties
                ids.extend(word_pieces)
                owner.extend([word] * len(word_pieces))
            ids.append(self.sep_id)
            owner.append(-1)
            if len(ids) > self.max_pieces:
                shown = " ".join(words[:12]) + (" ..." if len(words) > 12 else "")
                raise SentenceTooLong(
                    f"sentence {index + 1} of the batch ({len(words)} words: {shown!r}) makes "
                    f"{len(ids)} pieces with [CLS] and [SEP], more than the encoder's "
                    f"{self.max_pieces} positions; split it (it is never truncated)"
                )
            rows.append((ids, owner))
        return rows

    def batch(self, sentences: Sequence[Sequence[str]]) -> PieceBatch:
        """The padded pieces of PTB-tokenized sentences (``rows``), on the CPU."""
        rows = self.rows(sentences)
        width = max(len(ids) for ids, _ in rows)
        piece_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        word_of_piece = torch.full((len(rows), width), -1, dtype=torch.long)
        for row, (ids, owner) in enumerate(rows):
            piece_ids[row, : len(ids)] = torch.tensor(ids)
            word_of_piece[row, : len(owner)] = torch.tensor(owner)
        pad_mask = torch.arange(width)[None, :] >= torch.tensor([len(r) for r, _ in rows])[:, None]
        return piece_batch(piece_ids, pad_mask, word_of_piece)


def _special(vocab: dict[str, int], names: Sequence[str]) -> int:
    for name in names:
        if name in vocab:
            return vocab[name]
    raise WeightsError(f"the tokenizer has none of the special pieces {list(names)}")


def load_splitter(source: str | os.PathLike[str]) -> PieceSplitter:
    """The ``PieceSplitter`` of ``source`` (``"minilm"`` or a local directory, as
    ``load_backbone`` takes it), from its tokenizer and config alone: its weights are
    not read."""
    return PieceSplitter.from_files(read_tokenizer(source))
