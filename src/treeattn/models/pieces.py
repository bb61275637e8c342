"""PTB-tokenized words as a pretrained model's pieces, with the tokenizer alone (no weights
read): the words are written back as the raw text they stand for (``detokenize``), the
model's fast tokenizer splits that text as it was trained to (its own special pieces
around it), and each piece goes to a word by characters (``treeattn.trees.offsets``).

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

from treeattn.models.sources import read_tokenizer
from treeattn.models.weights import TokenizerFiles, WeightsError
from treeattn.trees.offsets import first_pieces, piece_words
from treeattn.trees.tokenize import detokenize


class SentenceTooLong(ValueError):
    """A sentence with more pieces than the encoder has positions."""


@dataclass
class PieceBatch:
    """Sentences as padded pieces.

    ``piece_ids`` (B, p): the pieces (with the tokenizer's special ones) then padding;
    ``pad_mask`` (B, p) True at padding; ``word_of_piece`` (B, p): the word each piece
    belongs to, -1 for the special pieces and padding; ``first_piece`` (B, n): the
    position of each word's first piece (0 past a sentence's end); ``word_pad_mask``
    (B, n) True past a sentence's end.
    """

    piece_ids: Tensor
    pad_mask: Tensor
    word_of_piece: Tensor
    first_piece: Tensor
    word_pad_mask: Tensor

    def to(self, device: torch.device | str) -> PieceBatch:
        return PieceBatch(*(getattr(self, f.name).to(device) for f in fields(self)))


def piece_batch(
    piece_ids: Tensor, pad_mask: Tensor, word_of_piece: Tensor, word_counts: Tensor
) -> PieceBatch:
    """A ``PieceBatch`` from padded pieces (B, p), each piece's word (-1: none) and each
    sentence's number of words (B,)."""
    n_words = int(word_counts.max())
    word_pad_mask = torch.arange(n_words, device=pad_mask.device) >= word_counts[:, None]
    first = first_pieces(word_of_piece, n_words, word_counts)
    return PieceBatch(piece_ids, pad_mask, word_of_piece, first, word_pad_mask)


class PieceSplitter:
    """Splits PTB-tokenized words into the pieces of ``tokenizer`` (a fast
    ``tokenizers.Tokenizer``) for a model with ``max_pieces`` positions; a sentence with
    more pieces is refused (``SentenceTooLong``), never truncated."""

    pad_id = 0  # any id: padded keys are masked and padded states never read

    def __init__(self, tokenizer: Any, max_pieces: int) -> None:
        self.tokenizer = tokenizer
        self.max_pieces = max_pieces

    @classmethod
    def from_files(cls, files: TokenizerFiles) -> PieceSplitter:
        """The splitter of a source's tokenizer, for its model's positions."""
        return cls(files.tokenizer, max_positions(files.config))

    def counts(self, sentences: Sequence[Sequence[str]]) -> list[int]:
        """How many pieces each PTB-tokenized sentence makes, the special ones included (the
        width of its row in ``rows``)."""
        texts = [detokenize(words)[0] for words in sentences]
        return [len(encoding.ids) for encoding in self.tokenizer.encode_batch(texts)]

    def rows(self, sentences: Sequence[Sequence[str]]) -> list[tuple[list[int], list[int]]]:
        """Each PTB-tokenized sentence's piece ids (with the tokenizer's special pieces) and
        the word of each piece (-1 for none); a sentence with more pieces than the model's
        positions raises ``SentenceTooLong`` naming it."""
        for index, words in enumerate(sentences):
            if not words:
                raise ValueError(f"sentence {index + 1} of the batch has no words")
        texts, tokens = zip(*(detokenize(words) for words in sentences), strict=True)
        encoded = self.tokenizer.encode_batch(list(texts))
        rows = []
        for index, (text, words, encoding) in enumerate(zip(texts, tokens, encoded, strict=True)):
            ids = list(encoding.ids)
            if len(ids) > self.max_pieces:
                shown = text if len(text) <= 80 else text[:77] + "..."
                raise SentenceTooLong(
                    f"sentence {index + 1} of the batch ({len(words)} words: {shown!r}) makes "
                    f"{len(ids)} pieces with the special ones, more than the model's "
                    f"{self.max_pieces} positions; split it (it is never truncated)"
                )
            special = [bool(flag) for flag in encoding.special_tokens_mask]
            rows.append((ids, piece_words(text, words, encoding.offsets, special)))
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
        counts = torch.tensor([len(words) for words in sentences])
        return piece_batch(piece_ids, pad_mask, word_of_piece, counts)


# Families whose position ids start after the padding id (RoBERTa's 514 positions read 512
# pieces): the first pad_token_id + 1 positions are never used.
_POSITIONS_AFTER_PADDING = frozenset(
    {"roberta", "xlm-roberta", "camembert", "data2vec-text", "roberta-prelayernorm", "xmod"}
)


def max_positions(config: dict[str, Any]) -> int:
    """How many pieces a model of ``config`` (its ``config.json``) reads at most."""
    for key in ("max_position_embeddings", "n_positions", "max_seq_len"):
        if isinstance(config.get(key), int):
            if config.get("model_type") in _POSITIONS_AFTER_PADDING:
                return config[key] - config.get("pad_token_id", 1) - 1
            return config[key]
    raise WeightsError("config.json names no maximum length (max_position_embeddings)")


def load_splitter(source: str | os.PathLike[str]) -> PieceSplitter:
    """The ``PieceSplitter`` of ``source`` (``"minilm"`` or a local directory, as
    ``load_backbone`` takes it), from its tokenizer and config alone: its weights are
    not read."""
    return PieceSplitter.from_files(read_tokenizer(source))
