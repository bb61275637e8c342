"""The parser as a product: ``Parser.load().parse(sentences)``, and the tree source that
gives every other model the trees of its sentences."""

from treeattn.parsing.parser import Parse, Parser

__all__ = ["Parse", "Parser"]
