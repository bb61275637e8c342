"""Attention mechanisms by name.

Every mechanism is an ``nn.Module`` built as ``cls(d_model, n_heads, dropout, **options)``
whose ``forward(x, pad_mask, context)`` maps (B, n, d) to (B, n, d). ``context`` is a dict
of extra batch tensors (trees, distances, ...) that a mechanism may need; ``pad_mask`` is
(B, n), True at padding. The encoder sets ``context[LAYER]`` to the index of the layer
running (0 at the bottom), for mechanisms that act in some layers only.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from torch import nn

LAYER = "layer"

_MECHANISMS: dict[str, type[nn.Module]] = {}


def register_attention(name: str) -> Callable[[type[nn.Module]], type[nn.Module]]:
    def decorator(cls: type[nn.Module]) -> type[nn.Module]:
        if name in _MECHANISMS:
            raise ValueError(f"attention mechanism {name!r} is already registered")
        _MECHANISMS[name] = cls
        return cls

    return decorator


def attention_names() -> list[str]:
    return list(_MECHANISMS)


def build_attention(name: str, d_model: int, n_heads: int, dropout: float, **options) -> nn.Module:
    if name not in _MECHANISMS:
        known = ", ".join(sorted(_MECHANISMS))
        raise KeyError(f"unknown attention mechanism {name!r}; known: {known}")
    try:
        return _MECHANISMS[name](d_model, n_heads, dropout, **options)
    except TypeError as error:  # an option the mechanism does not take
        raise ValueError(f"attention mechanism {name!r}: {error}") from None


def attention_options(name: str) -> list[str]:
    """The options (keyword arguments beyond d_model, n_heads, dropout) of a mechanism."""
    if name not in _MECHANISMS:
        raise KeyError(f"unknown attention mechanism {name!r}")
    return constructor_options(_MECHANISMS[name], skip=3)


def constructor_options(cls: type, skip: int = 0) -> list[str]:
    """Keyword names of ``cls(...)`` after its first ``skip`` parameters."""
    parameters = list(inspect.signature(cls).parameters.values())[skip:]
    return [p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
