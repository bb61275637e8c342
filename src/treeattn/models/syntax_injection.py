"""Syntax inside a pretrained BERT-family encoder's attention.

``inject_syntax(model, mechanism, layers=..., heads=...)`` changes chosen heads of chosen
layers of ``model`` (this package's ``BertEncoder``, or a ``transformers`` BERT-family
model) and returns a ``SyntaxInjection``; per batch, ``injection.inputs(trees,
word_of_piece, pad_mask)`` turns the batch's trees into what the model reads through its
``syntax=`` keyword. Called without it, the model is the plain one.

Two mechanisms, each as in its from-scratch module, on words, then mapped to pieces:

- ``distance`` (Hou et al. 2022, ``attention/distance.py``): each chosen head keeps to the
  query word's syntactic local range (``gate="hard"``) or is weighted by the soft gate
  (``gate="soft"``, temperature ``tau``). The word-level log gate comes from
  ``local_bias`` and is added to the scores. No new parameters.
- ``constituent`` (Wang et al. 2019, ``attention/constituent.py``): each chosen layer
  scores the links between neighbouring words (``neighbour_links``) from the first piece
  of each word in its input states, links only grow from one chosen layer to the next
  (``hierarchical_links``; the lowest chosen layer starts from none), and the prior
  ``constituent_prior`` multiplies the chosen heads' probabilities, not renormalised. The
  link module (two d x d maps per chosen layer) is the one new part; it is a submodule of
  the model, so it trains with it.

From words to pieces: a piece takes its word's row and column, so every piece of a word
has the word's range (and the pieces of one word see each other: gate 1, prior
``C[w, w] = 1``). ``[CLS]``, ``[SEP]`` and any other piece of no word see every piece and
are seen by every piece (bias 0, prior 1): pretrained heads park attention there, and a
local head keeps that option. Padded keys stay shut; padded queries see every real key.

On a ``transformers`` model the attention function registered as ``treeattn_syntax``
(``transformers.AttentionInterface``) is selected with ``model.set_attn_implementation``;
the ``syntax`` keyword reaches every layer through the model's keyword arguments, and a
forward pre-hook on each chosen layer's self-attention turns it into that layer's
``HeadEdit``. Layers and heads not chosen run ``transformers``' own SDPA attention.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from treeattn.attention.constituent import (
    constituent_prior,
    hierarchical_links,
    neighbour_links,
)
from treeattn.attention.distance import GATES, local_bias
from treeattn.models.backbone import BertEncoder, first_pieces
from treeattn.models.head_edit import HeadEdit, edited_attention
from treeattn.trees import Tree
from treeattn.trees.distance import gap_distances

MECHANISMS = ("distance", "constituent")
IMPLEMENTATION = "treeattn_syntax"  # the name registered with transformers
SYNTAX = "syntax"  # the keyword a model is called with
_EDIT = "treeattn_head_edit"  # the keyword the pre-hook hands the attention function


def words_to_pieces(
    word_values: Tensor,
    word_of_piece: Tensor,
    pad_mask: Tensor,
    open_value: float,
    shut_value: float,
) -> Tensor:
    """Word-pair values (B, n, n) as piece-pair values (B, 1, p, p).

    Pieces i and j take ``word_values[w(i), w(j)]`` (``word_of_piece`` (B, p): each
    piece's word, -1 for special pieces and padding); a row or column of a special piece
    takes ``open_value``, and a padded key ``shut_value``.
    """
    n, length = word_values.shape[-1], word_of_piece.shape[1]
    owner = word_of_piece.clamp(min=0)  # special pieces read word 0, overwritten below
    rows = word_values.gather(1, owner[:, :, None].expand(-1, -1, n))
    values = rows.gather(2, owner[:, None, :].expand(-1, length, -1))
    in_word = word_of_piece >= 0
    values = values.masked_fill(~(in_word[:, :, None] & in_word[:, None, :]), open_value)
    return values.masked_fill(pad_mask[:, None, :], shut_value)[:, None]


def as_word_of_piece(word_ids: Tensor | Sequence[Sequence[int | None]]) -> Tensor:
    """Each piece's word as a (B, p) tensor, -1 for special pieces and padding, from a
    tensor or from lists such as a ``transformers`` encoding's ``word_ids(i)`` (None for
    special pieces; shorter lists are padded)."""
    if isinstance(word_ids, Tensor):
        return word_ids.long()
    width = max(len(row) for row in word_ids)
    return torch.tensor(
        [[-1 if w is None else w for w in row] + [-1] * (width - len(row)) for row in word_ids]
    )


class SyntaxInputs:
    """One batch's syntax for one injection, made by ``SyntaxInjection.inputs``: what a
    model reads through its ``syntax=`` keyword. Called as ``(layer, states)`` it gives
    the layer's ``HeadEdit``, or None for a layer not chosen. After a pass of the
    constituent mechanism, ``links`` (B, n-1) holds the highest chosen layer's links
    between neighbouring words: ``tree_from_distances(words, 1 - links)`` splits each
    sentence at its weakest link first."""

    def __init__(
        self,
        injection: SyntaxInjection,
        word_of_piece: Tensor,
        pad_mask: Tensor,
        word_lengths: Tensor,
        bias: Tensor | None,
    ) -> None:
        self.injection = injection
        self.word_of_piece, self.pad_mask, self.word_lengths = word_of_piece, pad_mask, word_lengths
        self.bias = bias  # distance: (B, 1, p, p), the same in every chosen layer
        self.first_piece = first_pieces(word_of_piece, int(word_lengths.max()))
        self.links: Tensor | None = None  # constituent: the last chosen layer's, this pass

    def __call__(self, layer: int, states: Tensor) -> HeadEdit | None:
        return self.injection.edit(layer, states, self)


class LinkScorer(nn.Module):
    """The Tree Transformer's neighbouring attention for one layer: its own query and key
    maps (d to d) of the word states, giving the links between neighbouring words."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.link_query = nn.Linear(d_model, d_model)
        self.link_key = nn.Linear(d_model, d_model)

    def forward(self, words: Tensor, lengths: Tensor) -> Tensor:
        """words (B, n, d), lengths (B,) -> the new links ``a_hat`` (B, n-1)."""
        return neighbour_links(self.link_query(words), self.link_key(words), lengths)


class SyntaxInjection(nn.Module):
    """Which heads of which layers take syntax, and how (see the module's docstring).

    ``layers``: layer indices, bottom layer 0; ``heads``: head indices, the same in every
    chosen layer. ``gate`` and ``tau``: the distance mechanism's gate. ``d_model``: the
    encoder's size, for the constituent mechanism's link modules.
    """

    def __init__(
        self,
        mechanism: str,
        layers: Sequence[int],
        heads: Sequence[int],
        n_layers: int,
        n_heads: int,
        d_model: int,
        gate: str = "hard",
        tau: float = 1.0,
    ) -> None:
        super().__init__()
        if mechanism not in MECHANISMS:
            raise ValueError(f"mechanism {mechanism!r}: expected one of {MECHANISMS}")
        if gate not in GATES:
            raise ValueError(f"gate {gate!r}: expected one of {GATES}")
        if not tau > 0:
            raise ValueError(f"tau must be positive, got {tau}")
        self.layers = _indices(layers, n_layers, "layers")
        self.heads = _indices(heads, n_heads, "heads")
        self.mechanism, self.gate, self.tau = mechanism, gate, float(tau)
        self.links = nn.ModuleDict(
            {str(layer): LinkScorer(d_model) for layer in self.layers}
            if mechanism == "constituent"
            else {}
        )
        self._undo: list[Callable[[], Any]] = []  # what ``remove`` runs

    def inputs(
        self,
        trees: Sequence[Tree] | None,
        word_of_piece: Tensor | Sequence[Sequence[int | None]],
        pad_mask: Tensor,
    ) -> SyntaxInputs:
        """A batch's syntax: one tree per sentence (the constituent mechanism induces its
        own and takes None), ``word_of_piece`` (B, p) the word of each piece (-1 or None
        for ``[CLS]``, ``[SEP]`` and padding), ``pad_mask`` (B, p) True at padding. Each
        sentence's pieces must cover its tree's words."""
        word_of_piece = as_word_of_piece(word_of_piece).to(pad_mask.device)
        if word_of_piece.shape != pad_mask.shape:
            raise ValueError(
                f"word_of_piece {tuple(word_of_piece.shape)} and pad_mask "
                f"{tuple(pad_mask.shape)}: expected two (B, p) tensors"
            )
        covered = (word_of_piece.max(1).values + 1).tolist()
        if min(covered) < 1:
            raise ValueError("a sentence of the batch has no piece that belongs to a word")
        if trees is None and self.mechanism == "distance":
            raise ValueError("the distance mechanism needs the batch's trees")
        lengths = covered if trees is None else [len(tree.leaves()) for tree in trees]
        if len(lengths) != len(covered):
            raise ValueError(f"{len(lengths)} trees for a batch of {len(covered)} sentences")
        for index, (n, found) in enumerate(zip(lengths, covered, strict=True)):
            if n != found:
                raise ValueError(
                    f"sentence {index + 1}: its tree has {n} words but its pieces belong to {found}"
                )
        word_lengths = torch.tensor(lengths, device=pad_mask.device)
        gaps = None
        if trees is not None and self.mechanism == "distance":
            gaps = torch.zeros(len(trees), max(lengths) - 1, dtype=torch.long)
            for row, tree in enumerate(trees):  # per sentence, once per batch
                gaps[row, : lengths[row] - 1] = torch.tensor(gap_distances([tree]))
        return self.gap_inputs(gaps, word_of_piece, pad_mask, word_lengths)

    def gap_inputs(
        self,
        gaps: Tensor | None,
        word_of_piece: Tensor,
        pad_mask: Tensor,
        word_lengths: Tensor,
    ) -> SyntaxInputs:
        """``inputs`` from the trees' gap distances (B, n-1) already made (None for the
        constituent mechanism), as a data pipeline batches them; ``word_lengths`` (B,)."""
        bias = None
        if self.mechanism == "distance":
            if gaps is None:
                raise ValueError("the distance mechanism needs the batch's gap distances")
            words = local_bias(gaps.to(pad_mask.device), self.gate, self.tau)
            bias = words_to_pieces(words, word_of_piece, pad_mask, 0.0, -torch.inf)
        return SyntaxInputs(self, word_of_piece, pad_mask, word_lengths, bias)

    def edit(self, layer: int, states: Tensor, inputs: SyntaxInputs) -> HeadEdit | None:
        """Layer ``layer``'s change, from its input states (B, p, d)."""
        if layer not in self.layers:
            return None
        if inputs.bias is not None:
            return HeadEdit(self.heads, bias=inputs.bias)
        index = inputs.first_piece[:, :, None].expand(-1, -1, states.shape[-1])
        new = self.links[str(layer)](states.gather(1, index), inputs.word_lengths)
        # The lowest chosen layer starts afresh, so a batch's inputs serve any pass.
        previous = None if layer == self.layers[0] else inputs.links
        inputs.links = hierarchical_links(previous, new)
        prior = constituent_prior(inputs.links)
        pieces = words_to_pieces(prior, inputs.word_of_piece, inputs.pad_mask, 1.0, 0.0)
        return HeadEdit(self.heads, prior=pieces)

    def remove(self) -> None:
        """Take the injection out of the model it was put in: the plain model again."""
        while self._undo:
            self._undo.pop()()


def _indices(chosen: Sequence[int], count: int, what: str) -> tuple[int, ...]:
    picked = tuple(sorted({int(i) for i in chosen}))
    if not picked or picked[0] < 0 or picked[-1] >= count:
        raise ValueError(f"{what} {list(chosen)}: expected indices in 0..{count - 1}")
    return picked


def inject_syntax(
    model: nn.Module,
    mechanism: str,
    *,
    layers: Sequence[int],
    heads: Sequence[int],
    gate: str = "hard",
    tau: float = 1.0,
) -> SyntaxInjection:
    """Put ``mechanism`` (``distance`` or ``constituent``) into heads ``heads`` of layers
    ``layers`` of ``model``, in place, and return the injection (also
    ``model.syntax_injection``, so that its parameters train and save with the model).

    ``model``: a ``BertEncoder`` (called as ``model(piece_ids, pad_mask, syntax=...)``)
    or a ``transformers`` BERT-family model (``model(input_ids, attention_mask=...,
    syntax=...)``), with ``syntax=injection.inputs(trees, word_of_piece, pad_mask)``.
    """
    if hasattr(model, "syntax_injection"):
        raise ValueError("the model has syntax injected already: remove() that one first")
    if isinstance(model, BertEncoder):
        config = model.config
        sizes = config.num_hidden_layers, config.num_attention_heads, config.hidden_size
        injection = SyntaxInjection(mechanism, layers, heads, *sizes, gate=gate, tau=tau)
        injection.to(next(model.parameters()))  # the model's device and dtype
        model.add_module("syntax_injection", injection)
        injection._undo.append(lambda: delattr(model, "syntax_injection"))
        return injection
    return _inject_transformers(model, mechanism, layers, heads, gate, tau)


def _self_attentions(model: nn.Module) -> list[nn.Module]:
    """The self-attention module of every layer of a transformers BERT-family model."""
    base = getattr(model, "base_model", model)
    try:
        return [layer.attention.self for layer in base.encoder.layer]
    except AttributeError:
        raise TypeError(
            f"{type(model).__name__}: expected a BertEncoder or a transformers BERT-family "
            "model (encoder.layer[i].attention.self)"
        ) from None


def _inject_transformers(
    model: nn.Module,
    mechanism: str,
    layers: Sequence[int],
    heads: Sequence[int],
    gate: str,
    tau: float,
) -> SyntaxInjection:
    attentions = _self_attentions(model)
    config = model.config
    injection = SyntaxInjection(
        mechanism,
        layers,
        heads,
        len(attentions),
        config.num_attention_heads,
        config.hidden_size,
        gate=gate,
        tau=tau,
    )
    injection.to(next(model.parameters()))
    register_with_transformers()
    previous = config._attn_implementation
    model.set_attn_implementation(IMPLEMENTATION)
    model.add_module("syntax_injection", injection)
    injection._undo.append(lambda: model.set_attn_implementation(previous))
    injection._undo.append(lambda: delattr(model, "syntax_injection"))
    for layer in injection.layers:
        hook = attentions[layer].register_forward_pre_hook(_edit_hook(layer), with_kwargs=True)
        injection._undo.append(hook.remove)
    return injection


def _edit_hook(layer: int):
    """A pre-hook for layer ``layer``'s self-attention: the batch's ``syntax`` and the
    layer's input states become the layer's edit, handed on as a keyword argument."""

    def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
        inputs = kwargs.get(SYNTAX)
        if inputs is None:
            return None
        states = args[0] if args else kwargs["hidden_states"]
        return args, {**kwargs, _EDIT: inputs(layer, states)}

    return hook


def syntax_attention(
    module: nn.Module,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attention_mask: Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Tensor, None]:
    """The attention function registered with transformers as ``treeattn_syntax``:
    transformers' SDPA attention, with the layer's edit (if any) applied."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    edit = kwargs.pop(_EDIT, None)
    kwargs.pop(SYNTAX, None)
    if edit is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    attended = edited_attention(
        query, key, value, attention_mask, edit, dropout_p=dropout, scale=scaling
    )
    return attended.transpose(1, 2).contiguous(), None


def register_with_transformers() -> None:
    """Register ``syntax_attention`` (and SDPA's boolean masks) under ``treeattn_syntax``;
    transformers is imported here only, so the rest of treeattn runs without it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(IMPLEMENTATION, syntax_attention)
    AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)
