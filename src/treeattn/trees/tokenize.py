"""Raw text into Penn Treebank words: the one tokenizer every reader of raw sentences uses
(the parser, translation's source side, plain-text corpora), so that swapping it is one
place.

Sentences are split as the Penn Treebank is (nltk's ``TreebankWordTokenizer``, which needs
no data download), with brackets written ``-LRB-``/``-RRB-`` and double quotes as
``\\`\\``` / ``''``.
"""

from __future__ import annotations

from collections.abc import Sequence

# Penn Treebank escapes of brackets, which a bracketed tree cannot hold as words.
ESCAPES = {"(": "-LRB-", ")": "-RRB-", "[": "-LSB-", "]": "-RSB-", "{": "-LCB-", "}": "-RCB-"}


def tokenize(sentence: str) -> list[str]:
    """Penn Treebank tokens of one sentence, with PTB escapes for brackets and quotes."""
    from nltk.tokenize import TreebankWordTokenizer  # imported late: nltk is slow to load

    return escape(TreebankWordTokenizer().tokenize(sentence, convert_parentheses=True))


def escape(words: Sequence[str]) -> list[str]:
    """Words with every bracket character written as the Penn Treebank writes it."""
    return ["".join(ESCAPES.get(char, char) for char in word) for word in words]
