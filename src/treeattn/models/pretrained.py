"""A pretrained backbone inside a model: its settings (shared by every model section that
can read one), the encoder that reads its word vectors, and the optimiser's groups that
give its weights their own learning rate and warm-up.

``BackboneEncoder`` is what the encoder registry builds for ``model.backbone``
(``registry.encoder_entry(name, backbone=True)``): the backbone's word vectors, with syntax
injected inside its layers (``syntax_injection``) or a from-scratch encoder on top of them
(hierarchical accumulation, the Tree-LSTM, a Transformer with structured attention), or
neither (plain fine-tuning).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from treeattn.attention.tree_loss import WordPositions, piece_positions
from treeattn.models.backbone import Backbone
from treeattn.models.inputs import EncoderInputs


@dataclass
class BackboneSettings:
    """A pretrained encoder a model reads: None, ``minilm`` or a directory
    (``treeattn.models.backbone``), and how."""

    backbone: str | None = None
    backbone_layers: int | list = -1  # one hidden state, or a learned mix of several
    backbone_pooling: str = "first"  # or mean (of a word's pieces)
    backbone_tune: str | int = "all"  # or none (frozen), or k: only the top k layers
    backbone_lr: float | None = None  # its own learning rate (None: train.lr)
    backbone_warmup: int | None = None  # its own warm-up updates (None: train.warmup_steps)
    backbone_sha256: str | None = None  # the sha256 its model.safetensors must have

    def check_backbone(self, where: str, schedule: str | None = None) -> None:
        """Reject backbone settings no run can use, naming the key (``model.*`` of
        ``where``); ``schedule``: the run's ``train.schedule``."""
        if self.backbone is not None and not isinstance(self.backbone, str):
            raise ValueError(f"{where}: model.backbone={self.backbone!r}; use minilm or a folder")
        layers = self.backbone_layers
        chosen = [layers] if isinstance(layers, int) else layers
        if (
            isinstance(layers, bool)
            or not isinstance(chosen, list)
            or not chosen
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in chosen)
        ):
            raise ValueError(
                f"{where}: model.backbone_layers={layers!r}; use a layer index or a list of them"
            )
        if self.backbone_pooling not in ("first", "mean"):
            raise ValueError(
                f"{where}: model.backbone_pooling={self.backbone_pooling!r}; use first or mean"
            )
        tune = self.backbone_tune
        if tune not in ("all", "none") and (
            not isinstance(tune, int) or isinstance(tune, bool) or tune < 0
        ):
            raise ValueError(
                f"{where}: model.backbone_tune={tune!r}; use all, none or a number of top layers"
            )
        pin = self.backbone_sha256
        if pin is not None and not (isinstance(pin, str) and re.fullmatch(r"[0-9a-f]{64}", pin)):
            raise ValueError(
                f"{where}: model.backbone_sha256={pin!r}; use the 64 hex digits of a sha256"
            )
        if self.backbone_lr is not None and not self.backbone_lr > 0:
            raise ValueError(f"{where}: model.backbone_lr must be positive")
        if self.backbone_warmup is not None and (
            not isinstance(self.backbone_warmup, int) or self.backbone_warmup < 0
        ):
            raise ValueError(f"{where}: model.backbone_warmup must be 0 or more")
        if self.backbone_warmup == 0 and schedule == "inverse_sqrt":
            raise ValueError(
                f"{where}: train.schedule=inverse_sqrt needs model.backbone_warmup >= 1"
            )

    def backbone_options(self) -> dict[str, Any]:
        """``load_backbone``'s options (the pinned hash, layers, pooling, tune) from these
        settings."""
        layers = self.backbone_layers
        return {
            "sha256": self.backbone_sha256,
            "layers": layers if isinstance(layers, int) else list(layers),
            "pooling": self.backbone_pooling,
            "tune": self.backbone_tune,
        }


def backbone_parameter_groups(
    model: nn.Module, backbone: Backbone, settings: BackboneSettings, own: str
) -> list[dict[str, Any]]:
    """The model's own parameters (named ``own``: the head, the layers on top, the
    backbone's layer mix, an injection's link modules) at ``train.lr``; the backbone's tuned
    pretrained weights, if any, in a group named ``backbone`` at ``settings.backbone_lr``
    with ``settings.backbone_warmup`` updates of warm-up (each defaulting to the run's).
    Frozen weights are in no group."""
    pretrained = backbone.pretrained_parameters()
    taken = {id(p) for p in pretrained}
    groups: list[dict[str, Any]] = [
        {"params": [p for p in model.parameters() if id(p) not in taken], "name": own}
    ]
    tuned = [p for p in pretrained if p.requires_grad]
    if tuned:
        group: dict[str, Any] = {"params": tuned, "name": "backbone"}
        if settings.backbone_lr is not None:
            group["lr"] = settings.backbone_lr
        if settings.backbone_warmup is not None:
            group["warmup_steps"] = settings.backbone_warmup
        groups.append(group)
    return groups


class BackboneEncoder(nn.Module):
    """Word states (B, n, d) of a batch's pieces (``EncoderInputs.pieces``) from a pretrained
    ``backbone``, and from ``top`` (an encoder of the registry, reading the backbone's word
    vectors instead of its embeddings) where there is one; its output is ``top``'s (token
    states, or leaf and node states).

    Syntax injected into the backbone's encoder (``inject_syntax(backbone.injectable, ...)``)
    reads the batch's gap distances (``distance``) or nothing (``constituent``).
    """

    cross_attention = None  # no translation decoder reads it

    def __init__(self, backbone: Backbone, top: nn.Module | None = None) -> None:
        super().__init__()
        self.backbone = backbone
        self.top = top
        size = backbone.output_size
        self.d_model = size if top is None else top.d_model
        # Word vectors to the top's size, where it has another.
        self.project = nn.Identity() if self.d_model == size else nn.Linear(size, self.d_model)

    def word_vectors(self, inputs: EncoderInputs) -> Tensor:
        """The backbone's word vectors (B, n, d_backbone), syntax injected where it is."""
        pieces = inputs.pieces
        if pieces is None:
            raise ValueError("a model on a pretrained backbone reads the batch's pieces")
        injection = getattr(self.backbone.injectable, "syntax_injection", None)
        syntax = None
        if injection is not None:
            lengths = (~inputs.pad_mask).sum(1)
            syntax = injection.gap_inputs(
                inputs.gaps, pieces.word_of_piece, pieces.pad_mask, lengths
            )
        return self.backbone.vectors(pieces, syntax)

    @property
    def state_watchers(self) -> list:
        """The backbone's (``Backbone.state_watchers``): its hidden states over its pieces,
        also with layers on top."""
        return self.backbone.state_watchers

    def state_positions(self, inputs: EncoderInputs) -> WordPositions:
        """Each word's first and last piece (``[CLS]`` and ``[SEP]`` are no word's)."""
        pieces = inputs.pieces
        if pieces is None:
            raise ValueError("a model on a pretrained backbone reads the batch's pieces")
        return piece_positions(pieces.word_of_piece, pieces.first_piece, pieces.word_pad_mask)

    def encode_inputs(self, inputs: EncoderInputs) -> Any:
        words = self.word_vectors(inputs)
        if self.top is None:
            return words
        return self.top.encode_inputs(inputs, words=self.project(words))
