"""Syntax inside a pretrained model's attention.

``inject_syntax(model, mechanism, layers=..., heads=..., **options)`` changes chosen heads
of chosen layers of ``model`` (this package's ``BertEncoder``, or a ``transformers`` model
whose attention goes through ``AttentionInterface``, encoder or decoder) and returns the
mechanism's ``SyntaxInjection``; per batch, ``injection.inputs(trees, word_of_piece,
pad_mask)`` turns the batch's trees into what the model reads through its ``syntax=``
keyword. Called without it, the model is the plain one. Which mechanisms can be
injected, and how each edits a layer's heads, is theirs to say (``Capabilities.injection``,
``attention.injection``): ``treeattn mechanisms`` lists them.

On a ``transformers`` model the attention function registered as ``treeattn_syntax``
(``transformers.AttentionInterface``) is selected with ``model.set_attn_implementation``;
the ``syntax`` keyword reaches every layer through the model's keyword arguments, and a
forward pre-hook on each chosen layer's self-attention turns it into that layer's
``HeadEdit``. Layers and heads not chosen run ``transformers``' own SDPA attention.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from treeattn.attention.head_edit import HeadEdit, edited_attention, edited_probabilities
from treeattn.attention.injection import SyntaxInjection
from treeattn.attention.registry import mechanism_capabilities
from treeattn.models.bert import BertEncoder

IMPLEMENTATION = "treeattn_syntax"  # the name registered with transformers
SYNTAX = "syntax"  # the keyword a model is called with
_EDIT = "treeattn_head_edit"  # the keyword the pre-hook hands the attention function
_RECORD = "treeattn_record"  # an attention module's callback for its probabilities


def make_injection(
    mechanism: str,
    layers: Sequence[int],
    heads: Sequence[int],
    n_layers: int,
    n_heads: int,
    d_model: int,
    **options: Any,
) -> SyntaxInjection:
    """The injection of ``mechanism`` for an encoder of ``n_layers`` layers of ``n_heads``
    heads and size ``d_model``, with the mechanism's own ``options``."""
    try:
        injection = mechanism_capabilities(mechanism).injection
    except KeyError as error:
        raise ValueError(error.args[0]) from None
    if injection is None:
        raise ValueError(f"the {mechanism} mechanism has no edit of a pretrained encoder's heads")
    try:
        return injection(layers, heads, n_layers, n_heads, d_model, **options)
    except TypeError as error:  # an option the mechanism does not take
        raise ValueError(f"{mechanism} injection: {error}") from None


def inject_syntax(
    model: nn.Module,
    mechanism: str,
    *,
    layers: Sequence[int],
    heads: Sequence[int],
    **options: Any,
) -> SyntaxInjection:
    """Put ``mechanism`` (one whose capabilities include an injection: ``distance``,
    ``constituent``, ...) into heads ``heads`` of layers ``layers`` of ``model``, in place,
    with the mechanism's ``options`` (``gate``, ``tau`` for distance), and return the
    injection (also ``model.syntax_injection``, so that its parameters train and save with
    the model).

    ``model``: a ``BertEncoder`` (called as ``model(piece_ids, pad_mask, syntax=...)``)
    or a ``transformers`` model whose attention goes through ``AttentionInterface``
    (``model(input_ids, attention_mask=..., syntax=...)``), with
    ``syntax=injection.inputs(trees, word_of_piece, pad_mask)``.
    """
    if hasattr(model, "syntax_injection"):
        raise ValueError("the model has syntax injected already: remove() that one first")
    if isinstance(model, BertEncoder):
        config = model.config
        sizes = config.num_hidden_layers, config.num_attention_heads, config.hidden_size
        injection = make_injection(mechanism, layers, heads, *sizes, **options)
        injection.to(next(model.parameters()))  # the model's device and dtype
        model.add_module("syntax_injection", injection)
        injection._undo.append(lambda: delattr(model, "syntax_injection"))
        return injection
    return _inject_transformers(model, mechanism, layers, heads, options)


def _dispatches(module: nn.Module) -> bool:
    """Whether ``module`` is a self-attention whose own forward goes through transformers'
    attention-function registry (``ALL_ATTENTION_FUNCTIONS``), the door syntax enters by."""
    forward = getattr(type(module), "forward", None)
    code = getattr(inspect.unwrap(forward), "__code__", None) if forward else None  # decorated
    names = getattr(code, "co_names", ())
    cross = getattr(module, "is_cross_attention", False) or "Cross" in type(module).__name__
    return "ALL_ATTENTION_FUNCTIONS" in names and not cross


def _self_attentions(model: nn.Module) -> list[nn.Module]:
    """The self-attention module of every layer of a ``transformers`` model whose attention
    goes through ``AttentionInterface``, bottom layer first: BERT, RoBERTa, ELECTRA,
    DistilBERT, GPT-2, Llama, Qwen2, Mistral and the others built the same way."""
    found = [module for module in model.modules() if _dispatches(module)]
    if not found:
        raise TypeError(
            f"{type(model).__name__}: its attention does not go through transformers' "
            "AttentionInterface (its own attention code), so syntax cannot enter it; "
            "inject_syntax takes a BertEncoder or such a transformers model"
        )
    return found


def _text_config(model: nn.Module) -> Any:
    config = model.config
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _inject_transformers(
    model: nn.Module,
    mechanism: str,
    layers: Sequence[int],
    heads: Sequence[int],
    options: dict[str, Any],
) -> SyntaxInjection:
    attentions = _self_attentions(model)
    config = _text_config(model)
    sizes = len(attentions), config.num_attention_heads, config.hidden_size
    injection = make_injection(mechanism, layers, heads, *sizes, **options)
    injection.to(next(model.parameters()))
    register_with_transformers()
    previous = model.config._attn_implementation
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
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    edit = kwargs.pop(_EDIT, None)
    kwargs.pop(SYNTAX, None)
    record = getattr(module, _RECORD, None)
    if edit is None and record is None:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs
        )
    groups = getattr(module, "num_key_value_groups", 1)
    if groups > 1:  # grouped-query heads: each key and value head serves several queries
        key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    if attention_mask is None and getattr(module, "is_causal", False) and query.shape[2] > 1:
        # transformers leaves a purely causal mask to SDPA's is_causal; an edit needs it
        # written out, so that no position sees a later one.
        q, k = query.shape[2], key.shape[2]
        attention_mask = torch.ones(q, k, dtype=torch.bool, device=query.device).tril(k - q)
    if record is not None:
        record(edited_probabilities(query, key, attention_mask, edit, scaling), edit)
    attended = edited_attention(
        query, key, value, attention_mask, edit, dropout_p=dropout, scale=scaling
    )
    return attended.transpose(1, 2).contiguous(), None


class AttentionRecorder:
    """Hands ``keep(layer, probabilities, edit)`` each self-attention's probabilities (B,
    H, p, p; the edit's bias or prior included) as a ``transformers`` model runs, until
    ``remove()``: for the viewer. The model runs ``treeattn_syntax`` meanwhile, which
    computes the same outputs."""

    def __init__(
        self, model: nn.Module, keep: Callable[[int, Tensor, HeadEdit | None], None]
    ) -> None:
        self.model = model
        self.attentions = _self_attentions(model)
        register_with_transformers()
        self.previous = model.config._attn_implementation
        model.set_attn_implementation(IMPLEMENTATION)
        for layer, module in enumerate(self.attentions):
            setattr(module, _RECORD, functools.partial(keep, layer))

    def remove(self) -> None:
        for module in self.attentions:
            delattr(module, _RECORD)
        self.model.set_attn_implementation(self.previous)


def register_with_transformers() -> None:
    """Register ``syntax_attention`` (and SDPA's boolean masks) under ``treeattn_syntax``;
    transformers is imported here only, so the rest of treeattn runs without it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(IMPLEMENTATION, syntax_attention)
    AttentionMaskInterface.register(IMPLEMENTATION, sdpa_mask)
