"""The parser's vocabularies: words and characters (with padding, unknown and mask ids, as
the embeddings need), and the label sets its classifiers choose among (tags, span labels,
dependency relations), which have no such entries.

>>> labels = LabelSet.build([["NP", "VP", "NP"]])
>>> labels.names, labels.encode(["VP", "ADJP"])
(['NP', 'VP'], [1, -100])
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from treeattn.data.vocab import MASK, PAD, UNK, Vocab
from treeattn.parsing.examples import ParseExample
from treeattn.trees.transforms import chain_spans

EMPTY = "<empty>"  # the chart's label of a span that is no constituent (id 0, score fixed at 0)
START, STOP = "<s>", "</s>"  # the tokens around every sentence
IGNORE = -100  # a target left out of the losses
# The state written since label sets lost their padding, unknown and mask entries; a state
# without a version holds them (version 1).
STATE_VERSION = 2


class LabelSet:
    """Names at ids 0, 1, ...: the classes of one classifier. A name outside the set
    encodes as ``IGNORE``."""

    def __init__(self, names: Sequence[str]) -> None:
        if len(set(names)) != len(names):
            raise ValueError("label names must be unique")
        self.names = list(names)
        self.index = {name: i for i, name in enumerate(self.names)}

    @classmethod
    def build(cls, sequences: Iterable[Sequence[str]]) -> LabelSet:
        """Every name seen, most frequent first (ties by spelling)."""
        counts = Counter(name for sequence in sequences for name in sequence)
        return cls(sorted(counts, key=lambda name: (-counts[name], name)))

    def __len__(self) -> int:
        return len(self.names)

    def encode(self, names: Sequence[str]) -> list[int]:
        return [self.index.get(name, IGNORE) for name in names]

    def decode(self, ids: Sequence[int]) -> list[str]:
        return [self.names[i] for i in ids]


@dataclass
class ParserVocab:
    """What the parser learns from its training sentences besides weights. ``labels`` are
    the chart's: the empty label first, then the constituent labels (unary chains joined,
    ``S+VP``); only the empty label for a dependency-only parser."""

    words: Vocab
    chars: Vocab
    tags: LabelSet
    labels: LabelSet
    rels: LabelSet

    @classmethod
    def fit(cls, examples: Sequence[ParseExample], min_count: int = 1) -> ParserVocab:
        """Words seen ``min_count`` times or more (the others read as unknown), and every
        character, tag, constituent label and relation of the training sentences."""
        sentences = [[START, STOP, *ex.words] for ex in examples]
        trees = [ex.tree for ex in examples if ex.tree is not None]
        constituents = LabelSet.build([label for label, _, _ in chain_spans(t)] for t in trees)
        return cls(
            words=Vocab.build(sentences, min_count),
            chars=Vocab.build([[START, STOP]] + [list(w) for s in sentences for w in s[2:]]),
            tags=LabelSet.build(ex.tags for ex in examples),
            labels=LabelSet([EMPTY, *constituents.names]),
            rels=LabelSet.build(ex.dependencies.relations for ex in examples if ex.dependencies),
        )

    @property
    def constituency(self) -> bool:
        """Whether the parser builds constituency trees (it has constituent labels)."""
        return len(self.labels) > 1

    def sizes(self) -> dict[str, int]:
        """The vocabulary sizes the network is built with (``LabelAttentionParser``)."""
        return {
            "n_words": len(self.words),
            "n_chars": len(self.chars),
            "n_tags": len(self.tags),
            "n_labels": len(self.labels),
            "n_rels": len(self.rels),
        }

    def state_dict(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "words": self.words.tokens,
            "chars": self.chars.tokens,
            "tags": self.tags.names,
            "labels": self.labels.names,
            "rels": self.rels.names,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ParserVocab:
        """The vocabularies of ``state_dict``, or of a state of version 1, whose label sets
        began with the padding, unknown and mask entries of a word vocabulary."""
        version = state.get("version", 1)
        if version not in (1, STATE_VERSION):
            raise ValueError(f"vocabularies of version {version!r}; this treeattn reads 1 and 2")
        label_sets = {}
        for name in ("tags", "labels", "rels"):
            names = list(state[name])
            if version == 1:
                if names[:3] != [PAD, UNK, MASK]:
                    raise ValueError(f"the {name} of a version 1 state start with {PAD}, {UNK}")
                names = names[3:]
            label_sets[name] = LabelSet(names)
        if label_sets["labels"].names[:1] != [EMPTY]:
            raise ValueError(f"the chart's labels start with {EMPTY}")
        return cls(words=Vocab(state["words"]), chars=Vocab(state["chars"]), **label_sets)
