"""CoLA (Warstadt et al. 2019): is a sentence acceptable? Scored by Matthews correlation,
as GLUE scores it, with accuracy beside it.

Its splits (``treeattn.data.cola``): ``train`` and ``dev`` (which chooses the checkpoint)
are the training file's two parts, ``in_domain`` and ``out_of_domain`` the release's dev
files, both scored when training ends. The sentences are raw text, split into words by the
Penn Treebank tokenizer the parser reads (``treeattn.trees.tokenize``); CoLA has no trees of
its own, so a model that reads trees gets the parser's (``data.trees: parser``, parsed once
a split and cached) or the right-branching control.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeattn import plugins
from treeattn.data.cola import COLA_SPLITS, ColaExample, cola_path, load_cola, read_cola_file
from treeattn.errors import FormatError
from treeattn.parsing.tree_source import PARSER, RIGHT_BRANCHING, TreeSource
from treeattn.tasks.datasets.base import DataSet, SentenceSettings, check_train_size
from treeattn.tasks.sentences import LabeledSentence, binary_unlabeled
from treeattn.trees import Tree
from treeattn.trees.tokenize import tokenize


@dataclass
class ColaSettings(SentenceSettings):
    name: str = "cola"
    root: str | None = None  # data folder; default from TREEATTN_DATA
    # Train on the first N sentences of the train split in a shuffle fixed by the data (the
    # same N for every model); null: all 7,696.
    train_size: int | None = None
    # The trees of models that read them: parser (the parser's of each sentence's words)
    # or right-branching, both made like SST's: binary, unlabeled.
    trees: str = PARSER
    # accurate (default) or fast (shipped), or a parser file
    parser: str | None = None


@plugins.datasets.register
class Cola(DataSet):
    """CoLA's four splits, or a file in its format (``read_cola_file``)."""

    name = "cola"
    Settings = ColaSettings
    classes = ("0", "1")
    class_names = ("unacceptable", "acceptable")
    tree_kinds = (PARSER, RIGHT_BRANCHING)
    metrics = ("mcc", "accuracy")

    @classmethod
    def check(cls, settings: Any, where: str) -> None:
        super().check(settings, where)
        check_train_size(settings, where)
        if settings.trees not in cls.tree_kinds:
            raise ValueError(
                f"{where}: data.trees={settings.trees!r}; CoLA has no trees of its own: use "
                f"{' or '.join(cls.tree_kinds)}"
            )

    @property
    def splits(self) -> tuple[str, ...]:
        return COLA_SPLITS

    def tree_source(self) -> TreeSource:
        return TreeSource(self.settings.trees, self.settings.parser)

    def read_split(self, split: str, whole_trees: bool) -> list[LabeledSentence]:
        rows = load_cola(split, self.settings.root)
        if split == "train":
            rows = self.training_sentences(rows)
        file = "train" if split == "dev" else split
        return _sentences(rows, str(cola_path(file, self.settings.root)))

    def read_path(self, path: str | Path, whole_trees: bool) -> list[LabeledSentence]:
        return _sentences(read_cola_file(path), str(path))

    def training_tree(self, tree: Tree, whole_trees: bool) -> Tree:
        """Binary and unlabeled, as the trees of every split are (``binary_unlabeled``)."""
        return binary_unlabeled(tree)


def _sentences(rows: list[ColaExample], where: str) -> list[LabeledSentence]:
    """Each row's sentence in Penn Treebank words, labeled 0 or 1."""
    sentences = []
    for row in rows:
        words = tokenize(row.sentence)
        if not words:
            raise FormatError("the sentence has no words", where, row.line)
        sentences.append(LabeledSentence(words, row.label))
    return sentences
