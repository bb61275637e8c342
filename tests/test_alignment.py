"""A model's pieces and the parser's words, met by characters (``parsing.alignment``), for
WordPiece, byte-level BPE and SentencePiece-style tokenizers trained here (nothing is
fetched), on text with contractions, quotes, brackets, a URL and non-ASCII words."""

from __future__ import annotations

import doctest

import pytest
import torch

from treeattn.parsing import alignment
from treeattn.parsing.alignment import align_pieces, align_text
from treeattn.parsing.tree_source import TreeSource
from treeattn.trees import Tree
from treeattn.trees.tokenize import tokenize

tokenizers = pytest.importorskip("tokenizers")
transformers = pytest.importorskip("transformers")

TEXTS = [
    'Dogs can\'t bark (loudly) at "night".',
    "See https://example.org/a-b?c=1 for the café's crème brûlée.",
    "She said: 'I won't go.' Naïve, isn't it?",
    "Cats don't sit on the mat; they're on the sofa.",
]


def trained(kind: str):
    """A fast tokenizer of ``kind`` trained on the texts, as transformers wraps one."""
    corpus = TEXTS * 20
    if kind == "wordpiece":
        raw = tokenizers.BertWordPieceTokenizer(lowercase=True)
        raw.train_from_iterator(corpus, vocab_size=200, min_frequency=1)
        special = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]"}
        special["unk_token"] = "[UNK]"
    elif kind == "byte-level":
        raw = tokenizers.ByteLevelBPETokenizer()
        raw.train_from_iterator(corpus, vocab_size=300, special_tokens=["<pad>"])
        special = {"pad_token": "<pad>"}
    else:
        raw = tokenizers.SentencePieceBPETokenizer()
        raw.train_from_iterator(corpus, vocab_size=200, special_tokens=["<pad>", "<unk>"])
        special = {"pad_token": "<pad>", "unk_token": "<unk>"}
    return transformers.PreTrainedTokenizerFast(tokenizer_object=raw._tokenizer, **special)


def test_the_rules_where_the_splits_disagree():
    assert doctest.testmod(alignment).failed == 0
    # "cannot": one piece over the parser's two words "can" "not", then "go".
    aligned = align_pieces(["cannot go"], [[(0, 0), (0, 6), (7, 9), (0, 0)]])
    assert aligned.words == [["can", "not", "go"]]
    assert aligned.word_of_piece == [[-1, 0, 2, -1]]  # the piece goes to its first word
    assert aligned.first_piece == [[1, 1, 2]]  # "not" shares the piece over it
    # A byte-level piece carries the space before its word; white space alone is no word's.
    aligned = align_pieces(["a  dog"], [[(0, 1), (1, 2), (2, 6)]])
    assert aligned.word_of_piece == [[0, -1, 1]]


@pytest.mark.parametrize("kind", ["wordpiece", "byte-level", "sentencepiece"])
def test_every_piece_lies_in_its_word_and_every_word_has_a_first_piece(kind):
    tokenizer = trained(kind)
    encoded = tokenizer(TEXTS, return_offsets_mapping=True)
    aligned = align_pieces(TEXTS, encoded["offset_mapping"])
    for text, tokens, owner, first, spans in zip(
        TEXTS,
        aligned.tokens,
        aligned.word_of_piece,
        aligned.first_piece,
        encoded["offset_mapping"],
        strict=True,
    ):
        assert [t.word for t in tokens] == tokenize(text)  # the parser's words, as parse reads
        real = [w for w in owner if w >= 0]
        assert real == sorted(real)  # pieces in word order
        for piece, word in enumerate(owner):
            start, end = spans[piece]
            if word < 0:
                assert not text[start:end].strip()  # a special piece, or white space
                continue
            token = tokens[word]
            begins = start + len(text[start:end]) - len(text[start:end].lstrip())
            assert token.start <= begins < token.end
        for word, token in enumerate(tokens):
            a, b = spans[first[word]]
            assert a <= token.start < b or owner[first[word]] == word


def test_a_model_reads_its_own_text_with_the_parsers_trees():
    from treeattn.models.syntax_injection import inject_syntax

    tokenizer = trained("wordpiece")
    config = transformers.BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    model = transformers.BertModel(config).eval()
    source = TreeSource("right-branching")
    encoded, aligned, trees = align_text(
        TEXTS, tokenizer, source, padding=True, return_tensors="pt"
    )
    assert [t.leaves() for t in trees] == aligned.words
    pad_mask = encoded["attention_mask"] == 0
    with torch.no_grad():
        plain = model(**encoded).last_hidden_state
        injection = inject_syntax(model, "distance", layers=[0, 1], heads=[0, 1])
        flat = [Tree("S", [Tree("X", [w]) for w in words]) for words in aligned.words]
        syntax = injection.inputs(flat, aligned.word_of_piece, pad_mask)
        same = model(**encoded, syntax=syntax).last_hidden_state
        syntax = injection.inputs(trees, aligned.word_of_piece, pad_mask)
        ranged = model(**encoded, syntax=syntax).last_hidden_state
    real = ~pad_mask
    torch.testing.assert_close(same[real], plain[real], rtol=0, atol=1e-5)
    assert (ranged[real] - plain[real]).abs().max() > 1e-4
