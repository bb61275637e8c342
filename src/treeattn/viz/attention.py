"""Attention pictures, and how attention mass splits between phrase nodes and tokens.

Shapes: B batch, H heads, q queries, k keys. For the hierarchical encoder's
self-attention over the joint sequence [nodes; leaves], q = k = m + n (m nodes, n leaves).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib
import numpy as np
import torch

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402

SHARE_KEYS = ("leaf_to_node", "leaf_to_leaf", "node_to_node", "node_to_leaf")


def _as_numpy(weights: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(weights, torch.Tensor):
        return weights.detach().to("cpu", torch.float32).numpy()
    return np.asarray(weights, dtype=np.float32)


def plot_attention(
    weights: torch.Tensor | np.ndarray,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    path: str | Path,
    title: str | None = None,
    axes: tuple[str, str] = ("key", "query"),
) -> Path:
    """Heat map of one attention matrix (rows, columns): queries down, keys across, or
    whatever ``axes`` (across, down) name.

    Saved as PNG, or SVG when the suffix of ``path`` is ``.svg``; returns the path.
    """
    matrix = _as_numpy(weights)
    if matrix.ndim != 2:
        raise ValueError(f"expected a 2-D (rows, columns) matrix, got shape {matrix.shape}")
    rows, columns = matrix.shape
    if len(row_labels) != rows or len(column_labels) != columns:
        raise ValueError(
            f"{len(row_labels)} row and {len(column_labels)} column labels "
            f"for a {rows} x {columns} matrix"
        )
    path = Path(path)
    # About 0.3 in per cell, plus room for the labels and the colour bar.
    width = min(300.0, max(3.0, 0.3 * columns + 2.5))
    height = min(300.0, max(2.5, 0.3 * rows + 1.8))
    fig, ax = plt.subplots(figsize=(width, height), dpi=100)
    image = ax.imshow(matrix, cmap="viridis", vmin=0.0, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(columns), labels=list(column_labels), rotation=90, fontsize=8)
    ax.set_yticks(range(rows), labels=list(row_labels), fontsize=8)
    ax.set_xlabel(axes[0])
    ax.set_ylabel(axes[1])
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_priors(
    priors: Sequence[np.ndarray],
    words: Sequence[str],
    titles: Sequence[str],
    path: str | Path,
) -> Path:
    """Heat maps of several (n, n) matrices over the same words (a Tree Transformer's
    constituent prior at several layers), side by side on one 0-1 colour scale."""
    if not priors or len(priors) != len(titles):
        raise ValueError(f"{len(priors)} matrices for {len(titles)} titles")
    n = len(words)
    path = Path(path)
    size = min(12.0, max(2.5, 0.25 * n + 1.5))
    fig, axes = plt.subplots(
        1, len(priors), figsize=(size * len(priors), size), dpi=100, squeeze=False
    )
    for ax, matrix, title in zip(axes[0], priors, titles, strict=True):
        matrix = _as_numpy(matrix)
        if matrix.shape != (n, n):
            raise ValueError(f"a {matrix.shape} matrix for {n} words")
        image = ax.imshow(matrix, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_xticks(range(n), labels=list(words), rotation=90, fontsize=8)
        ax.set_yticks(range(n), labels=list(words), fontsize=8)
        ax.set_title(title)
    fig.colorbar(image, ax=list(axes[0]), fraction=0.02, pad=0.02)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def attention_share(
    weights: torch.Tensor | Sequence[torch.Tensor],
    node_mask: torch.Tensor,
    pad_mask: torch.Tensor | None = None,
) -> dict[str, float]:
    """Percentage of attention that leaf and node queries give to node and leaf keys.

    ``weights``: self-attention probabilities (B, H, q, q), or a list of them, one per
    layer (all of one shape). ``node_mask`` (B, q): True where position i is a phrase
    node, False where it is a leaf (token). ``pad_mask`` (B, q): True at padding; padded
    queries are left out and padded keys are not counted.

    Each query's mass on real keys is split into its node part and its leaf part, as
    percentages of that mass (so they sum to 100 even under dropout or if a little mass
    lands on padding). These are averaged over every (batch, layer, head, query) with a
    real query of the given type; layers and heads count equally. Returns
    ``leaf_to_node``, ``leaf_to_leaf``, ``node_to_node`` and ``node_to_leaf``; a pair is
    NaN when the batch has no query of its type. Queries with no mass on real keys are
    left out too.

    For ``HierarchicalAttention`` weights over [nodes; leaves]::

        node_mask = torch.cat([torch.ones_like(node_pad), torch.zeros_like(leaf_pad)], 1)
        pad_mask = torch.cat([node_pad, leaf_pad], 1)
    """
    if not isinstance(weights, torch.Tensor):
        # Layers side by side along heads: every head of every layer weighs the same.
        weights = torch.cat(list(weights), dim=1)
    if weights.dim() != 4 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"expected (B, H, q, q) self-attention weights, got {weights.shape}")
    probs = weights.detach().double()
    is_node = node_mask.to(probs.device, torch.bool)
    real = torch.ones_like(is_node) if pad_mask is None else ~pad_mask.to(probs.device, torch.bool)
    if is_node.shape != probs.shape[:1] + probs.shape[-1:] or real.shape != is_node.shape:
        raise ValueError(f"masks must be (B, q) = {(probs.shape[0], probs.shape[-1])}")
    # Key masks (B, 1, 1, k), broadcast over heads and queries.
    node_keys = (is_node & real)[:, None, None, :].to(probs.dtype)
    leaf_keys = (~is_node & real)[:, None, None, :].to(probs.dtype)
    to_node = (probs * node_keys).sum(-1)  # (B, H, q)
    to_leaf = (probs * leaf_keys).sum(-1)
    total = to_node + to_leaf
    counted = (real[:, None, :] & (total > 0)).expand_as(total)
    node_share = 100.0 * to_node / total.clamp(min=torch.finfo(probs.dtype).tiny)
    query_is_node = is_node[:, None, :].expand_as(total)

    out: dict[str, float] = {}
    for name, of_type in (("node", query_is_node), ("leaf", ~query_is_node)):
        chosen = counted & of_type
        count = int(chosen.sum())
        to_nodes = float(node_share[chosen].sum() / count) if count else float("nan")
        out[f"{name}_to_node"] = to_nodes
        out[f"{name}_to_leaf"] = 100.0 - to_nodes
    return {key: out[key] for key in SHARE_KEYS}
