"""Reading a model's attention as its forward pass computes it, for the viewer and the
analyses.

The attention is read, not recomputed differently: forward hooks on the model's own
attention layers ask each layer's mechanism (``MechanismView``, from the registry) for the
probabilities the layer mixed values with and for what else its paper looks at; an
encoder that returns its weights itself gives them; on a pretrained backbone, every BERT
layer's attention over pieces is read as attention over words (``word_attention``) and an
injected mechanism says what its edit of the layer was (``SyntaxInjection.inspect``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from treeattn import plugins
from treeattn.attention.head_edit import HeadEdit
from treeattn.attention.inspection import Captures, MechanismView
from treeattn.attention.registry import capabilities_of
from treeattn.models.backbone import Backbone
from treeattn.models.bert import BertLayer
from treeattn.models.pretrained import BackboneEncoder
from treeattn.models.syntax_injection import AttentionRecorder
from treeattn.models.transformers_encoder import TransformersEncoder
from treeattn.tasks.trained import Trained


@dataclass
class Captured:
    """One sentence's pass: per layer, attention (H, q, q), and what the mechanism captured
    of each layer it acts in (``captures``, batch-first). Layers are counted as the page
    counts them: a backbone's first (``backbone_layers`` of them), then the model's own."""

    attention: list[torch.Tensor] = field(default_factory=list)
    captures: Captures = field(default_factory=list)
    backbone_layers: int = 0


def mechanism_view(model_name: str) -> MechanismView:
    """What the viewer reads of the mechanism a model section names (``model.attention``)."""
    return plugins.mechanisms[model_name].capabilities.view or MechanismView()


def parts(encoder: nn.Module) -> tuple[Backbone | None, nn.Module | None]:
    """The pretrained backbone under ``encoder`` (None without one) and the encoder of the
    model's own layers (None for a backbone with nothing on top)."""
    if isinstance(encoder, BackboneEncoder):
        return encoder.backbone, encoder.top
    return None, encoder


def hook_layers(
    model: nn.Module, found: Captured, attention: bool = True
) -> list[torch.utils.hooks.RemovableHandle]:
    """Forward hooks on every registered mechanism's layer in ``model``: each keeps what
    its mechanism captures of the pass (and, with ``attention``, the first sentence's
    attention); the forward pass itself is untouched."""
    handles = []
    for module in model.modules():
        capabilities = capabilities_of(module)
        if capabilities is None:
            continue
        view = capabilities.view or MechanismView()

        def keep(module: nn.Module, inputs: tuple, _output: Any, view=view) -> None:
            x, pad_mask, context = inputs
            captured = view.capture(module, x, pad_mask, context)
            if attention:
                found.attention.append(view.attention(module, x, pad_mask, context, captured)[0])
            if captured:
                found.captures.append((len(found.attention) - 1, captured))

        handles.append(module.register_forward_hook(keep))
    return handles


def layer_captures(model: nn.Module, run: Callable[[], Any]) -> list[dict[str, Any]]:
    """What every mechanism layer of ``model`` captured (batch-first), bottom layer first,
    in the pass ``run()`` makes."""
    found = Captured()
    handles = hook_layers(model, found, attention=False)
    try:
        run()
    finally:
        for handle in handles:
            handle.remove()
    return [captured for _, captured in found.captures]


def word_attention(
    pieces: torch.Tensor, word_of_piece: torch.Tensor, first_piece: torch.Tensor
) -> torch.Tensor:
    """Attention over pieces (H, p, p) as attention over words (H, n, n), as BERT analyses
    read it: attention to a word is the sum over its pieces, from a word the mean over its
    pieces; ``[CLS]``, ``[SEP]`` (``word_of_piece`` -1) are left out, so rows sum to the
    share the words get, at most 1. ``first_piece`` (n,): a word with no piece of its own
    reads the one it shares (``trees.offsets``)."""
    n = first_piece.shape[0]
    owner = word_of_piece[:, None] == torch.arange(n, device=word_of_piece.device)
    shares = ~owner.any(0)
    owner[first_piece[shares], shares] = True
    owner = owner.to(pieces.dtype)  # (p, n): one 1 a word's piece
    to_words = pieces @ owner  # (H, p, n)
    return owner.T @ to_words / owner.sum(0)[:, None]


def _keeper(found: Captured, pieces: Any, injection: Any):
    """``keep(layer, probabilities, edit)`` for a backbone layer's piece attention (1, H,
    p, p): kept as attention over words, with what the injected mechanism shows of the
    edit the layer received (over the words: a word's first piece holds its row and
    column)."""
    word_of_piece, first = pieces.word_of_piece[0], pieces.first_piece[0]

    def keep(layer: int, probabilities: torch.Tensor, edit: HeadEdit | None) -> None:
        found.attention.append(word_attention(probabilities[0], word_of_piece, first))
        if edit is not None and edit.heads and injection is not None:
            found.captures.append((len(found.attention) - 1, injection.inspect(edit, first)))

    return keep


def _bert_hook(keep):
    """A forward hook (with keywords) on a BERT layer: its probabilities to ``keep``."""

    def hook(module: BertLayer, args: tuple, kwargs: dict, _output: Any) -> None:
        bound = {**dict(zip(("states", "allowed", "edit"), args, strict=False)), **kwargs}
        keep(-1, module.attention_weights(**bound), bound.get("edit"))

    return hook


def _backbone_hooks(backbone: Any, found: Captured, pieces: Any) -> list[Any]:
    """What keeps a backbone's attention as the pass runs: a hook on each BERT layer, or a
    recorder on a ``transformers`` model; each has ``remove()``."""
    injection = getattr(backbone.injectable, "syntax_injection", None)
    keep = _keeper(found, pieces, injection)
    if isinstance(backbone.encoder, TransformersEncoder):
        return [AttentionRecorder(backbone.encoder.model, keep)]
    hook = _bert_hook(keep)
    return [
        layer.register_forward_hook(hook, with_kwargs=True) for layer in backbone.encoder.layers
    ]


@torch.no_grad()
def capture(saved: Trained, inputs) -> Captured:
    """Run the encoder of ``saved`` on one sentence's typed batch ``inputs`` (B = 1)."""
    encoder = saved.model.encoder
    backbone, top = parts(encoder)
    view = mechanism_view(saved.cfg.model.attention)
    found = Captured()
    handles = []
    if backbone is not None:
        handles += _backbone_hooks(backbone, found, inputs.pieces)

    def words() -> torch.Tensor | None:  # the backbone's word vectors, in the top's size
        return None if backbone is None else encoder.project(encoder.word_vectors(inputs))

    try:
        weights = None if top is None else view.encoder_attention(top, inputs, words)
        if weights is None:
            handles += [] if top is None else hook_layers(top, found)
            if not handles:
                raise ValueError("the model has no attention layer whose weights can be shown")
            encoder.encode_inputs(inputs)
        else:
            found.attention += [w[0] for w in weights]
    finally:
        for handle in handles:
            handle.remove()
    if backbone is not None:
        found.backbone_layers = len(backbone.encoder.layers)
    return found
