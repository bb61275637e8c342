"""Looking inside a trained hierarchical model: one sentence's tree and attention map, and
how its attention divides between phrase nodes and tokens over a whole split (the
analogue of Nguyen et al.'s Table 4)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from treeattn.analysis.loading import load_for
from treeattn.attention.registry import ATTENTION_SHARES
from treeattn.data.batching import bucket_batches
from treeattn.models.registry import TREE, EncoderEntry, encoder_entry, encoder_names
from treeattn.tasks.sentences import LabeledSentence
from treeattn.tasks.trained import Trained, load_trained
from treeattn.trees.lnr import to_lnr
from treeattn.viz.attention import SHARE_KEYS, attention_share, plot_attention
from treeattn.viz.trees import draw_tree


def load_hierarchical(checkpoint: str | Path, device: str = "auto") -> Trained:
    """A trained model whose mechanism attends over phrase nodes (``ATTENTION_SHARES``)."""
    return load_for(checkpoint, ATTENTION_SHARES, device)


@dataclass(frozen=True)
class AttentionShares:
    """Mean percentage of attention from node and leaf queries to node and leaf keys."""

    data: str
    sentences: int
    node_to_node: float
    node_to_leaf: float
    leaf_to_node: float
    leaf_to_leaf: float

    def format(self) -> str:
        lines = [
            f"attention share (%) over {self.data}, {self.sentences} sentences",
            f"{'query':<6} {'to nodes':>9} {'to leaves':>10}",
            f"{'node':<6} {self.node_to_node:>9.1f} {self.node_to_leaf:>10.1f}",
            f"{'leaf':<6} {self.leaf_to_node:>9.1f} {self.leaf_to_leaf:>10.1f}",
        ]
        return "\n".join(lines)


@torch.no_grad()
def attention_shares(
    saved: Trained, examples: list[LabeledSentence], where: str
) -> AttentionShares:
    """Mean percentage of attention from leaf and node queries to node and leaf keys, over
    every layer, head and real query of ``examples`` (from ``saved.read``)."""
    encoded = saved.encode(examples, where)
    totals = dict.fromkeys(SHARE_KEYS, 0.0)
    counts = {"leaf": 0, "node": 0}
    for indices in bucket_batches(encoded.lengths, saved.cfg.train.eval_max_tokens, shuffle=False):
        batch = encoded.batch(indices).to(saved.device)
        trees = batch.inputs.trees
        node_pad, leaf_pad = trees.node_pad_mask, trees.leaf_pad_mask
        node_mask = torch.cat([torch.ones_like(node_pad), torch.zeros_like(leaf_pad)], 1)
        share = attention_share(
            saved.model.encoder.layer_weights(batch.inputs),
            node_mask,
            torch.cat([node_pad, leaf_pad], 1),
        )
        # Batches differ in size: weight each by its number of queries of each kind.
        batch_counts = {"node": int((~node_pad).sum()), "leaf": int((~leaf_pad).sum())}
        for key in SHARE_KEYS:
            kind = key.split("_")[0]
            totals[key] += share[key] * batch_counts[kind]
        for kind in counts:
            counts[kind] += batch_counts[kind]
    shares = {key: totals[key] / max(1, counts[key.split("_")[0]]) for key in SHARE_KEYS}
    return AttentionShares(where, len(examples), **shares)


@torch.no_grad()
def draw_sentence(
    saved: Trained,
    examples: list[LabeledSentence],
    where: str,
    index: int,
    out: str | Path,
    layer: int = -1,
) -> dict[str, Path]:
    """Sentence ``index`` (from 1) of ``examples``: its tree, and the attention map of
    ``layer`` (averaged over heads) over [nodes; leaves], as PNGs in ``out``."""
    if not 1 <= index <= len(examples):
        raise ValueError(f"{where}: sentence {index} does not exist (1-{len(examples)})")
    example = examples[index - 1]
    encoded = saved.encode([example], f"{where}: sentence {index}")
    batch = encoded.batch([0]).to(saved.device)
    weights = saved.model.encoder.layer_weights(batch.inputs)
    if not -len(weights) <= layer < len(weights):
        raise ValueError(f"layer {layer} does not exist; the model has {len(weights)}")
    lnr = to_lnr(example.tree)
    # Nodes are named by their label and span of words, so that repeated labels stay apart.
    arrays = encoded.items[0].tree
    spans = zip(arrays.node_start.tolist(), arrays.node_end.tolist(), strict=True)
    nodes = [f"{label} {s}-{e}" for label, (s, e) in zip(lnr.labels, spans, strict=True)]
    labels = nodes + list(lnr.leaves)
    out = Path(out)
    number = layer % len(weights) + 1
    attention = plot_attention(
        weights[layer][0].mean(0),
        labels,
        labels,
        out / f"attention-{index}-layer{number}.png",
        title=f"{where} sentence {index}: layer {number}, mean over heads",
    )
    tree = draw_tree(example.tree, out / f"tree-{index}.png", title=" ".join(example.tokens))
    return {"tree": tree, "attention": attention}


@dataclass(frozen=True)
class LayerShares:
    """One decoder layer's mean cross-attention on phrase nodes and on leaves, and the share
    of nodes among the keys (percentages)."""

    layer: int
    nodes: float
    leaves: float
    keys: float


@dataclass(frozen=True)
class CrossAttentionShares:
    data: str
    sentences: int
    words: int
    layers: list[LayerShares]

    def format(self) -> str:
        lines = [
            f"{self.data}: {self.sentences} sentences, {self.words} target words",
            f"{'layer':<6} {'nodes %':>8} {'leaves %':>9} {'nodes among keys %':>19}",
        ]
        lines += [
            f"{row.layer:<6} {row.nodes:>8.1f} {row.leaves:>9.1f} {row.keys:>19.1f}"
            for row in self.layers
        ]
        return "\n".join(lines)


def tree_encoders() -> list[str]:
    """The encoders a translation decoder reads as leaves and phrase nodes."""
    return [name for name in encoder_names() if _decoder_reads_nodes(encoder_entry(name))]


def _decoder_reads_nodes(entry: EncoderEntry) -> bool:
    return entry.output == TREE and entry.module.cross_attention is not None


@torch.no_grad()
def cross_attention_shares(checkpoint: str | Path, source: str) -> CrossAttentionShares:
    """For a translation model with the hierarchical encoder: per decoder layer, the mean
    percentage of cross-attention on phrase nodes and on leaves, over heads and every
    reference word of ``source`` (a split or file prefix) read with teacher forcing, and
    the mean percentage of nodes among the keys each word sees (uniform attention's share).
    """
    saved = load_trained(checkpoint)
    name = saved.cfg.model.attention
    if saved.cfg.task != "translate" or not _decoder_reads_nodes(encoder_entry(name)):
        raise ValueError(
            f"{checkpoint}: cross-attention on phrase nodes needs a translation model whose "
            f"encoder gives phrase nodes ({' or '.join(tree_encoders())}), not a "
            f"{saved.cfg.task} model with {name!r}"
        )
    pairs, where = saved.read(source)
    data = saved.encode(pairs, where)
    layers = saved.cfg.model.decoder_layers or saved.cfg.model.n_layers
    on_nodes, on_keys = [0.0] * layers, 0.0
    words = 0
    for indices in bucket_batches(data.lengths, saved.cfg.train.eval_max_tokens, shuffle=False):
        batch = data.batch(indices).to(saved.device)
        record: list[torch.Tensor] = []
        saved.model(batch.inputs, batch.targets[:, :-1], record)
        real = batch.targets[:, 1:] != 0  # (B, t) the reference words (end word included)
        trees = batch.inputs.trees
        m = trees.node_pad_mask.shape[1]
        for layer, weights in enumerate(record):  # (B, H, t, m + n), nodes first
            share = weights[..., :m].sum(-1).mean(1)  # (B, t)
            on_nodes[layer] += float(share[real].sum())
        nodes = (~trees.node_pad_mask).sum(1)
        keys = nodes + (~trees.leaf_pad_mask).sum(1)
        on_keys += float(((nodes / keys)[:, None] * real).sum())
        words += int(real.sum())
    rows = [
        LayerShares(
            layer + 1,
            nodes=100 * on_nodes[layer] / words,
            leaves=100 - 100 * on_nodes[layer] / words,
            keys=100 * on_keys / words,
        )
        for layer in range(layers)
    ]
    return CrossAttentionShares(where, len(data), words, rows)
