"""The words and trees of raw sentences, for syntax injected into a pretrained encoder
(``treeattn.models.syntax_injection``), which takes trees only.

>>> words, trees = sentence_trees(["Dogs bark (loudly)."], TreeSource("right-branching"))
>>> words
[['Dogs', 'bark', '-LRB-', 'loudly', '-RRB-', '.']]
"""

from __future__ import annotations

from collections.abc import Sequence

from treeattn.parsing.parser import Parser
from treeattn.parsing.tree_source import TreeSource
from treeattn.trees import Tree
from treeattn.trees.tokenize import tokenize


def sentence_trees(
    sentences: Sequence[str | Sequence[str]],
    source: Parser | TreeSource | None = None,
    where: str = "input",
) -> tuple[list[list[str]], list[Tree]]:
    """Each sentence's words (Penn Treebank tokens, brackets escaped as ``-LRB-``) and
    tree, whose leaves are those words.

    ``sentences``: raw strings, tokenized here as the parser tokenizes, or lists of words
    already tokenized. ``source``: a ``Parser`` (its trees), a ``TreeSource`` (a parser,
    right-branching trees, ...), default the shipped parser. ``where`` names the
    sentences in errors. ``Backbone.pieces`` takes the words as they are; for a
    ``transformers`` tokenizer, ``parsing.alignment.align_text`` reads the raw text.
    """
    raw = [isinstance(sentence, str) for sentence in sentences]
    if any(raw) and not all(raw):
        raise ValueError(f"{where}: give every sentence as a string, or every one as words")
    source = Parser.load() if source is None else source
    if isinstance(source, TreeSource):
        words = [tokenize(s) if isinstance(s, str) else list(s) for s in sentences]
        for number, sentence in enumerate(words, start=1):
            if not sentence:
                raise ValueError(f"{where}:{number}: empty sentence")
        trees = source.trees(words, where, progress=False)
    else:
        # Trees are what is asked for: raw text cut as the Penn Treebank, even by a parser
        # that also gives Universal Dependencies (whose default cut is EWT's).
        scheme = "tree" if source.constituency else None
        parsed = source.parse(sentences, where=where, dependencies=scheme)
        if any(p.tree is None for p in parsed):
            raise ValueError(f"{where}: a dependency-only parser gives no constituency trees")
        trees = [p.tree for p in parsed]
    return [tree.leaves() for tree in trees], trees
