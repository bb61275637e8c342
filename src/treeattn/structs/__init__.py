"""Batched, length-masked dynamic programs over trees, in log space.

Every structure is a ``TreeDistribution`` (see ``base``): ``log_partition``, ``marginals``
(the gradient of log Z), ``max`` and ``argmax``. ``CKY`` scores labeled spans (binary
constituency trees); ``Eisner`` (projective) and ``MatrixTree`` (non-projective) score
dependency arcs, with ``chu_liu_edmonds`` for the best non-projective tree.
"""

from treeattn.structs.base import TreeDistribution
from treeattn.structs.cky import CKY, spans_tensor, spans_to_trees, tree_spans
from treeattn.structs.eisner import Eisner
from treeattn.structs.matrix_tree import MatrixTree
from treeattn.structs.mst import arcs_to_heads, best_heads, chu_liu_edmonds, heads_to_arcs

__all__ = [
    "CKY",
    "Eisner",
    "MatrixTree",
    "TreeDistribution",
    "arcs_to_heads",
    "best_heads",
    "chu_liu_edmonds",
    "heads_to_arcs",
    "spans_tensor",
    "spans_to_trees",
    "tree_spans",
]
