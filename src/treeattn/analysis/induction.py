"""Unsupervised parsing with a trained model whose layers give links between neighbouring
words (a mechanism that declares ``INDUCED_TREES``; the algorithm is the Tree
Transformer's, Wang et al. 2019): its links for raw text, its trees (the algorithm and
its variants: ``treeattn.trees.induction``), and their scores on the PTB sample. What a
mechanism draws of its own links is its own (``analysis.constituent_prior``).

A model trained with a start token reads it before each sentence; its link to the first
word is dropped before parsing, as the release drops it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import torch
from torch import nn

from treeattn.analysis.capture import layer_captures
from treeattn.analysis.loading import load_for
from treeattn.attention.registry import INDUCED_TREES
from treeattn.data.batching import bucket_batches, pad_ids
from treeattn.data.text import (
    START,
    TaggedSentence,
    TextOptions,
    normalize_word,
    plain_sentence,
)
from treeattn.data.vocab import Vocab
from treeattn.models.inputs import EncoderInputs
from treeattn.tasks.sentences import lines_to_sentences, text_options
from treeattn.tasks.trained import Trained
from treeattn.trees import Tree
from treeattn.trees.induction import THRESHOLD, trees_from_links
from treeattn.trees.tokenize import tokenize


def load_link_model(checkpoint: str, device: str = "auto") -> Trained:
    """A trained model whose mechanism induces trees from its links (``INDUCED_TREES``)."""
    return load_for(checkpoint, INDUCED_TREES, device)


@torch.no_grad()
def layer_links(model: nn.Module, tokens: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """(L, B, n-1) every layer's links for a batch, bottom layer first."""
    found = layer_captures(model, lambda: model(EncoderInputs(tokens, pad_mask)))
    links = [captured["links"].detach() for captured in found if "links" in captured]
    if not links:
        raise ValueError("the model has no layer that gives links between neighbouring words")
    return torch.stack(links)


def model_text_options(saved: Trained) -> TextOptions:
    """The text options the model was trained with."""
    return text_options(saved.cfg.data)


def chosen_text_options(
    saved: Trained,
    drop_punctuation: bool | None = None,
    lowercase: bool | None = None,
    normalize_numbers: bool | None = None,
) -> TextOptions:
    """The text options the model was trained with, but for those given (not None)."""
    chosen = {
        "drop_punctuation": drop_punctuation,
        "lowercase": lowercase,
        "normalize_numbers": normalize_numbers,
    }
    return replace(model_text_options(saved), **{k: v for k, v in chosen.items() if v is not None})


def uses_start_token(saved: Trained) -> bool:
    return bool(getattr(saved.cfg.data, "start_token", False))


def encode_words(
    saved: Trained, words: Sequence[str], options: TextOptions | None = None
) -> list[int]:
    """Word ids as the model was trained to read them (lowercased, numbers as ``N``, after
    a start token, as it was trained); punctuation is the caller's to remove."""
    options = model_text_options(saved) if options is None else options
    shown = [normalize_word(w, options) for w in words]
    return saved.task.vocab.encode([START, *shown] if uses_start_token(saved) else shown)


def induce_links(
    saved: Trained,
    sentences: Sequence[Sequence[str]],
    where: str = "text",
    options: TextOptions | None = None,
) -> list[np.ndarray]:
    """Every layer's links (L, n-1) among each sentence's words, as given. The model reads
    them as ``options`` show them (default: as it was trained: lowercased, numbers as
    ``N``, after a start token, whose link is dropped); punctuation is the caller's to
    remove."""
    for line, words in enumerate(sentences, start=1):
        if not words:
            raise ValueError(f"{where}: sentence {line} is empty")
        if len(words) + uses_start_token(saved) > saved.cfg.model.max_length:
            raise ValueError(
                f"{where}: sentence {line} has {len(words)} words, more than the model's "
                f"max_length={saved.cfg.model.max_length} allows"
            )
    ids = [encode_words(saved, words, options) for words in sentences]
    first = int(uses_start_token(saved))
    found: dict[int, np.ndarray] = {}
    for indices in bucket_batches([len(x) for x in ids], saved.cfg.train.eval_max_tokens, False):
        tokens, pad_mask = pad_ids([ids[i] for i in indices], Vocab.pad_id)
        links = layer_links(saved.model, tokens.to(saved.device), pad_mask.to(saved.device))
        links = links.cpu().numpy()
        for row, i in enumerate(indices):
            found[i] = links[:, row, first : first + len(sentences[i]) - 1]
    return [found[i] for i in range(len(sentences))]


def induce_trees(
    saved: Trained,
    sentences: Sequence[Sequence[str]],
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
    where: str = "text",
    variant: str = "paper",
    options: TextOptions | None = None,
) -> list[Tree]:
    """One induced tree per sentence, over its words as given (``induce_links``)."""
    links = induce_links(saved, sentences, where, options)
    return trees_from_links(sentences, links, variant, threshold, min_layer)


@dataclass(frozen=True)
class PreparedText:
    """Sentences with their punctuation removed (or not), and what was removed."""

    sentences: list[list[str]]
    removed: Counter[str]  # removed word -> count
    words: int  # words before the removal


def drop_punctuation(
    sentences: Sequence[TaggedSentence], drop: bool, where: str = "text"
) -> PreparedText:
    """The sentences without the words their source calls punctuation (all words when not
    ``drop``); a sentence left empty is an error naming ``where`` and its line."""
    kept_sentences, removed, total = [], Counter(), 0
    for line, sentence in enumerate(sentences, start=1):
        total += len(sentence.words)
        kept = []
        for word, punct in zip(sentence.words, sentence.punctuation, strict=True):
            if drop and punct:
                removed[word] += 1
            else:
                kept.append(word)
        if not kept:
            raise ValueError(f"{where}: sentence {line} is all punctuation; no word is left")
        kept_sentences.append(kept)
    return PreparedText(kept_sentences, removed, total)


def describe_removal(prepared: PreparedText, rule: str, shown: int = 12) -> str:
    """One line saying what was removed, e.g. for ``treeattn induce``."""
    count = sum(prepared.removed.values())
    if not count:
        return "no word removed"
    common = " ".join(f"{word} {n}" for word, n in prepared.removed.most_common(shown))
    more = " ..." if len(prepared.removed) > shown else ""
    return f"removed {count} of {prepared.words} words ({rule}): {common}{more}"


def bracketed(trees: Sequence[Tree]) -> str:
    """One bracketed tree a line."""
    return "".join(tree.to_brackets() + "\n" for tree in trees)


def text_sentences(
    lines: Sequence[str], where: str, tokenized: bool = False
) -> list[TaggedSentence]:
    """The words of each line, tokenized as the Penn Treebank is (``tokenized``: split on
    spaces, as given), punctuation marked by the character rule."""
    if not tokenized:
        lines = [" ".join(tokenize(line)) for line in lines]
    return [plain_sentence(words) for words in lines_to_sentences(lines, where)]


@dataclass(frozen=True)
class InducedText:
    """One variant's trees for the sentences of a text, over the words kept."""

    options: TextOptions
    prepared: PreparedText
    variant: str
    trees: list[Tree]

    def format(self) -> str:
        """How the words were shown to the model, and what was removed."""
        lines = [f"text: {self.options.describe()}"]
        if self.options.drop_punctuation:
            lines.append(describe_removal(self.prepared, "character rule"))
        return "\n".join(lines)

    def brackets(self) -> str:
        return bracketed(self.trees)


def induce_text(
    saved: Trained,
    lines: Sequence[str],
    where: str,
    options: TextOptions,
    tokenized: bool = False,
    variant: str = "paper",
    threshold: float = THRESHOLD,
    min_layer: int | None = None,
) -> InducedText:
    """The trees ``variant`` reads for each line of a text (``text_sentences``), shown to
    the model as ``options`` say (``chosen_text_options``)."""
    sentences = text_sentences(lines, where, tokenized)
    prepared = drop_punctuation(sentences, options.drop_punctuation, where)
    links = induce_links(saved, prepared.sentences, where, options)
    trees = trees_from_links(prepared.sentences, links, variant, threshold, min_layer)
    return InducedText(options, prepared, variant, trees)
