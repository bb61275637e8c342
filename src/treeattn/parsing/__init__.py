"""The parser as a product: ``Parser.load().parse(sentences)``, and the tree source that
gives every other model the trees of its sentences.

The parser stands alone (nothing here reads the task layer; ``treeattn.tasks.parse`` trains
one): ``config`` its settings, ``vocab`` its vocabularies and label sets, ``examples`` its
sentences, ``network`` (over ``partitioned``) the network, ``encoding`` sentences as
batches, ``decoding`` scores as trees, and ``parser`` the files it is saved in and read
from.
"""

from treeattn.parsing.parser import Parse, Parser

__all__ = ["Parse", "Parser"]
