"""The parser's sentences: words and tags with their gold trees, from a treebank tree or a
CoNLL-U tree."""

from __future__ import annotations

from dataclasses import dataclass

from treeattn.trees import Tree
from treeattn.trees.dependency import DependencyTree
from treeattn.trees.head_rules import to_dependency
from treeattn.trees.labels import wsj_convention
from treeattn.trees.tokenize import escape


@dataclass
class ParseExample:
    """A sentence with its gold trees (``tree`` None for dependency-only data; both None
    for a sentence to parse, whose tags are ``_``)."""

    words: list[str]
    tags: list[str]
    tree: Tree | None = None
    dependencies: DependencyTree | None = None


def ptb_example(tree: Tree, source: str, line: int, dependencies: bool = True) -> ParseExample:
    """A cleaned PTB tree as a parser example; its dependencies from head rules, or none
    (``dependencies=False``: in joint training the arcs are learned from UD alone)."""
    converted = to_dependency(tree, source=f"{source}:{line}") if dependencies else None
    return ParseExample(tree.leaves(), tree.tags(), tree, converted)


def ud_example(tree: DependencyTree) -> ParseExample:
    """A CoNLL-U tree as a parser example; its UPOS as the tags."""
    return ParseExample(list(tree.words), list(tree.upos), None, tree)


def ud_ptb_example(tree: DependencyTree, where: str = "CoNLL-U") -> ParseExample:
    """A CoNLL-U tree as an example of joint training beside Penn Treebank trees: its
    XPOS (Penn Treebank tags in EWT) as the tags, written as the WSJ writes the same uses
    where the two disagree (``wsj_convention``: a tagger learns one tag for one use), and
    its words with brackets written as the Penn Treebank writes them (``-LRB-``), so that
    both treebanks' words and tags share one vocabulary, as raw text reaches the parser
    (``Parser.words`` escapes them too). The tree keeps EWT's own XPOS."""
    if any(tag == "_" for tag in tree.xpos):
        sentence = tree.metadata.get("sent_id") or " ".join(tree.words[:6])
        raise ValueError(
            f"{where}: sentence {sentence!r} has words without XPOS; joint training reads them"
        )
    return ParseExample(escape(tree.words), wsj_convention(tree.words, tree.xpos), None, tree)


def unparsed_example(words: list[str]) -> ParseExample:
    """Words to parse: no tags, no trees."""
    return ParseExample(words, ["_"] * len(words))
