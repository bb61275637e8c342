"""What the viewer reads of a mechanism and draws: a mechanism's ``MechanismView``.

``treeattn view`` (``analysis.view``) runs a trained model on one sentence with a forward
hook on every attention layer. Each hook asks the layer's mechanism for the layer's
attention probabilities (``attention``) and for what else its paper looks at
(``capture``: links, a gate, marginals...); a pretrained encoder's injected heads give the
same things through their injection's ``inspect``. Once the pass is done, the mechanism
turns what was captured into panels (``panels``), a tree of its own where it induces one
(``tree``), and its latent trees per head (``latent``). The viewer draws them and knows no
mechanism by name.

Captured values are batch-first tensors (B, ...), as the layer saw them; the viewer keeps
the first sentence of its batch of one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from treeattn.trees import Tree

# What one layer left: its index among the page's layers, and its mechanism's captures.
Captures = list[tuple[int, dict[str, Any]]]


@dataclass(frozen=True)
class Panel:
    """A grid the page draws beside the attention: ``values`` one (rows x cols) tensor, or
    a list of them, one per layer (then the layer slider picks; ``layers`` are the page's
    layers they belong to, by default the first ones); colours from 0 to 1, or with
    ``relative`` to the grid's largest value."""

    title: str
    rows: Sequence[str]
    cols: Sequence[str]
    values: Tensor | list[Tensor]
    note: str = ""
    relative: bool = False
    layers: Sequence[int] | None = None


@dataclass(frozen=True)
class SentenceView:
    """One sentence as the page shows it: its ``words``, the page's ``layer_names``, how
    many ``heads`` of each layer it shows, how many of its first layers are a pretrained
    backbone's (``backbone_layers``), how many phrase nodes the model reads (``nodes``,
    for an encoder that attends over them), and each layer's ``attention`` (H, q, k)."""

    words: list[str]
    layer_names: list[str]
    heads: int
    backbone_layers: int = 0
    nodes: int = 0
    attention: Sequence[Tensor] = ()

    @property
    def top_layers(self) -> list[int]:
        """The page's indices of the model's own layers (above a backbone)."""
        return list(range(self.backbone_layers, len(self.layer_names)))


class MechanismView:
    """What the viewer captures of a mechanism's layers and draws; every method has a
    default, so that a mechanism overrides only what its paper looks at."""

    # Whether the page draws the tree the model induced (``tree``) rather than a parser's
    # where a sentence comes without one.
    draws_own_tree = False

    def capture(self, module: nn.Module, x: Tensor, pad_mask: Tensor, context: dict) -> dict:
        """What the page and the analyses read of this layer's pass besides its attention
        (batch-first tensors), from its input ``x`` (B, n, d), ``pad_mask`` (B, n) and the
        pass's ``context`` as the layer left it."""
        return {}

    def attention(
        self, module: nn.Module, x: Tensor, pad_mask: Tensor, context: dict, captured: dict
    ) -> Tensor:
        """(B, H, n, n) the probabilities the layer mixed values with in this pass
        (``captured``: what ``capture`` just read of it)."""
        return module.attention_weights(x, pad_mask, context)

    def encoder_attention(
        self, encoder: nn.Module, inputs: Any, words: Callable[[], Tensor | None]
    ) -> list[Tensor] | None:
        """For a whole encoder that returns its weights itself: each layer's (B, H, q, k)
        for a typed batch (``words()``: a backbone's word vectors, or None); None where the
        viewer hooks the encoder's attention layers instead."""
        return None

    def panels(self, captured: Captures, sentence: SentenceView) -> list[Panel]:
        """The panels of what the mechanism's paper looks at, for one sentence."""
        return []

    def tree(self, captured: Captures, words: Sequence[str]) -> Tree | None:
        """A tree the model induced over ``words``, drawn where the sentence has none."""
        return None

    def latent(self, captured: Captures, heads: int) -> list[list[list[int]]]:
        """Per captured layer, the first ``heads`` heads' latent dependency trees (each word's
        head, 0 the root)."""
        return []


def head_numbers(indices: Sequence[int]) -> str:
    """0-based indices as the page counts them: "1-3" for a run, else "2, 4"."""
    shown = [i + 1 for i in indices]
    if len(shown) > 1 and shown == list(range(shown[0], shown[-1] + 1)):
        return f"{shown[0]}-{shown[-1]}"
    return ", ".join(map(str, shown))
