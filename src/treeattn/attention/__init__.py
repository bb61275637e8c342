"""Attention mechanisms, each registered by name where it is defined
(``treeattn.plugins.mechanisms``; ``registry`` says what a mechanism declares)."""

from treeattn.attention import (  # noqa: F401  (register their names)
    constituent,
    distance,
    structured,
    tree_regularization,
    vanilla,
)
from treeattn.attention.registry import build_attention

__all__ = ["build_attention"]
