"""McCoy, Frank & Linzen's (2020) pairs as plain strings for a language model, as Murty et
al. (2023) and Nandi, Manning & Murty (2025) train one: each pair one sentence, the input
(the declarative, its ``.``, the task word) then the output, e.g. ``my walrus that does
laugh doesn't giggle . quest doesn't my walrus that does laugh giggle ?``.

Splits: ``train``, the generated training set (``treeattn.data.mccoy.training_set``: the
paper's filter, ``train_size`` pairs from ``train_seed``, cached; the same for every run
seed), and the shared ``dev``, ``test`` and ``gen``.

The gold tree of a string joins the bracket files' two trees under one root: the input's
(the grammar's tree of the declarative, the task word beside it) and the output's (the
grammar's tree of the correct output), ``(PAIR (TOP (ROOT ...) quest) (TOP (SQ ...) ?))``.
A training string's output is the correct one, so its tree covers every word; a string
read from a file whose output is not the correct one has no tree. Gold trees are kept
where ``data.trees`` is ``gold``; a parser's or the right-branching control's are made
(``made_trees``) for the input sentence and the output alone, joined the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from treeattn import plugins
from treeattn.data.mccoy import TASKS, TRAIN_SIZE, Example, McCoyData, training_set
from treeattn.data.mccoy.files import input_tree
from treeattn.data.mccoy.generate import MIXES, SHARED_MIX
from treeattn.engine.config import check_positive
from treeattn.parsing.tree_source import GOLD, PARSER, RIGHT_BRANCHING, TreeSource
from treeattn.tasks.datasets.base import DataSet, SentenceSettings
from treeattn.tasks.sentences import LabeledSentence
from treeattn.trees import Tree

MCCOY = "mccoy"
MCCOY_LM_SPLITS = ("train", "dev", "test", "gen")
PAIR = "PAIR"  # the label of the root joining an input's tree and its output's


@dataclass
class McCoySettings(SentenceSettings):
    """Which task (``question`` or ``tense``), where its files are, and the generated
    training set's size, seed and mix of sentence types
    (``treeattn.data.mccoy.generate``)."""

    name: str = MCCOY
    root: str | None = None  # data folder; default from TREEATTN_DATA
    task: str = "question"
    train_size: int = TRAIN_SIZE
    train_seed: int = 0
    mix: str = SHARED_MIX
    # gold: each string's gold tree beside it; other kinds (a parser's) are a task's to make
    trees: str | None = None


@cache
def task_data(task: str, root: str | None) -> McCoyData:
    """A task's grammar and shared files, read once a process: training, scoring and each
    checkpoint of a curve read the same splits."""
    return McCoyData.load(task, root)


def pair_tree(data: McCoyData, example: Example) -> Tree | None:
    """The gold tree of ``input output`` (see the module's docstring); None where the
    output is not the correct one, whose tree the grammar does not give."""
    output = data.output_tree(example)
    if tuple(output.leaves()) != example.target:
        return None
    return Tree(PAIR, [example.source_tree, output])


def sentence_trees(
    source: TreeSource, sentences: Sequence[Sequence[str]], where: str
) -> list[Tree]:
    """``source``'s tree of each sentence, each distinct sentence made once (a training
    set repeats many: a declarative's output is the declarative itself)."""
    distinct = list(dict.fromkeys(tuple(words) for words in sentences))
    made = dict(zip(distinct, source.trees([list(w) for w in distinct], where), strict=True))
    return [made[tuple(words)] for words in sentences]


def pair_string(data: McCoyData, example: Example, gold: bool = True) -> LabeledSentence:
    """One pair as a language model's sentence (label 0), with ``gold`` its gold tree
    beside it."""
    tree = pair_tree(data, example) if gold else None
    return LabeledSentence([*example.source, *example.target], 0, tree)


@plugins.datasets.register
class McCoyStrings(DataSet):
    """A McCoy task's pairs as ``input output`` strings; ``pairs(split)`` gives the pairs
    themselves (for scoring a model's outputs)."""

    name = MCCOY
    Settings = McCoySettings
    tree_kinds = (GOLD, PARSER, RIGHT_BRANCHING)

    @classmethod
    def check(cls, settings: Any, where: str) -> None:
        super().check(settings, where)
        if settings.task not in TASKS:
            raise ValueError(f"{where}: data.task={settings.task!r}: choose {' or '.join(TASKS)}")
        if settings.mix not in MIXES:
            raise ValueError(f"{where}: data.mix={settings.mix!r}: choose {' or '.join(MIXES)}")
        check_positive({"data.train_size": settings.train_size}, where)

    @property
    def splits(self) -> tuple[str, ...]:
        return MCCOY_LM_SPLITS

    @property
    def data(self) -> McCoyData:
        """The task's grammar and shared files."""
        return task_data(self.settings.task, self.settings.root)

    def pairs(self, split: str) -> list[Example]:
        """The pairs of a split: the generated training set, or a shared file."""
        if split not in self.splits:
            raise ValueError(f"split must be one of {', '.join(self.splits)}, not {split!r}")
        s = self.settings
        if split == "train":
            return training_set(self.data, s.train_size, s.train_seed, s.mix)
        return self.data.load_split(split)

    def read_split(self, split: str, whole_trees: bool) -> list[LabeledSentence]:
        """The split's strings, their gold trees beside them where ``data.trees`` is gold
        (only then: 100,000 trees take a while)."""
        gold = self.settings.trees == GOLD
        return [pair_string(self.data, example, gold) for example in self.pairs(split)]

    def made_trees(
        self, source: TreeSource, rows: Sequence[LabeledSentence], where: str
    ) -> list[Tree]:
        """A string's tree as its gold tree is built, from ``source``'s trees of its input
        sentence and its output, each made alone (a parser reads each as the sentence it
        is, not the two glued by a task word)."""
        task_words = self.data.task.task_words
        parts = []
        for k, row in enumerate(rows, start=1):
            at = next((i for i, w in enumerate(row.tokens) if w in task_words), None)
            if at is None or at == 0 or at == len(row.tokens) - 1:
                raise ValueError(
                    f"{where}: string {k} is not a sentence, a task word "
                    f"({' or '.join(task_words)}) and an output: {' '.join(row.tokens)!r}"
                )
            parts.append((row.tokens[:at], row.tokens[at], row.tokens[at + 1 :]))
        trees = sentence_trees(source, [p[0] for p in parts] + [p[2] for p in parts], where)
        n = len(parts)
        return [
            Tree(PAIR, [input_tree(trees[k], word), trees[n + k]])
            for k, (_, word, _) in enumerate(parts)
        ]

    def read_path(self, path: str | Path, whole_trees: bool) -> list[LabeledSentence]:
        """A file of ``input<TAB>output`` lines, as the shared splits are written."""
        gold = self.settings.trees == GOLD
        return [pair_string(self.data, example, gold) for example in self.data.read(path)]
