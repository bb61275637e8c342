"""The Stanford Sentiment Treebank: SST-5 (five classes, 0-4) and SST-2 (positive or
negative; neutral sentences left out of dev and test)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from treeattn import plugins
from treeattn.data.sst import IGNORE_LABEL, SentimentExample, binary_label, load_sst, read_sst_file
from treeattn.parsing.tree_source import GOLD, PARSER, RIGHT_BRANCHING, TreeSource
from treeattn.tasks.datasets.base import DataSet, SentenceSettings, check_train_size
from treeattn.tasks.sentences import LabeledSentence, binary_unlabeled, unlabeled_tree
from treeattn.trees import Tree


@dataclass
class SstSettings(SentenceSettings):
    name: str = "sst5"
    root: str | None = None  # data folder; default from TREEATTN_DATA
    # Train on every labeled phrase (each node's words and label, Tai et al. 2015) besides
    # the sentences; dev and test stay sentence-level.
    phrase_level: bool = False
    # Train on the first N sentences of a shuffle fixed by the data (the same N for every
    # model; with phrase_level, the phrases of those sentences); null: all of them.
    train_size: int | None = None
    # The trees of models that read them: gold (SST's bracketing), parser (the parser's
    # of each sentence's words) or right-branching, the last two made like SST's: binary,
    # unlabeled (``treeattn.parsing.tree_source``).
    trees: str = GOLD
    # accurate (default) or fast (shipped), or a parser file: for parser trees, and for
    # raw text to predict on
    parser: str | None = None


@plugins.datasets.register
class Sst5(DataSet):
    """SST's splits, or a file of one labeled tree per line."""

    name = "sst5"
    Settings = SstSettings
    classes = tuple(str(k) for k in range(5))
    class_names = ("very negative", "negative", "neutral", "positive", "very positive")
    fine_grained: ClassVar[bool] = True
    tree_kinds = (GOLD, PARSER, RIGHT_BRANCHING)

    @classmethod
    def check(cls, settings: SstSettings, where: str) -> None:
        super().check(settings, where)
        check_train_size(settings, where)
        if settings.trees not in cls.tree_kinds:
            raise ValueError(
                f"{where}: data.trees={settings.trees!r}; use {', '.join(cls.tree_kinds)}"
            )
        if settings.trees != GOLD and settings.phrase_level:
            raise ValueError(
                f"{where}: data.phrase_level reads SST's phrases, which the "
                f"{settings.trees} trees do not have; use data.trees=gold"
            )

    @property
    def phrase_level(self) -> bool:
        return self.settings.phrase_level

    def tree_source(self) -> TreeSource:
        return TreeSource(self.settings.trees, self.settings.parser)

    def read_split(self, split: str, whole_trees: bool) -> list[LabeledSentence]:
        """With ``whole_trees``, the trees have their node labels hidden and, with
        ``phrase_level`` in training, every phrase's label in ``phrase_labels`` instead of
        a row per phrase."""
        fine, root = self.fine_grained, self.settings.root
        phrases = self.settings.phrase_level and split == "train"
        # Phrase-level training reads every node's 0-4 label, and for SST-2 also the
        # sentences whose root is neutral (root label -1, skipped by the loss), for their
        # polar phrases.
        examples = load_sst(split, root=root, fine_grained=fine or phrases)
        if split == "train" and self.settings.train_size is not None:
            # The data set's own sentences (SST-2's: polar at the root), N of them kept,
            # each with its phrases.
            polar = [ex for ex in examples if fine or not phrases or binary_label(ex.label) >= 0]
            kept = {ex.line for ex in self.training_sentences(polar)}
            examples = [ex for ex in examples if ex.line in kept]
        if whole_trees and phrases:
            return [_whole_tree(ex, to_binary=not fine, phrases=True) for ex in examples]
        if whole_trees:
            return [_whole_tree(ex, to_binary=False, phrases=False) for ex in examples]
        if phrases:
            # Every node's phrase with its own label; the root is the whole sentence. For
            # SST-2 this includes the polar phrases of sentences whose root is neutral.
            return [
                LabeledSentence(
                    ex.tokens[start:end],
                    label if fine else binary_label(label),
                    subtrees[start, end],
                )
                for ex in examples
                for subtrees in [_subtrees_by_span(ex.tree)]
                for start, end, label in ex.phrase_labels
                if fine or binary_label(label) != IGNORE_LABEL
            ]
        return [LabeledSentence(ex.tokens, ex.label, ex.tree) for ex in examples]

    def read_path(self, path: str | Path, whole_trees: bool) -> list[LabeledSentence]:
        """One labeled tree per line (SST-2 drops sentences whose root label is neutral, as
        its test split does)."""
        examples = read_sst_file(path, fine_grained=self.fine_grained)
        if whole_trees:
            return [_whole_tree(ex, to_binary=False, phrases=False) for ex in examples]
        return [LabeledSentence(ex.tokens, ex.label, ex.tree) for ex in examples]

    def training_tree(self, tree: Tree, whole_trees: bool) -> Tree:
        """Unary chains collapsed (a phrase over one word too), binarized and every label
        ``X``, as SST's binary trees with their sentiment labels hidden."""
        return binary_unlabeled(tree)


@plugins.datasets.register
class Sst2(Sst5):
    name = "sst2"
    classes = ("0", "1")
    class_names = ("negative", "positive")
    fine_grained = False


def _whole_tree(ex: SentimentExample, to_binary: bool, phrases: bool) -> LabeledSentence:
    """An SST sentence for a tree model; ``to_binary`` maps 0-4 labels to SST-2's."""
    label = binary_label if to_binary else (lambda x: x)
    spans = tuple((start, end, label(y)) for start, end, y in ex.phrase_labels) if phrases else ()
    return LabeledSentence(ex.tokens, label(ex.label), unlabeled_tree(ex.tree), spans)


def _subtrees_by_span(tree: Tree) -> dict[tuple[int, int], Tree]:
    """Every node of ``tree`` by its word span (the highest of a unary chain)."""
    found: dict[tuple[int, int], Tree] = {}
    # Both walk every node in pre-order, so they pair up.
    nodes = zip(tree.spans(include_preterminals=True), tree.subtrees(), strict=True)
    for (_, start, end), node in nodes:
        found.setdefault((start, end), node)
    return found
