"""Subword vocabularies for translation: learned deterministically, lossless on the
target side, word by word on the source side so a word's pieces form a subtree."""

from __future__ import annotations

import pytest

from treeattn.data.multi30k import load_multi30k
from treeattn.data.paths import data_dir
from treeattn.data.subwords import BOS, EOS, PAD, UNK, Subwords
from treeattn.trees import Tree
from treeattn.trees.tensors import split_subwords
from treeattn.trees.tokenize import tokenize


@pytest.fixture(scope="module")
def pairs():
    root = data_dir()
    if root is None or not root.is_dir():
        pytest.skip("evaluation data not found: set TREEATTN_DATA")
    return load_multi30k("train", root=root)[:2000]


@pytest.fixture(scope="module")
def target(pairs):
    return Subwords.learn((de for _, de in pairs), vocab_size=1000)


def test_learning_is_deterministic_and_the_model_travels_as_bytes(pairs, target):
    again = Subwords.learn((de for _, de in pairs), vocab_size=1000)
    assert again.model == target.model and len(target) == 1000
    rebuilt = Subwords(target.model)
    assert rebuilt.encode(pairs[0][1]) == target.encode(pairs[0][1])
    pieces = [target.processor.id_to_piece(i) for i in (PAD, UNK, BOS, EOS)]
    assert pieces == ["<pad>", "<unk>", "<s>", "</s>"]


def test_the_target_side_decodes_back_to_its_text(pairs, target):
    for _, de in pairs[:300]:
        ids = target.encode(de)
        assert PAD not in ids and BOS not in ids and EOS not in ids
        # SentencePiece normalizes runs of spaces (a few lines end in one).
        assert target.decode(ids) == " ".join(de.split())


def test_source_words_split_into_pieces_under_their_word(pairs):
    words = [" ".join(tokenize(en)) for en, _ in pairs]
    source = Subwords.learn(words, vocab_size=800)
    sentence = tokenize("A man in an orange hat starring at something.")
    for word in sentence:
        pieces = source.word_pieces(word)
        assert "".join(pieces).removeprefix("\u2581") == word
        assert UNK not in source.piece_ids(pieces)
    tree = Tree.parse("(S (NP (DT A) (NN man)) (VP (VBD starred)) (. .))")
    split = split_subwords(tree, source.word_pieces)
    assert split.leaves() == [p for w in tree.leaves() for p in source.word_pieces(w)]
