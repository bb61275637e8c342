"""Attention mechanisms by name, each with what it reads of a sentence besides its tokens.

Every mechanism is an ``nn.Module`` built as ``cls(d_model, n_heads, dropout, **options)``
whose ``forward(x, pad_mask, context)`` maps (B, n, d) to (B, n, d). ``context`` is a dict
of the pass's extra tensors: the batch's inputs under their ``Reads`` key, and whatever a
mechanism hands from one layer to the next; ``pad_mask`` is (B, n), True at padding. The
encoder sets ``context[LAYER]`` to the index of the layer running (0 at the bottom), for
mechanisms that act in some layers only.

Besides its layer, a mechanism declares what else it can do (``Capabilities``): its
one-line description, an edit of a pretrained encoder's heads (``inject_syntax``), what
the viewer captures and draws, and the analyses that apply to it. The demo, the viewer,
the analyses and ``inject_syntax`` ask the registry and never name a mechanism. A
mechanism that is a training loss alone, with no layer (tree regularization), declares
its capabilities by name (``declare_capabilities``) with a ``loss``; ``loss_names``
lists those.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection
from dataclasses import dataclass
from enum import Enum
from typing import Any

from torch import nn

LAYER = "layer"
# Context key: True in a causal language model's passes, where no position may see a
# later one; only a mechanism that declares ``Capabilities.causal`` reads it.
CAUSAL = "causal"


class Reads(str, Enum):
    """What a mechanism reads of a sentence besides its tokens. Each is also the key of its
    batch tensor in an encoder pass's context."""

    GAPS = "gap_distances"  # (B, n-1) syntactic distance of each gap between tokens
    TREES = "trees"  # the constituency tree: leaves, phrase nodes and their labels
    BINARY_TREES = "binary_trees"  # the same, binarized first
    PIECES = "pieces"  # the words as a pretrained encoder's pieces (models.pretrained)

    def __str__(self) -> str:
        return self.value


# The analyses a mechanism may declare (``Capabilities.analyses``), by the command that runs
# each: attention over phrase nodes against words, latent dependency trees, induced
# constituency trees.
ATTENTION_SHARES = "attention"
LATENT_TREES = "latent-trees"
INDUCED_TREES = "induce"
ANALYSES = (ATTENTION_SHARES, LATENT_TREES, INDUCED_TREES)


@dataclass(frozen=True)
class Capabilities:
    """What a mechanism can do besides being a layer or an encoder, each optional.

    ``description``: one line, for the demo and ``treeattn mechanisms``. ``latent``: it
    learns a structure of its own (the demo's "latent" trees). ``injection``: its edit of
    chosen heads of a pretrained encoder, a ``SyntaxInjection`` subclass
    (``attention.injection``). ``view``: what the viewer captures and draws, a
    ``MechanismView`` (``attention.inspection``). ``analyses``: the names in ``ANALYSES``
    that apply to its models. ``loss``: a loss on chosen layers' hidden states from each
    sentence's tree, added to a task's loss with a weight (a class shaped as
    ``attention.tree_loss.TreeLoss``). ``causal``: its layer honours ``context[CAUSAL]`` (no
    position sees a later one), so that a causal language model may use it.
    """

    description: str = ""
    latent: bool = False
    injection: Any = None
    view: Any = None
    analyses: frozenset[str] = frozenset()
    loss: Any = None
    causal: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.analyses) - set(ANALYSES)
        if unknown:
            raise ValueError(f"analyses {sorted(unknown)}: known are {', '.join(ANALYSES)}")


_MECHANISMS: dict[str, type[nn.Module]] = {}
_READS: dict[str, frozenset[Reads]] = {}
_CAPABILITIES: dict[str, Capabilities] = {}


def register_attention(
    name: str,
    reads: Reads | Collection[Reads] = (),
    capabilities: Capabilities = Capabilities(),
) -> Callable[[type[nn.Module]], type[nn.Module]]:
    """Make a mechanism available as ``model.attention: <name>``; ``reads`` declares the
    inputs its batches must carry, ``capabilities`` what else it can do (usable as a class
    decorator)."""

    def decorator(cls: type[nn.Module]) -> type[nn.Module]:
        if name in _MECHANISMS:
            raise ValueError(f"attention mechanism {name!r} is already registered")
        _MECHANISMS[name] = cls
        _READS[name] = frozenset([reads] if isinstance(reads, Reads) else reads)
        _CAPABILITIES[name] = capabilities
        return cls

    return decorator


def unregister(name: str) -> None:
    """Forget the mechanism ``name`` (one registered for a while, by a test or a plug-in)."""
    for table in (_MECHANISMS, _READS, _CAPABILITIES):
        table.pop(name, None)


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


def declare_capabilities(name: str, capabilities: Capabilities) -> None:
    """Record what a mechanism that is no attention layer can do, beside the attention
    mechanisms' own: a whole encoder (``models.registry.register_encoder``) or a loss."""
    if name in _CAPABILITIES:
        raise ValueError(f"a mechanism named {name!r} is already registered")
    _CAPABILITIES[name] = capabilities


def mechanism_capabilities(name: str) -> Capabilities:
    """What the mechanism ``name`` (an attention mechanism or a whole encoder) can do."""
    if name not in _CAPABILITIES:
        known = ", ".join(sorted(_CAPABILITIES))
        raise KeyError(f"unknown mechanism {name!r}; known: {known}")
    return _CAPABILITIES[name]


def loss_names() -> list[str]:
    """The mechanisms that are a training loss (``Capabilities.loss``), in the order
    registered."""
    return [name for name, found in _CAPABILITIES.items() if found.loss is not None]


def capabilities_of(module: nn.Module) -> Capabilities | None:
    """The capabilities of the mechanism whose layer ``module`` is (None for a module that
    is no registered mechanism's layer)."""
    for name, cls in _MECHANISMS.items():
        if type(module) is cls:
            return _CAPABILITIES[name]
    return None


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
