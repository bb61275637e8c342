"""What a sentence data set is: its settings (the config's ``data`` section), its splits,
its classes, and how it reads a split, a file and a line to predict on."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from treeattn.data.sampling import first_of_shuffle
from treeattn.engine.config import check_positive
from treeattn.parsing.tree_source import GOLD, TreeSource
from treeattn.tasks.sentences import LabeledSentence, lowercased
from treeattn.trees import Tree
from treeattn.trees.treebank import parse_treebank_line

SPLITS = ("train", "dev", "test")
T = TypeVar("T")


@dataclass
class SentenceSettings:
    """The settings every sentence data set has; each data set adds its own."""

    name: str = ""
    min_count: int = 1  # words seen fewer times in training become <unk>
    lowercase: bool = False


class DataSet(ABC):
    """One data set, read as its settings say: subclass it, set the class attributes and
    register it where it is defined (``plugins.datasets.register``).

    ``Settings`` is the dataclass of the ``data`` section that names it; ``classes`` the
    class labels where they are fixed, as the data files write them (None: a task takes
    them from the training labels); ``class_names`` what predictions print for them, where
    the labels are bare numbers with a meaning (None: the labels themselves);
    ``tree_kinds`` the tree sources a model that reads trees may take on it; ``metrics``
    what its splits are scored by (``treeattn.tasks.classify``), the first of them choosing
    the checkpoint and heading the tables.
    """

    name: ClassVar[str]
    Settings: ClassVar[type[SentenceSettings]]
    classes: ClassVar[tuple[str, ...] | None] = None
    class_names: ClassVar[tuple[str, ...] | None] = None
    # The tree sources a model that reads trees may take on it (``tree_source``).
    tree_kinds: ClassVar[tuple[str, ...]] = (GOLD,)
    metrics: ClassVar[tuple[str, ...]] = ("accuracy",)

    def __init__(self, settings: Any) -> None:
        self.settings = settings

    @classmethod
    def check(cls, settings: Any, where: str) -> None:
        """Reject settings no run can use, naming the key."""
        check_positive({"data.min_count": settings.min_count}, where)

    @property
    def splits(self) -> tuple[str, ...]:
        return SPLITS

    def tree_source(self) -> TreeSource:
        """Where a model that reads trees gets them (``treeattn.parsing.tree_source``): by
        default the data's own trees, and for raw text to predict on the default parser's;
        a data set that lets ``data.trees`` choose (one of ``tree_kinds``) reads it here."""
        return TreeSource(GOLD)

    @property
    def phrase_level(self) -> bool:
        """Whether training reads every phrase's label (a setting of the data sets that
        have phrase labels, SST's)."""
        return False

    def load_split(self, split: str, whole_trees: bool = False) -> list[LabeledSentence]:
        """One split. ``whole_trees`` is for tree models: the trees as they read them (for
        SST, node labels hidden and phrase labels apart)."""
        if split not in self.splits:
            raise ValueError(f"split must be one of {', '.join(self.splits)}, not {split!r}")
        return self.shown(self.read_split(split, whole_trees))

    def training_sentences(self, sentences: list[T]) -> list[T]:
        """The training split's ``sentences`` as ``data.train_size`` keeps them: the first
        N of a shuffle fixed by the data set's name (``first_of_shuffle``), the same for
        every model and run seed; all of them where it is unset."""
        size = self.settings.train_size
        return first_of_shuffle(sentences, size, f"{self.name}-train", f"{self.name} train")

    def made_trees(
        self, source: TreeSource, rows: Sequence[LabeledSentence], where: str
    ) -> list[Tree]:
        """The trees ``source`` (not ``gold``: those come with the data) gives ``rows``: by
        default each sentence's whole; a data set whose sentences join parts (an input and
        its output) has each part's tree made alone and joins them as its gold trees do."""
        return source.trees([row.tokens for row in rows], where)

    def read_file(self, path: str | Path, whole_trees: bool = False) -> list[LabeledSentence]:
        """Labeled sentences from a file in the data set's own format."""
        return self.shown(self.read_path(path, whole_trees))

    def shown(self, rows: list[LabeledSentence]) -> list[LabeledSentence]:
        """The sentences as the settings show them (lowercased or not)."""
        return lowercased(rows) if self.settings.lowercase else rows

    @abstractmethod
    def read_split(self, split: str, whole_trees: bool) -> list[LabeledSentence]:
        """One split (a known name), as read."""

    @abstractmethod
    def read_path(self, path: str | Path, whole_trees: bool) -> list[LabeledSentence]:
        """A file in the data set's format, as read."""

    def input_tree(self, line: str, where: str, number: int) -> Tree | None:
        """The tree a line to predict on gives, if it gives one: here a bracketed tree;
        other lines are words."""
        if line.lstrip().startswith("("):
            return parse_treebank_line(line, where, number)
        return None

    def training_tree(self, tree: Tree, whole_trees: bool) -> Tree:
        """A tree read or parsed at prediction time, made like the training trees."""
        return tree


def check_train_size(settings: Any, where: str) -> None:
    """``data.train_size``, where set, is a positive count."""
    if settings.train_size is not None:
        check_positive({"data.train_size": settings.train_size}, where)
