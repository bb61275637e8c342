"""The latent trees of a trained structured-attention model.

Each layer and head of ``structured`` attention scores a dependency tree over every
sentence; here each sentence's best tree is decoded, single root, in the model's own family
of trees (Chu-Liu-Edmonds for non-projective models, Eisner for projective ones), and the
trees are described as Liu & Lapata (2018, §6) describe theirs: how deep they are and how
many are non-projective.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from treeattn.analysis.capture import layer_captures
from treeattn.analysis.loading import load_for
from treeattn.attention.registry import LATENT_TREES
from treeattn.data.batching import bucket_batches
from treeattn.tasks.sentences import LabeledSentence
from treeattn.tasks.trained import Trained
from treeattn.trees.dependency import DependencyTree, read_conllu, write_conllu


def load_structured(checkpoint: str, device: str = "auto") -> Trained:
    """A trained model whose mechanism has latent trees (``LATENT_TREES``)."""
    return load_for(checkpoint, LATENT_TREES, device)


def tree_depth(heads: Sequence[int]) -> int:
    """Arcs on the longest path from the root to a word; ``heads[i]`` is word i+1's head
    (0 = root), as in ``DependencyTree``. A word on the root has depth 1."""
    parents = np.asarray([0, *heads])
    depth = np.zeros(len(parents), dtype=np.int64)
    node = np.arange(len(parents))
    # Climb every word at once, one level per step: at most n steps for a chain.
    while (node != 0).any():
        climbing = node != 0
        depth += climbing
        node = np.where(climbing, parents[node], 0)
    return int(depth.max())


def tree_statistics(trees: Sequence[Sequence[int]]) -> dict[str, float]:
    """Mean length, mean depth and percentage of non-projective trees among head lists."""
    if not trees:
        raise ValueError("no trees to describe")
    projective = [DependencyTree(["_"] * len(h), h).is_projective() for h in trees]
    return {
        "trees": len(trees),
        "mean_length": float(np.mean([len(h) for h in trees])),
        "mean_depth": float(np.mean([tree_depth(h) for h in trees])),
        "non_projective": 100.0 * (1 - float(np.mean(projective))),
    }


@torch.no_grad()
def latent_trees(
    saved: Trained, examples: list[LabeledSentence], where: str
) -> list[list[list[list[int]]]]:
    """``trees[layer][head][k]``: the heads of sentence k's best latent tree (``examples``
    order), as ``DependencyTree.heads`` (0 = root)."""
    encoded = saved.encode(examples, where)
    trees: list[list[list[list[int] | None]]] = []
    for indices in bucket_batches(encoded.lengths, saved.cfg.train.eval_max_tokens, shuffle=False):
        batch = encoded.batch(indices).to(saved.device)
        found = layer_captures(saved.model, lambda batch=batch: saved.model(batch.inputs))
        found = [captured["best_heads"] for captured in found if "best_heads" in captured]
        if not found:
            raise ValueError(f"{where}: the model has no layer with latent trees")
        lengths = (~batch.inputs.pad_mask).sum(1)
        for layer, heads in enumerate(found):  # (B, H, n+1) each head's best tree
            heads = heads.tolist()
            if len(trees) <= layer:
                trees.append([[None] * len(examples) for _ in range(len(heads[0]))])
            for row, k in enumerate(indices):
                for head, tree in enumerate(heads[row]):
                    trees[layer][head][k] = tree[1 : int(lengths[row]) + 1]
    return trees


@dataclass(frozen=True)
class TreeTable:
    """``tree_statistics`` of groups of trees, one named row each."""

    data: str
    sentences: int
    rows: list[tuple[str, dict[str, float]]]

    def format(self) -> str:
        lines = [
            f"latent trees of {self.data}, {self.sentences} sentences",
            f"{'trees':<24} {'count':>6} {'length':>7} {'depth':>6} {'non-proj %':>11}",
        ]
        lines += [
            f"{name:<24} {row['trees']:>6} {row['mean_length']:>7.1f} "
            f"{row['mean_depth']:>6.2f} {row['non_projective']:>11.1f}"
            for name, row in self.rows
        ]
        return "\n".join(lines)


def latent_tree_table(
    trees: list[list[list[list[int]]]], where: str, compare: str | Path | None = None
) -> TreeTable:
    """A row for each layer and head of ``latent_trees``, and one for the trees of the
    CoNLL-U file ``compare`` (e.g. a treebank's gold trees) when given."""
    rows = [
        (f"layer {layer} head {head}", tree_statistics(heads))
        for layer, per_head in enumerate(trees, start=1)
        for head, heads in enumerate(per_head, start=1)
    ]
    if compare is not None:
        gold = read_conllu(compare)  # the one CoNLL-U rule: one root a sentence
        rows.append((Path(compare).name, tree_statistics([t.heads for t in gold])))
    return TreeTable(where, len(trees[0][0]), rows)


def write_latent_trees(
    path: str | Path, examples: list[LabeledSentence], heads: list[list[int]]
) -> None:
    """One layer and head's latent trees (``latent_trees(...)[layer][head]``) as CoNLL-U."""
    write_conllu(
        path, [DependencyTree(ex.tokens, h) for ex, h in zip(examples, heads, strict=True)]
    )
