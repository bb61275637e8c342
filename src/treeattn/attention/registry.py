"""Attention mechanisms by name, each with what it reads of a sentence besides its tokens.

Every mechanism is an ``nn.Module`` built as ``cls(d_model, n_heads, dropout, **options)``
whose ``forward(x, pad_mask, context)`` maps (B, n, d) to (B, n, d). ``context`` is a dict
of the pass's extra tensors: the batch's inputs under their ``Reads`` key, and whatever a
mechanism hands from one layer to the next; ``pad_mask`` is (B, n), True at padding. The
encoder sets ``context[LAYER]`` to the index of the layer running (0 at the bottom), for
mechanisms that act in some layers only.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection
from enum import Enum

from torch import nn

LAYER = "layer"


class Reads(str, Enum):
    """What a mechanism reads of a sentence besides its tokens. Each is also the key of its
    batch tensor in an encoder pass's context."""

    GAPS = "gap_distances"  # (B, n-1) syntactic distance of each gap between tokens
    TREES = "trees"  # the constituency tree: leaves, phrase nodes and their labels
    BINARY_TREES = "binary_trees"  # the same, binarized first
    PIECES = "pieces"  # the words as a pretrained encoder's pieces (models.pretrained)

    def __str__(self) -> str:
        return self.value


_MECHANISMS: dict[str, type[nn.Module]] = {}
_READS: dict[str, frozenset[Reads]] = {}


def register_attention(
    name: str, reads: Reads | Collection[Reads] = ()
) -> Callable[[type[nn.Module]], type[nn.Module]]:
    """Make a mechanism available as ``model.attention: <name>``; ``reads`` declares the
    inputs its batches must carry (usable as a class decorator)."""

    def decorator(cls: type[nn.Module]) -> type[nn.Module]:
        if name in _MECHANISMS:
            raise ValueError(f"attention mechanism {name!r} is already registered")
        _MECHANISMS[name] = cls
        _READS[name] = frozenset([reads] if isinstance(reads, Reads) else reads)
        return cls

    return decorator


def attention_names() -> list[str]:
    return list(_MECHANISMS)


def attention_class(name: str) -> type[nn.Module]:
    if name not in _MECHANISMS:
        known = ", ".join(sorted(_MECHANISMS))
        raise KeyError(f"unknown attention mechanism {name!r}; known: {known}")
    return _MECHANISMS[name]


def attention_reads(name: str) -> frozenset[Reads]:
    attention_class(name)
    return _READS[name]


def build_attention(name: str, d_model: int, n_heads: int, dropout: float, **options) -> nn.Module:
    cls = attention_class(name)
    try:
        return cls(d_model, n_heads, dropout, **options)
    except TypeError as error:  # an option the mechanism does not take
        raise ValueError(f"attention mechanism {name!r}: {error}") from None


def keyword_options(cls: type, sizes: Collection[str]) -> list[inspect.Parameter]:
    """The keyword parameters of ``cls(...)`` that are options: all but those named in
    ``sizes`` (which the model section sets) and the positional-only ones."""
    parameters = inspect.signature(cls).parameters.values()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in parameters if p.kind in kinds and p.name not in sizes]
