"""A mechanism that reads constituency trees, registered in this one file: each word's
vector is mixed with the mean of its ancestors' label embeddings, and inside a pretrained
encoder chosen heads attend less to words whose common ancestor lies higher in the tree.
It is here to show (and test) that a new mechanism, with everything it can do (a whole
encoder, an edit of a pretrained encoder's heads, what the viewer draws, its description),
needs no change anywhere else in the package (docs/MECHANISMS.md walks through it)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from treeattn import plugins
from treeattn.attention.head_edit import HeadEdit
from treeattn.attention.injection import SyntaxInjection, SyntaxInputs, word_values, words_to_pieces
from treeattn.attention.inspection import Captures, MechanismView, Panel, SentenceView
from treeattn.attention.registry import Capabilities, Reads
from treeattn.models.cross_attention import CrossAttention
from treeattn.models.inputs import EncoderInputs
from treeattn.models.registry import TOKENS, EncoderConfig, EncoderEntry, options_dataclass

NAME = "ancestor-mean"


class AncestorMeanEncoder(nn.Module):
    """Word ids, node label ids and their trees -> token states (B, n, d): each word's
    embedding beside the mean embedding of the phrase labels above it, mixed by a linear
    layer. ``scale`` multiplies the ancestors' part (an option, to show how options work).
    """

    cross_attention = CrossAttention  # a translation decoder reads its token states

    def __init__(
        self, vocab_size: int, node_vocab_size: int, d_model: int = 64, scale: float = 1.0
    ) -> None:
        super().__init__()
        self.d_model, self.scale = d_model, scale
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.node_embed = nn.Embedding(node_vocab_size, d_model, padding_idx=0)
        self.mix = nn.Linear(2 * d_model, d_model)

    def encode_inputs(self, inputs: EncoderInputs) -> torch.Tensor:
        paths = inputs.trees.paths  # (B, n, D) each word's ancestors, -1 past the root
        batch, n, depth = paths.shape
        nodes = self.node_embed(inputs.node_labels)  # (B, m, d)
        index = paths.clamp(min=0).reshape(batch, n * depth, 1).expand(-1, -1, self.d_model)
        above = nodes.gather(1, index).view(batch, n, depth, self.d_model)
        valid = (paths >= 0).unsqueeze(-1).to(above.dtype)
        mean = (above * valid).sum(2) / valid.sum(2).clamp(min=1)
        words = self.embed(inputs.tokens)
        return torch.tanh(self.mix(torch.cat([words, self.scale * mean], -1)))


def common_ancestor_heights(gaps: torch.Tensor) -> torch.Tensor:
    """(B, n-1) gap distances -> (B, n, n): for words i and j, the widest gap between them,
    the height of their lowest common ancestor in the binarized tree (0 on the diagonal)."""
    n = gaps.shape[1] + 1
    # heights[b, i, j] for j > i: the running maximum of gaps i..j-1, rightward from i.
    rows = gaps[:, None, :].expand(-1, n, -1)
    starts = torch.arange(n, device=gaps.device)[:, None] <= torch.arange(n - 1, device=gaps.device)
    upper = rows.masked_fill(~starts, 0).cummax(-1).values  # [b, i, k]: gaps i..k
    heights = torch.zeros(gaps.shape[0], n, n, dtype=gaps.dtype, device=gaps.device)
    heights[:, :, 1:] = upper
    heights = heights.triu(1)
    return heights + heights.mT


class AncestorInjection(SyntaxInjection):
    """The chosen heads' scores lose ``scale`` times the height of the two words' lowest
    common ancestor: words that meet lower in the tree attend more to each other."""

    name = NAME
    reads = frozenset({Reads.GAPS})

    def __init__(
        self,
        layers: Sequence[int],
        heads: Sequence[int],
        n_layers: int,
        n_heads: int,
        d_model: int,
        scale: float = 0.5,
    ) -> None:
        super().__init__(layers, heads, n_layers, n_heads, d_model)
        self.scale = float(scale)

    def prepare(self, gaps: torch.Tensor | None, inputs: SyntaxInputs) -> dict:
        words = -self.scale * common_ancestor_heights(gaps).to(torch.float32)
        return {
            "bias": words_to_pieces(words, inputs.word_of_piece, inputs.pad_mask, 0.0, -torch.inf)
        }

    def edit(self, layer: int, states: torch.Tensor, inputs: SyntaxInputs) -> HeadEdit:
        return HeadEdit(self.heads, bias=inputs.prepared["bias"])

    def inspect(self, edit: HeadEdit, first_piece: torch.Tensor) -> dict:
        return {"bias": word_values(edit.bias, first_piece)}


class AncestorView(MechanismView):
    """The bias of the chosen heads, one grid per layer that has it."""

    def panels(self, captured: Captures, sentence: SentenceView) -> list[Panel]:
        layers = [layer for layer, _ in captured]
        grids = [(-found["bias"][0]).clamp(max=10) / 10 for _, found in captured]
        words = sentence.words
        note = "how much the chosen heads' scores lose, in tenths (common ancestors' height)"
        return [Panel("ancestor bias", words, words, grids, note, layers=layers)]


def build(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> AncestorMeanEncoder:
    return AncestorMeanEncoder(vocab_size, node_vocab_size, m.d_model, **m.attention_options)


ENTRY = EncoderEntry(
    NAME,
    reads=frozenset({Reads.TREES}),
    module=AncestorMeanEncoder,
    options=options_dataclass(NAME, AncestorMeanEncoder),
    build=build,
    output=TOKENS,
    has_attention=False,
    capabilities=Capabilities(
        "each word beside the mean of its ancestors' labels",
        injection=AncestorInjection,
        view=AncestorView(),
    ),
)


def register() -> EncoderEntry:
    """Make the mechanism available as ``model.attention: ancestor-mean`` (a package would
    register it where it is defined, as treeattn's own do, or name ``ENTRY`` in its
    entry points: docs/guides/contributing.md)."""
    return plugins.mechanisms.register(ENTRY)
