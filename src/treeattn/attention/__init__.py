"""Attention mechanisms, each registered by name (see ``registry``)."""

from treeattn.attention import (  # noqa: F401  (register their names)
    constituent,
    distance,
    structured,
    tree_regularization,
    vanilla,
)
from treeattn.attention.registry import attention_names, build_attention, register_attention

__all__ = ["attention_names", "build_attention", "register_attention"]
