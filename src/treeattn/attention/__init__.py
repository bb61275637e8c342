"""Attention mechanisms, each registered by name where it is defined
(``treeattn.plugins.mechanisms``; ``registry`` says what a mechanism declares)."""

# isort: off
# In the order they are listed (the demo's table, `treeattn plugins`): the baseline first.
from treeattn.attention import (  # noqa: F401  (register their names)
    vanilla,
    constituent,
    distance,
    structured,
    tree_regularization,
)

# isort: on
from treeattn.attention.registry import build_attention

__all__ = ["build_attention"]
