"""Sentence classifier: an encoder, pooling over real tokens, a linear layer."""

from __future__ import annotations

import torch
from torch import nn

from treeattn.models.inputs import EncoderInputs


def masked_mean(states: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """(B, n, d) states averaged over the real positions of ``pad_mask`` (B, n) -> (B, d)."""
    keep = (~pad_mask).unsqueeze(-1).to(states.dtype)
    return (states * keep).sum(1) / keep.sum(1).clamp(min=1.0)


class SentenceClassifier(nn.Module):
    """Logits (B, classes) from a batch of token ids (B, n).

    ``pooling``: ``"mean"`` over non-padding states or ``"first"`` (the first token's state).
    """

    def __init__(
        self, encoder: nn.Module, n_classes: int, pooling: str = "mean", dropout: float = 0.1
    ) -> None:
        super().__init__()
        if pooling not in ("mean", "first"):
            raise ValueError(f"pooling must be 'mean' or 'first', not {pooling!r}")
        self.encoder = encoder
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(encoder.d_model, n_classes)

    def forward(self, inputs: EncoderInputs) -> torch.Tensor:
        states = self.encoder.encode_inputs(inputs)
        if self.pooling == "first":
            pooled = states[:, 0]
        else:
            pooled = masked_mean(states, inputs.pad_mask)
        return self.head(self.dropout(pooled))


class TreeClassifier(nn.Module):
    """Logits from a tree encoder (hierarchical accumulation, Tree-LSTM).

    The encoder maps a batch (its ``trees`` and ``node_labels`` (B, m) ids among them) to
    leaf states (B, n, d) and node states (B, m, d). ``pooling``: ``"root"`` (the first
    tree's root, node 0) or ``"mean"`` over the nodes. With ``every_node``, the logits of
    every node (B, m, L) and leaf (B, n, L) instead, for training on phrase labels.
    """

    def __init__(
        self, encoder: nn.Module, n_classes: int, pooling: str = "root", dropout: float = 0.1
    ) -> None:
        super().__init__()
        if pooling not in ("root", "mean"):
            raise ValueError(f"tree pooling must be 'root' or 'mean', not {pooling!r}")
        self.encoder = encoder
        self.pooling = pooling
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(encoder.d_model, n_classes)

    def forward(self, inputs: EncoderInputs, every_node: bool = False):
        leaves, nodes = self.encoder.encode_inputs(inputs)
        if every_node:
            return self.head(self.dropout(nodes)), self.head(self.dropout(leaves))
        if self.pooling == "root":
            pooled = nodes[:, 0]
        else:
            pooled = masked_mean(nodes, inputs.trees.node_pad_mask)
        return self.head(self.dropout(pooled))
