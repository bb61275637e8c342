"""Mechanisms: what each one reads of a sentence, what it can do, and what it is.

A mechanism is one entry of the mechanisms registry (``treeattn.plugins.mechanisms``),
registered in its own file with one call, ``plugins.mechanisms.register(Mechanism(...))``.
It is an attention layer inside the Transformer encoder (``Mechanism.layer``), a whole
encoder (``models.registry.EncoderEntry``, a ``Mechanism`` that builds its own encoder),
or a training loss alone with no layer (tree regularization: ``Capabilities.loss``).

Every attention layer is an ``nn.Module`` built as ``cls(d_model, n_heads, dropout,
**options)`` whose ``forward(x, pad_mask, context)`` maps (B, n, d) to (B, n, d).
``context`` is a dict of the pass's extra tensors: the batch's inputs under their
``Reads`` key, and whatever a mechanism hands from one layer to the next; ``pad_mask`` is
(B, n), True at padding. The encoder sets ``context[LAYER]`` to the index of the layer
running (0 at the bottom), for mechanisms that act in some layers only.

Besides what it is, a mechanism declares what else it can do (``Capabilities``): its
one-line description, an edit of a pretrained encoder's heads (``inject_syntax``), what
the viewer captures and draws, the analyses that apply to it (``Analysis``, a kind of
plug-in of its own) and a loss. The demo, the viewer, the analyses and ``inject_syntax``
ask the registry and never name a mechanism.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection
from dataclasses import KW_ONLY, dataclass
from enum import Enum
from typing import Any

from torch import nn

from treeattn import plugins

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


@dataclass(frozen=True)
class Analysis:
    """A look inside trained models that applies to the mechanisms that declare it
    (``Capabilities.analyses``): its name is the command that runs it (``treeattn NAME``)."""

    name: str
    description: str


# The analyses of this package: attention over phrase nodes against words, latent
# dependency trees, induced constituency trees.
ATTENTION_SHARES, LATENT_TREES, INDUCED_TREES = "attention", "latent-trees", "induce"
plugins.analyses.register(
    Analysis(ATTENTION_SHARES, "how attention divides between phrase nodes and words")
)
plugins.analyses.register(Analysis(LATENT_TREES, "structured attention's latent dependency trees"))
plugins.analyses.register(Analysis(INDUCED_TREES, "trees read off the model, scored against gold"))


@dataclass(frozen=True)
class Capabilities:
    """What a mechanism can do besides being a layer or an encoder, each optional.

    ``description``: one line, for the demo and ``treeattn plugins``. ``latent``: it
    learns a structure of its own (the demo's "latent" trees). ``injection``: its edit of
    chosen heads of a pretrained encoder, a ``SyntaxInjection`` subclass
    (``attention.injection``). ``view``: what the viewer captures and draws, a
    ``MechanismView`` (``attention.inspection``). ``analyses``: the names of the
    registered analyses (``plugins.analyses``) that apply to its models. ``loss``: a loss
    on chosen layers' hidden states from each sentence's tree, added to a task's loss with
    a weight (a class shaped as ``attention.tree_loss.TreeLoss``). ``causal``: its layer
    honours ``context[CAUSAL]`` (no position sees a later one), so that a causal language
    model may use it.
    """

    description: str = ""
    latent: bool = False
    injection: Any = None
    view: Any = None
    analyses: frozenset[str] = frozenset()
    loss: Any = None
    causal: bool = False

    def __post_init__(self) -> None:
        known = plugins.analyses.names()
        unknown = set(self.analyses) - set(known)
        if unknown:
            raise ValueError(f"analyses {sorted(unknown)}: known are {', '.join(known)}")


@dataclass(frozen=True)
class Mechanism:
    """One mechanism: its ``name`` (a value of ``model.attention``, or of
    ``model.tree_loss`` for a loss), what it ``reads`` (its batches must carry them), what
    else it can do (``capabilities``), and ``layer``: the class of its attention layer
    inside the Transformer encoder (None for a whole encoder or a loss alone)."""

    name: str
    _: KW_ONLY
    reads: frozenset[Reads] = frozenset()
    capabilities: Capabilities = Capabilities()
    layer: type[nn.Module] | None = None


def loss_names() -> list[str]:
    """The mechanisms that are a training loss (``Capabilities.loss``), in the order
    registered."""
    return [m.name for m in plugins.mechanisms.entries() if m.capabilities.loss is not None]


def capabilities_of(module: nn.Module) -> Capabilities | None:
    """The capabilities of the mechanism whose layer ``module`` is (None for a module that
    is no registered mechanism's layer)."""
    for mechanism in plugins.mechanisms.entries():
        if mechanism.layer is not None and type(module) is mechanism.layer:
            return mechanism.capabilities
    return None


def build_attention(name: str, d_model: int, n_heads: int, dropout: float, **options) -> nn.Module:
    """The attention layer of the mechanism ``name``."""
    cls = plugins.mechanisms[name].layer
    if cls is None:
        raise ValueError(f"mechanism {name!r} has no attention layer")
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
