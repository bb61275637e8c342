"""Raw text for masked language modelling: the words of shared corpora, no trees.

The corpora (``data.corpora``), each split as its own data set:

- ``ewt``: UD English-EWT (train / dev / test);
- ``sst``: the SST sentences (train / dev / test);
- ``ptb``: the PTB sample by file (train wsj_0001-0139, dev 0140-0169, test 0170-0199);
- ``multi30k``: Multi30k's English side (train / val / test_2016_flickr), tokenized as
  the Penn Treebank is.

A Tree Transformer learns its constituents from this text alone; the PTB sample's trees
only judge them afterwards.

The text options are part of the method: the Tree Transformer's release (Wang et al.
2019) trains and parses punctuation-free, lowercased WSJ text whose numbers are ``N``
(Mikolov's PTB style), with a start token before every sentence. ``TextOptions`` does the
same to any of these corpora. What counts as punctuation depends on what the source says
about its words:

- treebank words: their tag is one of ``REMOVED_TAGS`` (PTB punctuation, ``$``, ``#``),
  the words the unsupervised-parsing evaluation removes;
- CoNLL-U words: their UPOS is ``PUNCT``;
- plain text (SST, Multi30k, a text file): ``looks_like_punctuation``, a character rule that
  agrees with the PTB tags on the PTB sample's words but for a handful.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from treeattn.data.multi30k import multi30k_path, read_lines
from treeattn.data.ptb import load_ptb_sample
from treeattn.data.sst import load_sst
from treeattn.data.ud import load_ud
from treeattn.data.vocab import MASK, UNK
from treeattn.trees.labels import word_mask
from treeattn.trees.tokenize import tokenize

CORPORA = ("ewt", "sst", "ptb", "multi30k")
MULTI30K_SPLIT = {"train": "train", "dev": "val", "test": "test_2016_flickr"}
NUMBER = "N"  # what a word with a digit becomes (the release's number token)
START = "<s>"  # the start token put before every sentence
SPECIAL_TOKENS = frozenset({START, MASK, UNK})
UD_PUNCT = "PUNCT"
# PTB escapes of brackets: punctuation, though made of letters.
BRACKET_TOKENS = frozenset({"-LRB-", "-RRB-", "-LSB-", "-RSB-", "-LCB-", "-RCB-"})
# Characters of Unicode punctuation that the PTB tags as words: % (NN) and & (CC).
WORD_SYMBOLS = frozenset("%&")
QUOTE_CHARACTERS = frozenset("`")  # a modifier symbol in Unicode, a quote in the PTB
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class TextOptions:
    """How words are shown to a model: punctuation dropped, lowercased, numbers as ``N``."""

    drop_punctuation: bool = False
    lowercase: bool = False
    normalize_numbers: bool = False

    def describe(self) -> str:
        """The options in words, for messages."""
        done = [
            "punctuation removed" if self.drop_punctuation else "punctuation kept",
            *(["lowercased"] if self.lowercase else []),
            *([f"words with a digit as {NUMBER}"] if self.normalize_numbers else []),
        ]
        return ", ".join(done)


@dataclass(frozen=True)
class TaggedSentence:
    """A sentence's words and, for each, whether its source calls it punctuation."""

    words: list[str]
    punctuation: list[bool]


def looks_like_punctuation(word: str) -> bool:
    """The plain-text rule: a word is punctuation when every character is Unicode
    punctuation (categories P*), a currency symbol (Sc) or a backquote, except ``%`` and
    ``&``, which the PTB tags as words; the PTB's bracket escapes (``-LRB-`` ...) are
    punctuation too.

    >>> words = ["``", "$", "--", "...", "%", "&", "n't", "-LRB-", "3.5"]
    >>> [w for w in words if looks_like_punctuation(w)]
    ['``', '$', '--', '...', '-LRB-']
    """
    if word in BRACKET_TOKENS:
        return True
    return all(
        c in QUOTE_CHARACTERS
        or unicodedata.category(c)[0] == "P"
        or unicodedata.category(c) == "Sc"
        for c in word
        if c not in WORD_SYMBOLS
    ) and any(c not in WORD_SYMBOLS for c in word)


def plain_sentence(words: Sequence[str]) -> TaggedSentence:
    """A sentence of plain text, its punctuation found by ``looks_like_punctuation``."""
    return TaggedSentence(list(words), [looks_like_punctuation(w) for w in words])


def normalize_word(word: str, options: TextOptions) -> str:
    """One word as the options show it (the start and mask tokens stay as they are)."""
    if word in SPECIAL_TOKENS:
        return word
    if options.normalize_numbers and _DIGIT.search(word):
        return NUMBER
    return word.lower() if options.lowercase else word


def apply_options(sentence: TaggedSentence, options: TextOptions) -> list[str]:
    """The sentence's words as the options show them (possibly none)."""
    return [
        normalize_word(word, options)
        for word, punct in zip(sentence.words, sentence.punctuation, strict=True)
        if not (options.drop_punctuation and punct)
    ]


def _ewt(split: str, root: str | Path | None) -> list[TaggedSentence]:
    return [
        TaggedSentence(list(tree.words), [tag == UD_PUNCT for tag in tree.upos])
        for tree in load_ud(split, root=root)
    ]


def _sst(split: str, root: str | Path | None) -> list[TaggedSentence]:
    return [plain_sentence(ex.tokens) for ex in load_sst(split, root=root, fine_grained=True)]


def _ptb(split: str, root: str | Path | None) -> list[TaggedSentence]:
    sentences = []
    for entry in load_ptb_sample(split, root=root, clean=True):
        keep = word_mask(entry.tree)  # the words the evaluation keeps
        sentences.append(TaggedSentence(entry.tree.leaves(), [not k for k in keep]))
    return sentences


def _multi30k(split: str, root: str | Path | None) -> list[TaggedSentence]:

    path = multi30k_path(MULTI30K_SPLIT[split], "en", root)
    return [plain_sentence(tokenize(line)) for line in read_lines(path)]


_READERS = {"ewt": _ewt, "sst": _sst, "ptb": _ptb, "multi30k": _multi30k}


def check_corpora(corpora: Sequence[str], where: str) -> None:
    unknown = [name for name in corpora if name not in CORPORA]
    if unknown or not corpora:
        raise ValueError(
            f"{where}: data.corpora={list(corpora)} must name one or more of {', '.join(CORPORA)}"
        )


def tagged_corpora(
    split: str, corpora: Sequence[str] = ("ewt", "sst", "ptb"), root: str | Path | None = None
) -> list[TaggedSentence]:
    """Every sentence of the ``corpora``'s ``split`` (``train``, ``dev`` or ``test``), in
    the order named; PTB traces (``-NONE-``) left out."""
    check_corpora(corpora, "text")
    if split not in MULTI30K_SPLIT:
        raise ValueError(f"split must be one of {', '.join(MULTI30K_SPLIT)}, not {split!r}")
    return [sentence for name in corpora for sentence in _READERS[name](split, root)]


def text_corpora(
    split: str,
    root: str | Path | None = None,
    corpora: Sequence[str] = ("ewt", "sst", "ptb"),
    options: TextOptions = TextOptions(),
) -> list[list[str]]:
    """The words of every sentence of ``tagged_corpora``, as ``options`` show them; a
    sentence left without words (all punctuation) is left out."""
    found = (apply_options(s, options) for s in tagged_corpora(split, corpora, root))
    return [words for words in found if words]
