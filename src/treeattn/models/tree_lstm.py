"""Binary constituency Tree-LSTM (Tai et al., ACL 2015, §3.2 with N = 2), a baseline for the
tree encoders, computed one tree height at a time over the whole batch."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from treeattn import plugins
from treeattn.attention.registry import Capabilities, Reads
from treeattn.models.encoder import init_embedding
from treeattn.models.inputs import EncoderInputs
from treeattn.models.registry import (
    TREE,
    EncoderConfig,
    EncoderEntry,
    options_dataclass,
)
from treeattn.trees.tensors import TreeTensors, check_shapes


class TreeLSTMEncoder(nn.Module):
    """Word ids (B, n), node label ids (B, m) and their trees -> leaf states (B, n, d) and
    node states (B, m, d), the hidden states h of the Tree-LSTM units.

    Words enter at the leaves only, as in Tai et al.'s constituency Tree-LSTM: a leaf is an
    LSTM unit with no children (c = i * u, h = o * tanh(c), gates from its word), and a node
    computes i, f_left, f_right, o, u from [h_left; h_right] alone (Eqs. 9-14). So
    ``node_labels`` and ``node_vocab_size`` are accepted for the interface shared with
    ``HierarchicalEncoder`` and ignored. Trees must be binary (``treeattn.trees.binarize``);
    a node with one child (a one-word sentence, a unary phrase) takes a zero right child.
    Padded leaves and nodes come out as zeros (before dropout).
    """

    cross_attention = None  # no translation decoder reads a Tree-LSTM

    def __init__(
        self,
        vocab_size: int,
        node_vocab_size: int,
        d_model: int = 64,
        dropout: float = 0.1,
        max_length: int = 512,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_length = max_length
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        init_embedding(self.embed, d_model)
        self.leaf_gates = nn.Linear(d_model, 3 * d_model)  # i, o, u from the word
        self.node_gates = nn.Linear(2 * d_model, 5 * d_model)  # i, f_l, f_r, o, u from h_l, h_r
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        tokens: torch.Tensor,
        node_labels: torch.Tensor,
        trees: TreeTensors,
        words: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``words`` (B, n, d): the leaves' input vectors instead of the embeddings (a
        pretrained encoder's)."""
        check_shapes(tokens, node_labels, trees)
        B, n = tokens.shape
        m = trees.node_height.shape[1]
        d = self.d_model
        if n > self.max_length:
            raise ValueError(f"sequence of {n} tokens is longer than max_length={self.max_length}")
        children = trees.node_children
        if children.shape[2] > 2:
            raise ValueError(
                f"the Tree-LSTM needs binary trees but a node has {children.shape[2]} children;"
                " binarise them first, e.g. with treeattn.trees.binarize"
            )
        children = F.pad(children, (0, 2 - children.shape[2]), value=-1)  # (B, m, 2)

        words = self.embed(tokens) if words is None else words
        i, o, u = self.leaf_gates(self.dropout(words)).chunk(3, dim=-1)
        leaf_c = torch.sigmoid(i) * torch.tanh(u)
        leaf_state = torch.cat([torch.sigmoid(o) * torch.tanh(leaf_c), leaf_c], dim=-1)
        leaf_state = leaf_state.masked_fill(trees.leaf_pad_mask.unsqueeze(-1), 0.0)

        # One flat table of [h; c] rows: tree b's leaves at b*(n+m) + j, its nodes at
        # b*(n+m) + n + t, and a last row that stays zero, read for a missing child (-1).
        stride = n + m
        table = F.pad(leaf_state, (0, 0, 0, m)).reshape(B * stride, 2 * d)
        table = F.pad(table, (0, 0, 0, 1))
        offset = torch.arange(B, device=tokens.device).unsqueeze(-1) * stride  # (B, 1)
        kid_rows = torch.where(children >= 0, children + offset.unsqueeze(-1), B * stride)
        node_rows = offset + n + torch.arange(m, device=tokens.device)  # (B, m)

        # Nodes sorted by height; padding has height 0 and sorts first. The per-height counts
        # are the one host sync; a node's children all have smaller heights.
        heights = trees.node_height.reshape(-1)
        order = torch.argsort(heights, stable=True)
        counts = torch.bincount(heights).tolist()
        kid_rows = kid_rows.reshape(-1, 2)[order]
        node_rows = node_rows.reshape(-1)[order]
        start = counts[0]
        for count in counts[1:]:
            level = slice(start, start + count)
            start += count
            kids = table.index_select(0, kid_rows[level].reshape(-1)).view(count, 2, 2 * d)
            h_kids, c_kids = kids[..., :d], kids[..., d:]
            gates = self.node_gates(h_kids.reshape(count, 2 * d))
            i, f_left, f_right, o, u = gates.chunk(5, dim=-1)
            c = (
                torch.sigmoid(i) * torch.tanh(u)
                + torch.sigmoid(f_left) * c_kids[:, 0]
                + torch.sigmoid(f_right) * c_kids[:, 1]
            )
            h = torch.sigmoid(o) * torch.tanh(c)
            # In place is safe for autograd: index_select saves only its index, never the
            # table, and these rows were zeros that nothing computed so far depends on.
            # It avoids copying the whole table at every height.
            table.index_copy_(0, node_rows[level], torch.cat([h, c], dim=-1))

        states = table[:-1, :d].reshape(B, stride, d)
        return self.dropout(states[:, :n]), self.dropout(states[:, n:])

    def encode_inputs(
        self, inputs: EncoderInputs, words: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Leaf (B, n, d) and node (B, m, d) states of a typed batch; ``words`` as
        ``forward``'s."""
        return self(inputs.tokens, inputs.node_labels, inputs.trees, words)


def _build(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> TreeLSTMEncoder:
    return TreeLSTMEncoder(
        vocab_size, node_vocab_size, m.d_model, m.dropout, m.max_length, **m.attention_options
    )


plugins.mechanisms.register(
    EncoderEntry(
        "tree-lstm",
        reads=frozenset({Reads.BINARY_TREES}),
        module=TreeLSTMEncoder,
        options=options_dataclass("tree-lstm", TreeLSTMEncoder),
        build=_build,
        output=TREE,
        has_attention=False,
        capabilities=Capabilities("binary Tree-LSTM composing each node from its two children"),
    )
)
