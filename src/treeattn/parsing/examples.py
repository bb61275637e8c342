"""The parser's sentences: words and tags with their gold trees, from a treebank tree or a
CoNLL-U tree."""

from __future__ import annotations

from dataclasses import dataclass

from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree
from treeattn.trees.head_rules import to_dependency


@dataclass
class ParseExample:
    """A sentence with its gold trees (``tree`` None for dependency-only data; both None
    for a sentence to parse, whose tags are ``_``)."""

    words: list[str]
    tags: list[str]
    tree: Tree | None = None
    dependencies: DependencyTree | None = None


def ptb_example(tree: Tree, source: str, line: int) -> ParseExample:
    """A cleaned PTB tree as a parser example; its dependencies from head rules."""
    dependencies = to_dependency(tree, source=f"{source}:{line}")
    return ParseExample(tree.leaves(), tree.tags(), tree, dependencies)


def ud_example(tree: DependencyTree) -> ParseExample:
    """A CoNLL-U tree as a parser example; its UPOS as the tags."""
    return ParseExample(list(tree.words), list(tree.upos), None, tree)


def unparsed_example(words: list[str]) -> ParseExample:
    """Words to parse: no tags, no trees."""
    return ParseExample(words, ["_"] * len(words))
