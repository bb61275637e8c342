"""Tree Transformer encoder with hierarchical accumulation (Nguyen et al., ICLR 2020)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from treeattn import plugins
from treeattn.attention.heads import split_heads
from treeattn.attention.hierarchical import (
    DEFAULT_MAX_DEPTH,
    HierarchicalAttention,
    TreeCrossAttention,
    tree_attention_allowed,
)
from treeattn.attention.inspection import Captures, MechanismView, Panel, SentenceView
from treeattn.attention.registry import ATTENTION_SHARES, Capabilities, Reads
from treeattn.models.cross_attention import Memory, attend
from treeattn.models.encoder import init_embedding, sinusoidal_positions
from treeattn.models.inputs import EncoderInputs
from treeattn.models.registry import (
    TREE,
    EncoderConfig,
    EncoderEntry,
    options_dataclass,
)
from treeattn.trees.tensors import TreeArrays, TreeTensors, check_shapes


class PostNorm(nn.Module):
    """phi(A, X) = LN(FFN(LN(A + X)) + LN(A + X)), the Transformer's residual wrapper as the
    paper writes it (§3)."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_ff, d_model)
        )
        self.ff_norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, attended: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        y = self.attn_norm(self.dropout(attended) + x)
        return self.ff_norm(self.dropout(self.ff(y)) + y)


class HierarchicalLayer(nn.Module):
    """One layer; leaves and nodes share its attention and feed-forward weights (Fig. 6)."""

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        d_ff: int,
        dropout: float,
        attention_dropout: float | None = None,
        **options,
    ) -> None:
        super().__init__()
        p = dropout if attention_dropout is None else attention_dropout
        self.attn = HierarchicalAttention(d_model, n_heads, p, **options)
        self.phi = PostNorm(d_model, d_ff, dropout)

    def forward(self, leaves, nodes, trees: TreeTensors, return_weights=False, allowed=None):
        attended = self.attn(leaves, nodes, trees, return_weights, allowed)
        new_leaves = self.phi(attended[0], leaves)
        new_nodes = self.phi(attended[1], nodes)
        return (new_leaves, new_nodes, *attended[2:])


class TreeMemoryAttention(TreeCrossAttention):
    """A translation decoder's attention over the encoder's leaves and accumulated nodes
    (Eqs. 21-24), with the source read once per sentence (``models.cross_attention``); its
    keys and values are [nodes; leaves], nodes first."""

    def memory(self, encoded: tuple[torch.Tensor, torch.Tensor], inputs: EncoderInputs) -> Memory:
        """``encoded``: the leaf (B, n, d) and node (B, m, d) states of ``inputs``."""
        (leaves, nodes), trees = encoded, inputs.trees
        keys = split_heads(self.key(torch.cat([nodes, leaves], dim=1)), self.n_heads)
        key_pad = torch.cat([trees.node_pad_mask, trees.leaf_pad_mask], dim=1)
        return Memory(keys, self.tree_values(leaves, nodes, trees), ~key_pad[:, None, None, :])

    def attend(self, queries: torch.Tensor, memory: Memory, record: list | None = None):
        return attend(self, queries, memory, record)


class HierarchicalEncoder(nn.Module):
    """Word ids (B, n), node label ids (B, m) and their trees -> leaf states (B, n, d) and
    node states (B, m, d).

    Leaves get word embeddings plus sinusoidal positions; nodes get an embedding of their
    label (one shared label when the data has none to give, as SST, whose labels are the
    targets). Options: ``max_depth`` sizes the vertical embedding table, ``max_length``
    the horizontal one (a node spans at most ``max_length`` words);
    ``hierarchical_embeddings`` and ``subtree_mask`` switch those parts off for the
    ablations of Table 3; ``leaf_weights`` is ``per_head`` (the authors' release) or
    ``single`` (the paper's one vector u_s), see ``HierarchicalAccumulation``;
    ``attention_dropout`` drops attention weights (default: ``dropout``).
    """

    def __init__(
        self,
        vocab_size: int,
        node_vocab_size: int,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.1,
        max_length: int = 512,
        max_depth: int = DEFAULT_MAX_DEPTH,
        hierarchical_embeddings: bool = True,
        subtree_mask: bool = True,
        leaf_weights: str = "per_head",
        attention_dropout: float | None = None,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.max_length = max_length
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.node_embed = nn.Embedding(node_vocab_size, d_model, padding_idx=0)
        for table in (self.embed, self.node_embed):
            init_embedding(table, d_model)
        self.register_buffer(
            "position_table", sinusoidal_positions(max_length, d_model), persistent=False
        )
        self.dropout = nn.Dropout(dropout)
        self.subtree_mask = subtree_mask
        # What the tree cross-attention over this encoder's output shares with it.
        self.accumulation_options = dict(
            max_depth=max_depth,
            max_width=max_length,
            hierarchical_embeddings=hierarchical_embeddings,
            leaf_weights=leaf_weights,
        )
        options = dict(self.accumulation_options, subtree_mask=subtree_mask)
        self.layers = nn.ModuleList(
            HierarchicalLayer(d_model, n_heads, d_ff, dropout, attention_dropout, **options)
            for _ in range(n_layers)
        )

    def forward(
        self,
        tokens: torch.Tensor,
        node_labels: torch.Tensor,
        trees: TreeTensors,
        return_weights: bool = False,
        words: torch.Tensor | None = None,
    ):
        """With ``return_weights``, also the list of each layer's attention probabilities
        (B, H, m + n, m + n) over [nodes; leaves]. ``words`` (B, n, d): the leaves'
        vectors instead of the embeddings and positions (a pretrained encoder's)."""
        check_shapes(tokens, node_labels, trees)
        n = tokens.shape[1]
        if n > self.max_length:
            raise ValueError(f"sequence of {n} tokens is longer than max_length={self.max_length}")
        scale = math.sqrt(self.d_model)
        if words is None:
            words = self.embed(tokens) * scale + self.position_table[:n]
        leaves = self.dropout(words)
        nodes = self.dropout(self.node_embed(node_labels) * scale)
        weights = []
        allowed = tree_attention_allowed(trees, self.subtree_mask)  # once for all layers
        for layer in self.layers:
            leaves, nodes, *extra = layer(leaves, nodes, trees, return_weights, allowed)
            weights.extend(extra)
        if return_weights:
            return leaves, nodes, weights
        return leaves, nodes

    def cross_attention(self, d_model: int, n_heads: int, dropout: float) -> TreeMemoryAttention:
        """A translation decoder's attention over this encoder's leaves and nodes: the
        tree cross-attention, accumulating as this encoder does."""
        return TreeMemoryAttention(d_model, n_heads, dropout, **self.accumulation_options)

    def layer_weights(
        self, inputs: EncoderInputs, words: torch.Tensor | None = None
    ) -> list[torch.Tensor]:
        """Each layer's attention probabilities (B, H, m + n, m + n) over [nodes; leaves]
        for a typed batch; ``words`` as ``forward``'s."""
        return self(inputs.tokens, inputs.node_labels, inputs.trees, True, words)[2]

    def encode_inputs(
        self, inputs: EncoderInputs, words: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Leaf (B, n, d) and node (B, m, d) states of a typed batch; ``words`` as
        ``forward``'s."""
        return self(inputs.tokens, inputs.node_labels, inputs.trees, words=words)


def _build(m: EncoderConfig, vocab_size: int, node_vocab_size: int) -> HierarchicalEncoder:
    return HierarchicalEncoder(
        vocab_size,
        node_vocab_size,
        d_model=m.d_model,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        d_ff=m.d_ff,
        dropout=m.dropout,
        attention_dropout=m.attention_dropout,
        max_length=m.max_length,
        **m.attention_options,
    )


def check_depth(options: dict, arrays: TreeArrays, where: str) -> None:
    """A tree deeper than the hierarchical embeddings allow is an error naming ``where``,
    raised before any training, not when the first too-deep batch comes up."""
    if not options.get("hierarchical_embeddings", True):
        return
    limit = options.get("max_depth", DEFAULT_MAX_DEPTH)
    if arrays.paths.shape[1] > limit:
        raise ValueError(
            f"{where}: a token lies {arrays.paths.shape[1]} nodes deep, more than "
            f"model.attention_options.max_depth={limit}"
        )


def node_shares(weights: torch.Tensor, m: int) -> torch.Tensor:
    """(2, 2) mean share of node and leaf queries' attention on nodes and on leaves, over
    heads, from one layer's weights (H, m + n, m + n) of one sentence."""
    on_nodes = weights[..., :m].sum(-1).mean(0)  # (q,)
    rows = [on_nodes[:m].mean(), on_nodes[m:].mean()]
    return torch.stack([torch.stack([r, 1 - r]) for r in rows])


class HierarchicalView(MechanismView):
    """Leaves and phrase nodes attend together: the encoder returns its weights itself,
    and the page shows how they divide between nodes and words (Nguyen et al., Table 4)."""

    def encoder_attention(
        self,
        encoder: nn.Module,
        inputs: EncoderInputs,
        words: Callable[[], torch.Tensor | None],
    ) -> list[torch.Tensor]:
        return encoder.layer_weights(inputs, words())

    def panels(self, captured: Captures, sentence: SentenceView) -> list[Panel]:
        layers = sentence.top_layers
        return [
            Panel(
                "attention on phrase nodes and on words",
                ["node queries", "word queries"],
                ["on nodes", "on words"],
                [node_shares(sentence.attention[i], sentence.nodes) for i in layers],
                "mean share over heads and queries (Nguyen et al., Table 4)",
                layers=layers,
            )
        ]


plugins.mechanisms.register(
    EncoderEntry(
        "hierarchical",
        reads=frozenset({Reads.TREES}),
        module=HierarchicalEncoder,
        options=options_dataclass("hierarchical", HierarchicalEncoder),
        build=_build,
        output=TREE,
        check_tree=check_depth,
        capabilities=Capabilities(
            "hierarchical accumulation: the tree's nodes attend over their subtrees",
            view=HierarchicalView(),
            analyses=frozenset({ATTENTION_SHARES}),
        ),
    )
)
