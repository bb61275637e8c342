"""Subword vocabularies for translation, learned with SentencePiece and kept as bytes
(so a checkpoint carries them and loads with ``weights_only=True``).

Ids follow the project's convention: 0 is padding, then unknown, start and end of
sentence. The source side is split word by word (``word_pieces``), so that a word's
pieces can form a subtree under it (``split_subwords``); the target side is encoded from
raw text and decoded back to detokenized text.
"""

from __future__ import annotations

import io
from collections.abc import Iterable

import sentencepiece as spm

PAD, UNK, BOS, EOS = 0, 1, 2, 3
WORD_START = "\u2581"  # SentencePiece's mark of a piece that begins a word


class Subwords:
    """A SentencePiece model: ``learn`` it from sentences or rebuild it ``from_bytes``."""

    def __init__(self, model: bytes) -> None:
        self.model = model
        self.processor = spm.SentencePieceProcessor(model_proto=model)

    @classmethod
    def learn(cls, sentences: Iterable[str], vocab_size: int, seed: int = 1) -> Subwords:
        """A unigram model of at most ``vocab_size`` pieces (special ids included: fewer
        when the sentences hold too few distinct pieces, as a small training subset may);
        one thread and a fixed seed, so the same sentences give the same model."""
        spm.set_random_generator_seed(seed)
        buffer = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences),
            model_writer=buffer,
            vocab_size=vocab_size,
            model_type="unigram",
            character_coverage=1.0,
            pad_id=PAD,
            unk_id=UNK,
            bos_id=BOS,
            eos_id=EOS,
            num_threads=1,
            hard_vocab_limit=False,
            minloglevel=2,
            # Every sentence counts: none is sampled away or cut at a length limit.
            input_sentence_size=0,
            max_sentence_length=1 << 16,
        )
        return cls(buffer.getvalue())

    def __len__(self) -> int:
        return self.processor.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self.processor.encode(text)

    def decode(self, ids: list[int]) -> str:
        return self.processor.decode(ids)

    def word_pieces(self, word: str) -> list[str]:
        """The pieces of one word (never empty)."""
        return self.processor.encode(word, out_type=str) or [word]

    def piece_ids(self, pieces: list[str]) -> list[int]:
        return [self.processor.piece_to_id(p) for p in pieces]
