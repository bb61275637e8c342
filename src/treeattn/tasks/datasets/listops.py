"""Generated ListOps (Nangia and Bowman 2018): no files, ten classes (the digits)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treeattn import plugins
from treeattn.data.listops import (
    OPERATORS,
    ListOpsExample,
    check_operators,
    generate_listops,
    parse_expression,
    read_listops,
)
from treeattn.engine.config import check_positive
from treeattn.tasks.datasets.base import DataSet, SentenceSettings
from treeattn.tasks.sentences import LabeledSentence
from treeattn.trees import Tree


@dataclass
class ListOpsSettings(SentenceSettings):
    name: str = "listops"
    train_size: int = 6000
    dev_size: int = 1000
    test_size: int = 1000
    max_depth: int = 3
    max_args: int = 5
    max_length: int = 80
    # the operations drawn, e.g. [MAX, MIN, MED]; by default all four
    operators: list = field(default_factory=lambda: list(OPERATORS))


@plugins.datasets.register
class ListOps(DataSet):
    """Expressions drawn as the settings say; a file holds ``label<TAB>expression`` lines."""

    name = "listops"
    Settings = ListOpsSettings
    classes = tuple(str(k) for k in range(10))

    @classmethod
    def check(cls, settings: Any, where: str) -> None:
        super().check(settings, where)
        sizes = {f"data.{split}_size": getattr(settings, f"{split}_size") for split in SIZES}
        check_positive(sizes, where)
        try:
            check_operators(settings.operators)
        except ValueError as error:
            raise ValueError(f"{where}: data.operators: {error}") from None

    def read_split(self, split: str, whole_trees: bool) -> list[LabeledSentence]:
        return [_sentence(ex) for ex in _generated(self.settings, split)]

    def read_path(self, path: str | Path, whole_trees: bool) -> list[LabeledSentence]:
        return [_sentence(ex) for ex in read_listops(path)]

    def input_tree(self, line: str, where: str, number: int) -> Tree | None:
        """Every line is an expression."""
        return parse_expression(line.split(), where, number)


SIZES = ("train", "dev", "test")
# Each split has its own seed, so changing one size changes the others only through the
# expressions they must avoid.
SEEDS = {"train": 1000, "dev": 2000, "test": 3000}


def _sentence(example: ListOpsExample) -> LabeledSentence:
    return LabeledSentence(example.tokens, example.label, example.tree)


def _generated(settings: ListOpsSettings, split: str) -> list[ListOpsExample]:
    """One split; dev holds no training expression, test none of either."""
    seen: set[str] = set()
    for name in SIZES:
        examples = generate_listops(
            getattr(settings, f"{name}_size"),
            SEEDS[name],
            settings.max_depth,
            settings.max_args,
            max_length=settings.max_length,
            exclude=seen,
            operators=settings.operators,
        )
        if name == split:
            return examples
        seen.update(" ".join(ex.tokens) for ex in examples)
    raise AssertionError(split)
