"""Models: encoder stacks, task heads. The whole encoders register their names here
(``registry``), beside the attention mechanisms of ``treeattn.attention``."""

from treeattn.models import hierarchical, tree_lstm  # noqa: F401  (register their names)
