"""Labeled sentence files named by ``paths``: one split a file, classes named by the labels."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treeattn import plugins
from treeattn.errors import FormatError
from treeattn.tasks.datasets.base import DataSet, SentenceSettings, check_train_size
from treeattn.tasks.sentences import LabeledSentence
from treeattn.trees import Tree
from treeattn.trees.tree import WHITESPACE
from treeattn.trees.treebank import iter_treebank
from treeattn.utf8 import read_utf8, text_lines


@dataclass
class LabeledSettings(SentenceSettings):
    name: str = "labeled"
    # split name -> file; train and dev needed, every split but train scored at the end
    paths: dict = field(default_factory=dict)
    # Train on the first N sentences of a shuffle fixed by the data; null: all of them.
    train_size: int | None = None


@plugins.datasets.register
class LabeledFiles(DataSet):
    """Its splits are the files of ``paths``; ``read_labeled_file`` says what they hold."""

    name = "labeled"
    Settings = LabeledSettings

    @classmethod
    def check(cls, settings: Any, where: str) -> None:
        super().check(settings, where)
        check_train_size(settings, where)
        for split in ("train", "dev"):
            if split not in settings.paths:
                raise ValueError(f"{where}: data.paths.{split} is missing (a file)")
        for split, path in settings.paths.items():
            if not isinstance(path, str):
                raise ValueError(f"{where}: data.paths.{split} must be a file name")

    @property
    def splits(self) -> tuple[str, ...]:
        return tuple(self.settings.paths)

    def read_split(self, split: str, whole_trees: bool) -> list[LabeledSentence]:
        rows = read_labeled_file(self.settings.paths[split], whole_trees)
        return self.training_sentences(rows) if split == "train" else rows

    def read_path(self, path: str | Path, whole_trees: bool) -> list[LabeledSentence]:
        return read_labeled_file(path, whole_trees)

    def training_tree(self, tree: Tree, whole_trees: bool) -> Tree:
        """For a tree model, the root (the class in a file) relabeled ``X``."""
        return Tree("X", tree.children) if whole_trees else tree


def read_labeled_file(path: str | Path, whole_trees: bool = False) -> list[LabeledSentence]:
    """A labeled sentence file: ``LABEL<TAB>sentence`` lines (words separated by spaces), or
    one bracketed tree per line whose root label is the class.

    A tree keeps its other node labels; its root is relabeled ``X``, so the class is not
    among them (``whole_trees``; otherwise the tree keeps the class as its root label, which
    no token-level model reads). Labels are names, mapped to classes by the task. A line
    without a tab, an empty label or sentence, or an empty line is an error naming the file
    and line; so is a tree file with a line that is not one whole tree.
    """
    path = Path(path)
    text = read_utf8(path)
    first = next((line for line in text.split("\n") if line.strip(WHITESPACE)), "")
    if first.lstrip(WHITESPACE).startswith("("):
        rows = []
        for entry in iter_treebank(path, one_per_line=True, unwrap=False):
            tree = entry.tree
            if whole_trees:
                tree = Tree("X", tree.children)
            rows.append(LabeledSentence(entry.tree.leaves(), entry.tree.label, tree))
        return rows
    rows = []
    for number, line in enumerate(text_lines(text), start=1):
        if not line.strip(WHITESPACE):
            raise FormatError("empty line", str(path), number, 1)
        label, sep, sentence = line.partition("\t")
        if not sep:
            raise FormatError(
                "expected 'LABEL<TAB>sentence' (or one bracketed tree per line)",
                str(path),
                number,
                1,
            )
        if not label.strip():
            raise FormatError("empty label before the tab", str(path), number, 1)
        words = sentence.split()
        if not words:
            raise FormatError("no words after the tab", str(path), number, len(label) + 2)
        rows.append(LabeledSentence(words, label.strip(), None))
    return rows
