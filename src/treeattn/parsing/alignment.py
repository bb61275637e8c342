"""A pretrained model's pieces and the parser's words, met by characters.

The model reads the raw text it was trained on, split by its own fast tokenizer; the
parser reads the same text as Penn Treebank words, each keeping its place in the text
(``tokenize_with_offsets``). A piece belongs to the word in which its first character
that is not white space falls (a byte-level piece "Ġcat" carries the space before
"cat"). The rules where the two splits disagree:

- a piece that runs over two words (a tokenizer that keeps "cannot" whole where the
  parser reads "can not") belongs to the first;
- a word in which no piece starts (the second of those) shares the piece that covers
  its first character, so every word has a first piece to be read from;
- a piece of no word (``[CLS]``, ``[SEP]``, padding, white space alone) is -1.

>>> pieces = [(0, 2), (2, 4), (5, 8), (8, 10), (11, 15), (15, 16)]  # Do gs can 't bark .
>>> aligned = align_pieces(["Dogs can't bark."], [pieces])
>>> aligned.words[0]
['Dogs', 'ca', "n't", 'bark', '.']
>>> aligned.word_of_piece[0]
[0, 0, 1, 2, 3, 4]
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from treeattn.parsing.parser import Parser
from treeattn.parsing.tree_source import TreeSource
from treeattn.trees import Tree
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


def _owner(tokens: Sequence[Token], starts: Sequence[int], text: str, start: int, end: int) -> int:
    """The word of the piece at ``text[start:end]``: the one its first non-space
    character falls in (-1: none); ``starts``: the words' first characters, in order."""
    while start < end and text[start].isspace():
        start += 1
    index = bisect.bisect_right(starts, start) - 1
    if start >= end or index < 0 or start >= tokens[index].end:
        return -1
    return index


def align_pieces(texts: Sequence[str], offsets: Sequence[Sequence[tuple[int, int]]]) -> AlignedText:
    """Align each text's pieces, given by their character ``offsets`` in it (a fast
    tokenizer's ``offset_mapping``; (0, 0) for a special piece), with the parser's words
    of the text (the module's rules)."""
    tokens = [tokenize_with_offsets(text) for text in texts]
    owners, firsts = [], []
    for text, words, spans in zip(texts, tokens, offsets, strict=True):
        starts = [token.start for token in words]
        owner = [_owner(words, starts, text, int(a), int(b)) for a, b in spans]
        first: list[int | None] = [None] * len(words)
        for piece, word in enumerate(owner):
            if word >= 0 and first[word] is None:
                first[word] = piece
        for word, token in enumerate(words):
            if first[word] is None:  # no piece starts here: the piece over its first char
                covering = [p for p, (a, b) in enumerate(spans) if a <= token.start < b]
                if not covering:
                    raise ValueError(f"{text!r}: no piece covers the word {token.form!r}")
                first[word] = covering[0]
        owners.append(owner)
        firsts.append([int(p) for p in first])
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
