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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from treeattn import plugins
from treeattn.attention.head_edit import (
    HeadEdit,
    additive_mask,
    edited_attention,
    edited_probabilities,
)
from treeattn.attention.injection import SyntaxInjection
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
    injection = plugins.mechanisms[mechanism].capabilities.injection
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
    layers: Sequence[int] | Mapping[str, Sequence[int]],
    heads: Sequence[int],
    **options: Any,
) -> SyntaxInjection | StackedInjection:
    """Put ``mechanism`` (one whose capabilities include an injection: ``distance``,
    ``constituent``, ...) into heads ``heads`` of layers ``layers`` of ``model``, in place,
    with the mechanism's ``options`` (``gate``, ``tau`` for distance), and return the
    injection (also ``model.syntax_injection``, so that its parameters train and save with
    the model).

    ``model``: a ``BertEncoder`` (called as ``model(piece_ids, pad_mask, syntax=...)``)
    or a ``transformers`` model whose attention goes through ``AttentionInterface``
    (``model(input_ids, attention_mask=..., syntax=...)``), with
    ``syntax=injection.inputs(trees, word_of_piece, pad_mask)``. In a causal model's
    self-attention the mechanism runs its causal form (no position reads a later word) or
    is refused by name. An encoder-decoder model (BART, T5, ...) takes
    ``layers={"encoder": [...], "decoder": [...]}`` and returns a ``StackedInjection``;
    its cross-attention is never edited.
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


# The attribute names under which encoder-decoder families keep a decoder layer's
# cross-attention (BART, mBART, Marian, Pegasus, Whisper; T5; BERT as a decoder): a module of
# the same class as the layer's self-attention, which syntax never edits.
CROSS_ATTENTION_NAMES = frozenset({"encoder_attn", "EncDecAttention", "crossattention"})


def _dispatches(module: nn.Module) -> bool:
    """Whether ``module``'s own forward goes through transformers' attention-function
    registry (``ALL_ATTENTION_FUNCTIONS``), the door syntax enters by."""
    forward = getattr(type(module), "forward", None)
    code = getattr(inspect.unwrap(forward), "__code__", None) if forward else None  # decorated
    return "ALL_ATTENTION_FUNCTIONS" in getattr(code, "co_names", ())


def _is_cross_attention(name: str, module: nn.Module) -> bool:
    return (
        name.rsplit(".", 1)[-1] in CROSS_ATTENTION_NAMES
        or getattr(module, "is_cross_attention", False)
        or "Cross" in type(module).__name__
    )


def _self_attentions(stack: nn.Module) -> list[nn.Module]:
    """The self-attention module of every layer of a ``transformers`` model (or one stack of
    an encoder-decoder model) whose attention goes through ``AttentionInterface``, bottom
    layer first: BERT, RoBERTa, ELECTRA, DistilBERT, GPT-2, Llama, Qwen2, Mistral and the
    others built the same way. A layer holding a second attention that is no known
    cross-attention is refused: nothing is edited that might not be a self-attention."""
    found = {
        name: module
        for name, module in stack.named_modules()
        if _dispatches(module) and not _is_cross_attention(name, module)
    }
    if not found:
        raise TypeError(
            f"{type(stack).__name__}: its attention does not go through transformers' "
            "AttentionInterface (its own attention code), so syntax cannot enter it; "
            "inject_syntax takes a BertEncoder or such a transformers model"
        )
    by_layer: dict[str, list[str]] = {}
    for name in found:
        by_layer.setdefault(_layer_of(stack, name), []).append(name)
    for layer, names in by_layer.items():
        if len(names) > 1:
            raise TypeError(
                f"{type(stack).__name__}: layer {layer} holds {len(names)} attentions "
                f"({', '.join(names)}), and which is its self-attention cannot be told; "
                "inject_syntax edits self-attention only"
            )
    return list(found.values())


def _layer_of(stack: nn.Module, name: str) -> str:
    """The layer a module named ``name`` sits in: its path down to the element of the first
    ``nn.ModuleList`` on the way (the stack's list of layers)."""
    parts, module = name.split("."), stack
    for depth, part in enumerate(parts[:-1]):
        module = getattr(module, part)
        if isinstance(module, nn.ModuleList):
            return ".".join(parts[: depth + 2])
    return name


def _stacks(model: nn.Module) -> dict[str | None, list[nn.Module]]:
    """Each stack's self-attentions: ``{"encoder": ..., "decoder": ...}`` for an
    encoder-decoder model, ``{None: ...}`` for a model of one stack."""
    if getattr(model.config, "is_encoder_decoder", False):
        return {
            "encoder": _self_attentions(model.get_encoder()),
            "decoder": _self_attentions(model.get_decoder()),
        }
    return {None: _self_attentions(model)}


def _text_config(model: nn.Module) -> Any:
    config = model.config
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _chosen_layers(
    model: nn.Module, stacks: dict[str | None, list[nn.Module]], layers: Any
) -> dict[str | None, Sequence[int]]:
    """``layers`` as each chosen stack's layer indices, checked against the model's kind."""
    name = type(model).__name__
    if None in stacks:
        if isinstance(layers, Mapping):
            raise ValueError(f"{name} has one stack of layers: layers is a list of indices")
        return {None: layers}
    if not isinstance(layers, Mapping) or not layers or set(layers) - set(stacks):
        raise ValueError(
            f"{name} is an encoder-decoder model: layers names each stack's layers, as "
            "layers={'encoder': [...], 'decoder': [...]} (either may be left out)"
        )
    return dict(layers)


def _stack_heads(config: Any, stack: str | None) -> int:
    """A stack's number of attention heads (an encoder-decoder model's decoder may have its
    own)."""
    if stack == "decoder":
        return getattr(config, "decoder_attention_heads", config.num_attention_heads)
    return config.num_attention_heads


class StackedInjection(nn.Module):
    """The injections into an encoder-decoder model, one a stack: ``injection["encoder"]``
    and ``injection["decoder"]`` (each a ``SyntaxInjection``; the decoder's in its causal
    form) make their own stack's inputs from its own sentences, and the model reads
    ``syntax={"encoder": ..., "decoder": ...}`` (a stack left out runs plain).
    Cross-attention is never edited."""

    def __init__(self, stacks: dict[str, SyntaxInjection]) -> None:
        super().__init__()
        self.stacks = nn.ModuleDict(stacks)
        self._undo: list[Callable[[], Any]] = []

    def __getitem__(self, stack: str) -> SyntaxInjection:
        if stack not in self.stacks:
            raise KeyError(f"no injection in the {stack!r} stack; chosen: {', '.join(self.stacks)}")
        return self.stacks[stack]

    def remove(self) -> None:
        """Take every stack's injection out: the plain model again."""
        for injection in self.stacks.values():
            injection.remove()
        while self._undo:
            self._undo.pop()()


def _inject_transformers(
    model: nn.Module,
    mechanism: str,
    layers: Any,
    heads: Sequence[int],
    options: dict[str, Any],
) -> SyntaxInjection | StackedInjection:
    stacks = _stacks(model)
    chosen = _chosen_layers(model, stacks, layers)
    config = _text_config(model)
    made: dict[str | None, SyntaxInjection] = {}
    for stack, indices in chosen.items():  # every stack checked before any hook goes in
        attentions = stacks[stack]
        sizes = len(attentions), _stack_heads(config, stack), config.hidden_size
        made[stack] = make_injection(mechanism, indices, heads, *sizes, **options)
        if any(getattr(module, "is_causal", False) for module in attentions):
            made[stack].make_causal()
        made[stack].to(next(model.parameters()))
    for stack, injection in made.items():
        for layer in injection.layers:
            hook = stacks[stack][layer].register_forward_pre_hook(
                _edit_hook(layer, stack), with_kwargs=True
            )
            injection._undo.append(hook.remove)
    whole = made[None] if None in made else StackedInjection(made)
    register_with_transformers()
    previous = model.config._attn_implementation
    model.set_attn_implementation(IMPLEMENTATION)
    model.add_module("syntax_injection", whole)
    whole._undo.append(lambda: model.set_attn_implementation(previous))
    whole._undo.append(lambda: delattr(model, "syntax_injection"))
    return whole


def _edit_hook(layer: int, stack: str | None):
    """A pre-hook for layer ``layer``'s self-attention (of ``stack``, for an
    encoder-decoder model): the batch's ``syntax`` and the layer's input states become the
    layer's edit, handed on as a keyword argument."""

    def hook(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
        inputs = kwargs.get(SYNTAX)
        if isinstance(inputs, Mapping) != (stack is not None):
            shape = "{'encoder': ..., 'decoder': ...}" if stack else "one stack's inputs"
            raise ValueError(f"syntax: this model reads {shape}")
        if stack is not None:
            inputs = inputs.get(stack)
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
    causal = kwargs.get("is_causal")
    causal = getattr(module, "is_causal", False) if causal is None else causal
    if attention_mask is None and causal and query.shape[2] > 1:
        # transformers leaves a purely causal mask to SDPA's is_causal; an edit needs it
        # written out, so that no position sees a later one.
        q, k = query.shape[2], key.shape[2]
        attention_mask = torch.ones(q, k, dtype=torch.bool, device=query.device).tril(k - q)
    position_bias = kwargs.get("position_bias")
    if position_bias is not None:  # T5's relative positions, added to every head's scores
        attention_mask = additive_mask(attention_mask, query.dtype) + position_bias
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
