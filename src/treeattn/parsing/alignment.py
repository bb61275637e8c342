"""A pretrained model's pieces and the parser's words of raw text, met by characters.

The model reads the raw text it was trained on, split by its own fast tokenizer; the
parser reads the same text as Penn Treebank words, each keeping its place in the text
(``tokenize_with_offsets``). Each piece goes to a word by the rules of
``treeattn.trees.offsets``.

>>> pieces = [(0, 2), (2, 4), (5, 8), (8, 10), (11, 15), (15, 16)]  # Do gs can 't bark .
>>> aligned = align_pieces(["Dogs can't bark."], [pieces])
>>> aligned.words[0]
['Dogs', 'ca', "n't", 'bark', '.']
>>> aligned.word_of_piece[0]
[0, 0, 1, 2, 3, 4]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from treeattn.parsing.parser import Parser
from treeattn.parsing.tree_source import TreeSource
from treeattn.trees import Tree
from treeattn.trees.offsets import first_pieces, piece_words
from treeattn.trees.tokenize import Token, tokenize_with_offsets


@dataclass(frozen=True)
class AlignedText:
    """Each sentence's parser words (``tokens``, with their places in the text; ``words``
    as the parser reads them), each piece's word (``word_of_piece``: -1 for a piece of no
    word) and, for each word, its first piece (``first_piece``)."""

    tokens: list[list[Token]]
    word_of_piece: list[list[int]]
    first_piece: list[list[int]]

    @property
    def words(self) -> list[list[str]]:
        return [[token.word for token in sentence] for sentence in self.tokens]


def align_pieces(texts: Sequence[str], offsets: Sequence[Sequence[tuple[int, int]]]) -> AlignedText:
    """Align each text's pieces, given by their character ``offsets`` in it (a fast
    tokenizer's ``offset_mapping``; (0, 0) for a special piece), with the parser's words
    of the text (the module's rules)."""
    tokens = [tokenize_with_offsets(text) for text in texts]
    owners = [piece_words(*row) for row in zip(texts, tokens, offsets, strict=True)]
    width = max((len(row) for row in owners), default=0)
    padded = torch.tensor([row + [-1] * (width - len(row)) for row in owners]).view(-1, width)
    n_words = max((len(row) for row in tokens), default=0)
    lengths = torch.tensor([len(words) for words in tokens])
    firsts = first_pieces(padded, n_words, lengths).tolist()
    firsts = [row[: len(words)] for row, words in zip(firsts, tokens, strict=True)]
    return AlignedText(tokens, owners, firsts)


def align_text(
    texts: Sequence[str],
    tokenizer: Any,
    source: Parser | TreeSource | None = None,
    where: str = "input",
    **encoding: Any,
) -> tuple[Any, AlignedText, list[Tree]]:
    """Raw ``texts`` through a model's fast ``tokenizer`` (``encoding``: its keyword
    options, e.g. ``padding=True, return_tensors="pt"``), their parser words aligned with
    its pieces, and the words' trees from ``source`` (default: the shipped parser). Give
    ``aligned.word_of_piece`` to ``SyntaxInjection.inputs`` with the trees."""
    encoded = tokenizer(list(texts), return_offsets_mapping=True, **encoding)
    offsets = encoded.pop("offset_mapping")
    offsets = offsets.tolist() if hasattr(offsets, "tolist") else offsets
    aligned = align_pieces(texts, offsets)
    source = Parser.load() if source is None else source
    if isinstance(source, TreeSource):
        trees = source.trees(aligned.words, where, progress=False)
    else:
        trees = [parse.tree for parse in source.parse(aligned.words, where=where)]
    return encoded, aligned, trees
