"""Attention mechanisms, each registered by name (see ``registry``)."""

from treeattn.attention import constituent, structured, vanilla  # noqa: F401  (register their names)
from treeattn.attention.registry import attention_names, build_attention, register_attention

__all__ = ["attention_names", "build_attention", "register_attention"]
