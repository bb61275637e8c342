"""Argument types and options that several commands share."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treeattn.engine.task import Task


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def add_overrides(p: argparse.ArgumentParser, scope: str = "") -> None:
    """``--set KEY=VALUE``, repeatable: config values over the file's."""
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a config value{scope}, e.g. --set train.lr=3e-4 (repeatable)",
    )


# The kinds of tree source a command may name (``treeattn.parsing.tree_source.KINDS``
# but files, which a command names by the file); written out so that --help need not load
# torch. A test holds them to the tree source's.
TREE_KINDS = ("gold", "parser", "right-branching")


def add_tree_options(p: argparse.ArgumentParser, files: str = "") -> None:
    """``--trees KIND`` and ``--parser MODEL``, the trees a model that reads them gets
    (``use_tree_options``); ``files``, where the command also reads a FILE of trees, says
    what it holds."""
    kinds = ", ".join(TREE_KINDS)
    p.add_argument(
        "--trees",
        metavar="KIND|FILE" if files else "KIND",
        choices=None if files else TREE_KINDS,
        help=f"read these trees, whichever the model trained on: {kinds} (each data set "
        "has the kinds that fit it)" + (f", or a FILE: {files}" if files else ""),
    )
    p.add_argument(
        "--parser",
        metavar="MODEL",
        help="the parser: accurate, fast or accurate-ptb (shipped) or a parser file. A model "
        "trained on a "
        "parser's trees reads that parser's (this says where it lies now; another is "
        "refused unless --trees parser); a model trained on gold trees parses raw text "
        "with it (default: the model's data.parser)",
    )


def use_tree_options(task: Task, trees: str | None, parser: str | None) -> None:
    """Give ``task`` the trees ``--trees`` and ``--parser`` ask for, if any (``trees``: a
    kind or a file); a task whose model reads no trees refuses them."""
    if trees is not None or parser is not None:
        task.use_trees(trees, parser)
