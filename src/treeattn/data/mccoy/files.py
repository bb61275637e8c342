"""McCoy, Frank & Linzen's (2020) files: the grammars, the shared dev / test / gen splits,
and their bracket versions (``mccoy2020/`` in the data folder; its SOURCE.md).

A split is ``input<TAB>output`` lines, tokens separated by spaces: the input is the
declarative sentence (ending in ``.``) and the task word (``decl`` / ``quest``, ``PAST`` /
``PRESENT``); the output ends in ``.`` or ``?``. A bracket line writes the same words with
the grammar's unlabeled trees: ``[ [ [ my raven ] [ that [ doesn't sleep ] ] ] [ does change
] ] . ] quest<TAB>[ does [ ... change ] ] ?``; the words outside every bracket (the task
word, an output's final mark) hang from the line's top.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from treeattn.data.mccoy.grammar import Grammar
from treeattn.data.mccoy.sentences import Lexicon, Sentence, read_sentence
from treeattn.data.mccoy.transforms import TASKS, Task
from treeattn.data.paths import require_data
from treeattn.errors import FormatError
from treeattn.trees import Tree
from treeattn.utf8 import read_utf8

MCCOY_FOLDER = "mccoy2020"
MCCOY_SPLITS = ("dev", "test", "gen")
# The label of every node of a bracket file's tree, which has none.
UNLABELED = "X"


def mccoy_path(name: str, root: str | os.PathLike[str] | None = None) -> Path:
    """A file of ``mccoy2020/`` (``question.gen``, ``cfgs/tense.gr``); ``root``: the data
    folder or ``mccoy2020/`` itself, by default ``treeattn.data.paths.data_dir()``."""
    return require_data(MCCOY_FOLDER, *name.split("/"), root=root)


def split_file(task: str, split: str, brackets: bool = False) -> str:
    if task not in TASKS:
        raise ValueError(f"unknown McCoy task {task!r}; expected one of {', '.join(TASKS)}")
    if split not in MCCOY_SPLITS:
        raise ValueError(
            f"unknown McCoy split {split!r}; expected one of {', '.join(MCCOY_SPLITS)}"
        )
    return f"{task}{'_bracket' if brackets else ''}.{split}"


def read_rows(path: str | os.PathLike[str]) -> list[tuple[list[str], list[str]]]:
    """``(input tokens, output tokens)`` of each line of a split file."""
    rows = []
    lines = read_utf8(path).split("\n")
    if lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        source, tab, target = line.partition("\t")
        if not tab or not source.split() or not target.split():
            raise FormatError("expected 'input<TAB>output'", str(path), number)
        rows.append((source.split(), target.split()))
    return rows


def parse_brackets(tokens: list[str], where: str = "<string>", line: int | None = None) -> Tree:
    """The tree of ``[ a [ b c ] ] d``: every bracket a node labeled ``UNLABELED``, and the
    line's top-level items under one more such node."""
    stack: list[list[Tree | str]] = [[]]
    for token in tokens:
        if token == "[":
            stack.append([])
        elif token == "]":
            if len(stack) == 1 or not stack[-1]:
                raise FormatError("']' without an open, non-empty bracket", where, line)
            children = stack.pop()
            stack[-1].append(Tree(UNLABELED, children))
        else:
            stack[-1].append(token)
    if len(stack) != 1 or not stack[0]:
        raise FormatError("unclosed '[' or an empty line", where, line)
    return Tree(UNLABELED, stack[0])


def read_bracket_rows(path: str | os.PathLike[str]) -> list[tuple[Tree, Tree]]:
    """``(input tree, output tree)`` of each line of a bracket file."""
    return [
        (parse_brackets(source, str(path), k), parse_brackets(target, str(path), k))
        for k, (source, target) in enumerate(read_rows(path), start=1)
    ]


def unlabeled(tree: Tree) -> Tree:
    """``tree`` with every node labeled ``UNLABELED``, to compare with a bracket file's."""
    return Tree(UNLABELED, [unlabeled(c) if isinstance(c, Tree) else c for c in tree.children])


def input_tree(sentence_tree: Tree, task_word: str) -> Tree:
    """An input's tree: its sentence's, the task word beside it under ``TOP``, as the
    bracket files write inputs."""
    return Tree("TOP", [sentence_tree, task_word])


@dataclass(frozen=True)
class Example:
    """One pair: ``source`` the input tokens (the sentence, its ``.``, the task word),
    ``target`` the output tokens, ``sentence`` the input's sentence read by its grammar."""

    source: tuple[str, ...]
    target: tuple[str, ...]
    sentence: Sentence

    @property
    def task_word(self) -> str:
        return self.source[-1]

    @property
    def source_tree(self) -> Tree:
        """The grammar's tree of the input, the task word beside the sentence under
        ``TOP``, as the bracket files write inputs."""
        return input_tree(self.sentence.tree, self.task_word)


@dataclass(frozen=True)
class McCoyData:
    """A task (``question`` or ``tense``) with its grammar, read from the data folder."""

    task: Task
    grammar: Grammar
    lexicon: Lexicon
    root: str | None = None
    # The shared splits once read (generation reads them to exclude their sentences).
    _splits: dict[str, list[Example]] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def load(cls, name: str, root: str | os.PathLike[str] | None = None) -> McCoyData:
        if name not in TASKS:
            raise ValueError(f"unknown McCoy task {name!r}; expected one of {', '.join(TASKS)}")
        grammar = Grammar.read(mccoy_path(f"cfgs/{name}.gr", root))
        return cls(TASKS[name], grammar, Lexicon.of(grammar), None if root is None else str(root))

    def example(
        self, source: list[str], target: list[str] | None = None, where: str = "<string>"
    ) -> Example:
        """A pair from its input tokens (ending in a task word) and output tokens; without
        an output, the correct one (the hierarchical rule's)."""
        task_word = source[-1] if source else ""
        if task_word not in self.task.task_words:
            raise FormatError(
                f"the input ends in {task_word!r}, not a task word of {self.task.name} "
                f"({', '.join(self.task.task_words)})",
                where,
            )
        sentence = read_sentence(source[:-1], self.lexicon, where)
        if target is None:
            target = self.task.output(sentence, self.lexicon, task_word)
        return Example(tuple(source), tuple(target), sentence)

    def output_tree(self, example: Example) -> Tree:
        """The grammar's tree of the correct output, as the bracket files write outputs."""
        return self.task.output_tree(example.sentence, self.lexicon, example.task_word)

    def read(self, path: str | os.PathLike[str]) -> list[Example]:
        """The pairs of a file of ``input<TAB>output`` lines."""
        return [
            self.example(source, target, f"{path}:{k}")
            for k, (source, target) in enumerate(read_rows(path), start=1)
        ]

    def split_path(self, split: str, brackets: bool = False) -> Path:
        return mccoy_path(split_file(self.task.name, split, brackets), self.root)

    def load_split(self, split: str) -> list[Example]:
        """A shared split: ``dev``, ``test`` or ``gen`` (read once)."""
        if split not in self._splits:
            self._splits[split] = self.read(self.split_path(split))
        return list(self._splits[split])
