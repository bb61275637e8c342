"""What the language-model tasks (``mlm``, ``causal-lm``) share: raw text read as the
text options say, a vocabulary of words or of SentencePiece pieces learned on the
training text, and a trained model's view of any raw text, piece by piece, for scoring
(``treeattn.evaluation``).

Words come from the ``text`` data set (``treeattn.data.text``: the shared English
corpora), shown as the text options say, or from another data set of plain sentences that
a task lists in its ``datasets`` (the causal task: McCoy et al.'s ``input output``
strings, ``treeattn.tasks.datasets.mccoy``), whose data section holds its own settings
and the language-model ones (``LmSettings``). ``data.vocabulary: words`` gives each word
an id (rare ones ``<unk>``); ``subwords`` learns a unigram SentencePiece model of at most
``data.vocab_size`` pieces on the training split's words, as translation does, and splits
each word into its pieces, so that a word never seen in training is still read, piece by
piece, and not as ``<unk>``. Either way the model reads ids of one ``Vocab`` (padding,
unknown and mask first).

``data.trees`` keeps a tree of each training sentence's words beside it
(``LabeledSentence.tree``; with subwords, each word's pieces in a subtree under it): the
data set's own (``gold``, where it has them), the shipped parser's, each split parsed once
and cached as the tree source caches (``treeattn.parsing.tree_source``), or the
right-branching control, as the data set allows (``DataSet.tree_kinds``). The encoders
these tasks take read no trees; the trees are for a mechanism's training loss on the
hidden states (tree regularization), which the tasks' ``loss`` adds where it says so.

Raw text to score (``text_pieces``) is tokenized as the Penn Treebank is, each word kept
with its characters in the text, the text options applied word by word (a word they drop
has no piece), then split into ids as training split its words; every piece of a word
carries the word's characters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, make_dataclass, replace
from functools import cache
from typing import Any, ClassVar

import torch
from torch import nn

from treeattn import plugins
from treeattn.data.batching import bucket_batches
from treeattn.data.subwords import Subwords
from treeattn.data.text import START, normalize_word, plain_sentence
from treeattn.data.vocab import MASK, PAD, UNK, Vocab
from treeattn.engine.config import Config, check_positive
from treeattn.engine.task import Selection, Task, evaluating
from treeattn.models.inputs import SUBWORD_NODE, EncoderInputs
from treeattn.models.registry import EncoderConfig, encoder_entry
from treeattn.models.tree_loss import TreeLossSettings, with_tree_loss
from treeattn.parsing.tree_source import GOLD, TreeSource
from treeattn.tasks.datasets import TextSettings, open_dataset, read_examples
from treeattn.tasks.encoding import EncodedSet, SentenceBatch, check_lengths, input_encoder
from treeattn.tasks.sentences import (
    TEXT,
    LabeledSentence,
    lines_to_sentences,
    read_text,
    text_options,
)
from treeattn.trees import Tree
from treeattn.trees.tensors import split_subwords
from treeattn.trees.tokenize import tokenize_with_offsets

WORDS, SUBWORDS = "words", "subwords"
VOCABULARIES = (WORDS, SUBWORDS)
END = "</s>"  # the end token a causal model predicts last
CAUSAL, MASKED = "causal", "masked"


@dataclass
class LmSettings:
    """The vocabulary (words, or SentencePiece pieces learned on the training split's
    words) and the trees kept beside the text."""

    vocabulary: str = WORDS
    vocab_size: int = 8000  # subwords: at most this many pieces (specials included)
    # null: no trees; gold (the data set's own), parser (each split parsed once, cached)
    # or right-branching, as the data set allows
    trees: str | None = None
    parser: str | None = None  # accurate (default) or fast (shipped), or a parser file


@dataclass
class LmData(TextSettings, LmSettings):
    """The ``text`` data set's settings and the language-model ones."""


@cache
def lm_data_class(settings: type) -> type:
    """The data section of a language model on a data set other than ``text``: that data
    set's ``settings`` and the language-model ones (``LmSettings``)."""
    combined = make_dataclass(f"Lm{settings.__name__}", [], bases=(settings, LmSettings))
    combined.__module__ = __name__
    return combined


@dataclass(frozen=True)
class TextPieces:
    """A raw text as a trained model reads it: piece ids, each piece's characters in the
    text, and the word each piece belongs to (0-based)."""

    ids: list[int]
    spans: list[tuple[int, int]]
    words: list[int]


@dataclass
class LmModel(EncoderConfig, TreeLossSettings):
    """A language model's encoder (the registry's ``EncoderConfig``) and the loss on its
    hidden states from each training sentence's tree (``TreeLossSettings``)."""


class LanguageModelTask(Task):
    """A language model of raw text: the text data set, a vocabulary of words or pieces,
    and what ``treeattn.evaluation`` reads of a trained model.

    Subclasses say which ``lm_kind`` they are (``causal`` or ``masked``), build the model,
    and give ``lm_log_probs``. Special tokens the model reads around a text
    (``lm_prefix``, ``lm_suffix``) are words of the vocabulary (``<s>``, ``</s>``).
    """

    lm_kind: ClassVar[str]
    activity: ClassVar[str]  # what the task does, for messages ("masked language modelling")
    datasets: ClassVar[tuple[str, ...]] = (TEXT,)  # the data sets of plain sentences read
    # Tokens the vocabulary holds whatever the text (besides padding, unknown and mask).
    special_words: ClassVar[tuple[str, ...]] = ()

    def __init__(self, cfg: Config) -> None:
        super().__init__(cfg)
        # A loss on hidden states from the training trees (model.tree_loss), and the
        # value it had in the last training batch, logged apart.
        self.tree_loss = cfg.model.build_tree_loss()
        self._loss_terms: dict[str, torch.Tensor] = {}
        self.vocab: Vocab | None = None
        self.subwords: Subwords | None = None
        self._pieces: dict[str, list[str]] = {}
        d = cfg.data
        self.tree_source = None if d.trees is None else TreeSource(d.trees, d.parser)
        # Where the trees of a trained model's text came from (``TreeSource.record``: its
        # kind, and for a parser its path and SHA-256); None without data.trees.
        self.trees: dict[str, str] | None = None

    @classmethod
    def data_section(cls, data: Any, where: str) -> tuple[type, Any]:
        """``Data`` for ``text`` (and for a name the task does not read, which
        ``check_config`` refuses); for another data set of ``datasets``, its own settings
        and the language-model ones."""
        name = data.get("name", TEXT) if isinstance(data, dict) else TEXT
        if name == TEXT or name not in cls.datasets:
            return cls.Data, data
        return lm_data_class(plugins.datasets[name].Settings), data

    @classmethod
    def check_config(cls, cfg: Config, where: str) -> None:
        d = cfg.data
        if d.name not in cls.datasets:
            raise ValueError(
                f"{where}: data.name={d.name!r}; {cls.activity} reads {' or '.join(cls.datasets)}"
            )
        dataset = plugins.datasets[d.name]
        dataset.check(d, where)
        if d.vocabulary not in VOCABULARIES:
            raise ValueError(
                f"{where}: data.vocabulary={d.vocabulary!r}: choose {' or '.join(VOCABULARIES)}"
            )
        check_positive({"data.vocab_size": d.vocab_size}, where)
        kinds = dataset.tree_kinds
        if d.trees is not None and d.trees not in kinds:
            raise ValueError(
                f"{where}: data.trees={d.trees!r}: {d.name} takes null, {' or '.join(kinds)}"
            )
        m = cfg.model
        if m.tree_loss is not None and d.trees is None:
            raise ValueError(
                f"{where}: model.tree_loss reads each training sentence's tree; set data.trees "
                f"({' or '.join(kinds)})"
            )
        m.check_tree_loss(where, encoder_entry(m.attention).module)

    # -- text and vocabulary ------------------------------------------------------------

    def _words_of(self, examples: Sequence[LabeledSentence]) -> list[LabeledSentence]:
        """The examples as the model reads them (the start token, where the task adds it)."""
        return list(examples)

    @property
    def words_around(self) -> tuple[int, int]:
        """How many tokens ``_words_of`` puts before and after a sentence's words."""
        return (0, 0)

    def read(self, source: str) -> tuple[list[LabeledSentence], str]:
        dataset = open_dataset(self.cfg.data)
        examples, where = read_examples(dataset, source, False)
        # The encoders these tasks take read no trees: only the training split's feed a
        # loss, so only they are kept or made (no parse of dev and test).
        if self.tree_source is None or source != self.train_split:
            examples = [replace(ex, tree=None) for ex in examples]
        elif self.tree_source.kind == GOLD:
            missing = [k for k, ex in enumerate(examples, start=1) if ex.tree is None]
            if missing:
                raise ValueError(f"{where}: sentence {missing[0]} has no gold tree")
        else:
            trees = dataset.made_trees(self.tree_source, examples, where)
            examples = [replace(ex, tree=t) for ex, t in zip(examples, trees, strict=True)]
        return self._words_of(examples), where

    def fit(self, train_examples: Sequence[LabeledSentence]) -> None:
        d = self.cfg.data
        if d.vocabulary == WORDS:
            self.vocab = Vocab.build((ex.tokens for ex in train_examples), d.min_count)
            # Specials are kept whatever their count.
            missing = [w for w in self.special_words if w not in self.vocab.index]
            self.vocab = Vocab([*self.vocab.tokens, *missing])
            self.subwords = None
        else:
            texts = (
                " ".join(w for w in ex.tokens if w not in self.special_words)
                for ex in train_examples
            )
            self.subwords = Subwords.learn(texts, d.vocab_size, self.cfg.seed)
            self.vocab = self._piece_vocab(self.subwords)
        self._pieces = {}
        self.trees = None if self.tree_source is None else self.tree_source.record()

    def _piece_vocab(self, subwords: Subwords) -> Vocab:
        """Padding, unknown and mask, the task's specials, then every SentencePiece piece
        but SentencePiece's own specials (its ids 0 to 3)."""
        pieces = [subwords.processor.id_to_piece(i) for i in range(4, len(subwords))]
        specials = [PAD, UNK, MASK, *self.special_words]
        return Vocab([*specials, *(p for p in pieces if p not in specials)])

    def pieces(self, word: str) -> list[str]:
        """A word as the vocabulary's tokens: itself, or its SentencePiece pieces (a
        special word is one piece; memoised: words repeat)."""
        if self.subwords is None or word in self.special_words or word == MASK:
            return [word]
        if word not in self._pieces:
            self._pieces[word] = self.subwords.word_pieces(word)
        return self._pieces[word]

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"vocab": self.vocab.tokens}
        if self.subwords is not None:
            state["subwords"] = self.subwords.model
        if self.trees is not None:
            state["trees"] = dict(self.trees)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.vocab = Vocab(state["vocab"])
        self.subwords = Subwords(bytes(state["subwords"])) if "subwords" in state else None
        self._pieces = {}
        self.trees = state.get("trees")
        if self.tree_source is not None:
            self.tree_source = self.tree_source.restored(self.trees)

    def as_pieces(self, examples: Sequence[LabeledSentence]) -> list[LabeledSentence]:
        """The examples with each word replaced by its pieces, and each tree's words by
        subtrees of their pieces (words, as they are)."""
        if self.subwords is None:
            return list(examples)

        def tree_of_pieces(ex: LabeledSentence) -> Tree:
            # A tree's leaves are its words with brackets escaped (-LRB-): each takes the
            # pieces of the word itself, met left to right (after <s>, where there is one).
            words = iter(ex.tokens[self.words_around[0] :])
            return split_subwords(ex.tree, lambda _leaf: self.pieces(next(words)), SUBWORD_NODE)

        return [
            replace(
                ex,
                tokens=[p for w in ex.tokens for p in self.pieces(w)],
                tree=None if ex.tree is None else tree_of_pieces(ex),
            )
            for ex in examples
        ]

    def encode(self, examples: Sequence[LabeledSentence], where: str) -> EncodedSet:
        pieces = self.as_pieces(examples)
        check_lengths(pieces, self.cfg.model.max_length, where)
        inputs = input_encoder(self.cfg.model)
        around = sum(self.words_around)
        return EncodedSet(
            pieces, self.vocab, inputs, where, tree_loss=self.tree_loss, tree_around=around
        )

    # -- the loss ------------------------------------------------------------------------

    def with_tree_loss(
        self, model: nn.Module, batch: SentenceBatch, task_loss: Callable[[], torch.Tensor]
    ) -> torch.Tensor:
        """``task_loss()``, plus the weighted tree loss of the same pass's hidden states
        where ``model.tree_loss`` names one (each tree over the words, between the
        ``words_around`` them)."""
        if self.tree_loss is None:
            return task_loss()
        loss, tree_loss = with_tree_loss(
            self.cfg.model,
            self.tree_loss,
            model,
            batch.inputs,
            batch.tree_targets,
            task_loss,
            offset=self.words_around[0],
        )
        self._loss_terms = {"tree_loss": tree_loss}
        return loss

    def loss_terms(self) -> dict[str, torch.Tensor]:
        return self._loss_terms

    # -- perplexity and predictions -----------------------------------------------------

    @property
    def selection(self) -> Selection:
        return Selection("dev", "perplexity", higher_is_better=False)

    @property
    def final_splits(self) -> tuple[str, ...]:
        return ("dev", "test")

    @torch.no_grad()
    def perplexity(
        self,
        model: nn.Module,
        data: EncodedSet,
        device: torch.device,
        summed_loss: Callable[[nn.Module, SentenceBatch], tuple[torch.Tensor, int]],
    ) -> dict[str, Any]:
        """exp of the mean cross-entropy per predicted token, from ``summed_loss(model,
        batch)`` -> (summed cross-entropy, tokens predicted) over evaluation batches."""
        total, count = 0.0, 0
        with evaluating(model):
            for indices in bucket_batches(data.lengths, self.cfg.train.eval_max_tokens, False):
                loss, n = summed_loss(model, data.batch(indices).to(device))
                total += loss.item()
                count += n
        mean = total / max(1, count)
        return {"perplexity": math.exp(mean), "loss": mean, "count": count}

    def read_inputs(self, lines: Sequence[str], where: str) -> list[LabeledSentence]:
        """One sentence per line, words separated by spaces (``mlm``: ``<mask>`` marks a
        word, or with subwords one piece, to fill in), shown as the text options say."""
        sentences = read_text(lines_to_sentences(lines, where), self.cfg.data, where)
        examples = self._words_of([LabeledSentence(words, 0) for words in sentences])
        check_lengths(self.as_pieces(examples), self.cfg.model.max_length, where)
        return examples

    # -- what evaluation reads ------------------------------------------------------------

    def text_pieces(self, text: str) -> TextPieces:
        """A raw text as the model reads it, without the ``lm_prefix`` and ``lm_suffix``:
        PTB tokens with their characters, the text options applied word by word, each
        word split as the vocabulary splits it."""
        tokens = tokenize_with_offsets(text)
        options = text_options(self.cfg.data)
        tagged = plain_sentence([t.word for t in tokens])
        ids, spans, words = [], [], []
        for k, (token, punct) in enumerate(zip(tokens, tagged.punctuation, strict=True)):
            if options.drop_punctuation and punct:
                continue
            for piece in self.pieces(normalize_word(token.word, options)):
                ids.append(self.vocab.index.get(piece, Vocab.unk_id))
                spans.append((token.start, token.end))
                words.append(k)
        return TextPieces(ids, spans, words)

    @property
    def lm_prefix(self) -> list[int]:
        """Ids the model reads before a text's pieces."""
        return []

    @property
    def lm_suffix(self) -> list[int]:
        """Ids the model reads after a text's pieces."""
        return []

    def lm_log_probs(
        self, model: nn.Module, ids: torch.Tensor, pad_mask: torch.Tensor, at: torch.Tensor
    ) -> torch.Tensor:
        """(k, V) log-probabilities over the vocabulary at the ``k`` positions where ``at``
        (B, n) is True, for ids (B, n) padded where ``pad_mask`` is True: a causal model's
        of the next piece, a masked model's of the piece at a masked position (both models
        take ``predict``: the output layer only where asked)."""
        return model(EncoderInputs(ids, pad_mask), predict=at).log_softmax(-1)


def start_tokens(examples: Sequence[LabeledSentence]) -> list[LabeledSentence]:
    """Each example with ``<s>`` before its words."""
    return [replace(ex, tokens=[START, *ex.tokens]) for ex in examples]
