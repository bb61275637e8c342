"""Unsupervised parsing with a trained Tree Transformer (Wang et al. 2019, Algorithm 1).

Each ``constituent`` layer l gives a link probability ``a^l_k`` between words k and k+1;
links only grow with depth. A sentence's tree is read top-down from the top layer: a span
splits at its weakest link; while that link is above ``threshold`` (0.8) the split is
taken from one layer lower instead, down to ``min_layer``, where the weakest link splits
the span whatever its strength. The result is a binary tree over the words.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from treeattn.attention.constituent import LINKS, ConstituentAttention, constituent_prior
from treeattn.data.batching import bucket_batches, pad_ids
from treeattn.data.vocab import Vocab
from treeattn.metrics.unsupervised import (
    gold_spans,
    left_branching_spans,
    nontrivial,
    project_spans,
    random_binary_spans,
    right_branching_spans,
    tree_spans,
    unlabeled_f1,
    word_mask,
)
from treeattn.tasks.trained import Trained, load_trained
from treeattn.trees import Tree
from treeattn.trees.tree import Span

THRESHOLD = 0.8
BASELINES = ("random", "left-branching", "right-branching")


def load_tree_transformer(checkpoint: str, device: str = "auto") -> Trained:
    saved = load_trained(checkpoint, device)
    if saved.cfg.model.attention != "constituent":
        raise ValueError(
            f"{checkpoint}: inducing trees needs a constituent-attention model, not "
            f"{saved.cfg.model.attention!r}"
        )
    return saved


@torch.no_grad()
def layer_links(model: nn.Module, tokens: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
    """(L, B, n-1) every constituent layer's links for a batch, bottom layer first."""
    found: list[torch.Tensor] = []

    def keep(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        found.append(inputs[2][LINKS].detach())  # the context this layer just wrote

    layers = [m for m in model.modules() if isinstance(m, ConstituentAttention)]
    if not layers:
        raise ValueError("the model has no constituent attention layer")
    handles = [layer.register_forward_hook(keep) for layer in layers]
    try:
        model(tokens, pad_mask)
    finally:
        for handle in handles:
            handle.remove()
    return torch.stack(found)


def encode_words(saved: Trained, words: Sequence[str]) -> list[int]:
    """Word ids as the model was trained to read them (lowercased when it was)."""
    lower = saved.cfg.data.lowercase
    return saved.task.vocab.encode([w.lower() if lower else w for w in words])


def sentence_priors(saved: Trained, words: Sequence[str]) -> list[np.ndarray]:
    """Every layer's constituent prior (n, n) for one sentence, bottom layer first."""
    if len(words) > saved.cfg.model.max_length:
        raise ValueError(f"{len(words)} words, more than max_length={saved.cfg.model.max_length}")
    tokens = torch.tensor([encode_words(saved, words)], device=saved.device)
    pad_mask = torch.zeros_like(tokens, dtype=torch.bool)
    links = layer_links(saved.model, tokens, pad_mask)[:, 0]  # (L, n-1)
    return [constituent_prior(layer[None])[0].cpu().numpy() for layer in links]


def induce_spans(links: np.ndarray, threshold: float = THRESHOLD, min_layer: int = 0) -> set[Span]:
    """The spans ``(start, end)`` of the binary tree Algorithm 1 reads from one sentence's
    links (L, n-1) (every span of two or more words, the whole sentence included)."""
    n_layers, n = links.shape[0], links.shape[1] + 1
    if not 0 <= min_layer < n_layers:
        raise ValueError(f"min_layer must lie in 0..{n_layers - 1}, got {min_layer}")
    spans: set[Span] = set()
    todo = [(0, n, n_layers - 1)] if n >= 2 else []
    while todo:
        start, end, layer = todo.pop()
        spans.add((start, end))
        inner = links[:, start : end - 1]  # the links inside the span, every layer
        weakest = int(inner[layer].argmin())
        while inner[layer, weakest] > threshold and layer > min_layer:
            layer -= 1
            weakest = int(inner[layer].argmin())
        split = start + weakest + 1
        todo.extend((i, j, layer) for i, j in ((start, split), (split, end)) if j - i >= 2)
    return spans


def spans_to_tree(words: Sequence[str], spans: set[Span], label: str = "X") -> Tree:
    """A tree over ``words`` whose phrases are ``spans``, each labeled ``label``; every word
    sits in a ``label`` bracket of its own, as treebank files want."""
    ordered = sorted(spans, key=lambda span: (span[0], -span[1]))
    spans_of_phrases = [(label, i, j) for i, j in ordered if j - i > 1]
    return Tree.from_spans(list(words), spans_of_phrases, tags=[label] * len(words))


def induce_trees(
    saved: Trained,
    sentences: Sequence[Sequence[str]],
    threshold: float = THRESHOLD,
    min_layer: int = 0,
    where: str = "text",
) -> list[Tree]:
    """One induced tree per sentence (words as given; the model reads them lowercased when
    it was trained so). A one-word sentence gives ``(X word)``."""
    for line, words in enumerate(sentences, start=1):
        if not words:
            raise ValueError(f"{where}: sentence {line} is empty")
        if len(words) > saved.cfg.model.max_length:
            raise ValueError(
                f"{where}: sentence {line} has {len(words)} words, more than the model's "
                f"max_length={saved.cfg.model.max_length}"
            )
    ids = [encode_words(saved, words) for words in sentences]
    lengths = [len(x) for x in ids]
    found: dict[int, Tree] = {}
    for indices in bucket_batches(lengths, saved.cfg.train.eval_max_tokens, shuffle=False):
        tokens, pad_mask = pad_ids([ids[i] for i in indices], Vocab.pad_id)
        links = layer_links(saved.model, tokens.to(saved.device), pad_mask.to(saved.device))
        links = links.cpu().numpy()
        for row, i in enumerate(indices):
            spans = induce_spans(links[:, row, : lengths[i] - 1], threshold, min_layer)
            found[i] = spans_to_tree(sentences[i], spans | {(0, lengths[i])})
    return [found[i] for i in range(len(sentences))]


PHRASE_TYPES = ("NP", "VP", "PP", "ADJP", "SBAR", "ADVP")


def score_induction(
    gold_trees: Sequence[Tree],
    predicted: Sequence[Tree],
    max_words: int | None = None,
    seed: int = 0,
) -> dict[str, object]:
    """Unlabeled F1 of induced trees against gold trees (``metrics.unsupervised``: words with
    a PTB word tag only, trivial spans out), next to random, left- and right-branching
    trees on the same sentences, and the recall of each gold phrase type.

    Gold trees must be free of traces (``load_ptb_sample(clean=True)``); ``predicted``
    trees cover every word of the gold trees (punctuation too);
    their spans are projected onto the kept words. ``max_words`` keeps only sentences of at
    most that many words after the removal (WSJ-10 style).
    """
    if len(gold_trees) != len(predicted):
        raise ValueError(f"{len(gold_trees)} gold trees but {len(predicted)} induced ones")
    rng = random.Random(seed)
    gold_sets, lengths = [], []
    by_method: dict[str, list[set[Span]]] = {m: [] for m in ("model", *BASELINES)}
    found = {label: 0 for label in PHRASE_TYPES}
    total = {label: 0 for label in PHRASE_TYPES}
    for gold_tree, tree in zip(gold_trees, predicted, strict=True):
        keep = word_mask(gold_tree)
        if len(keep) != len(tree):
            raise ValueError(
                f"an induced tree has {len(tree)} words where its gold tree has {len(keep)}"
            )
        n = sum(keep)
        if max_words is not None and n > max_words:
            continue
        gold = gold_spans(gold_tree)
        gold_sets.append(gold)
        lengths.append(n)
        by_method["model"].append(nontrivial(project_spans(tree_spans(tree), keep), n))
        by_method["random"].append(random_binary_spans(n, rng))
        by_method["left-branching"].append(left_branching_spans(n))
        by_method["right-branching"].append(right_branching_spans(n))
        pred = by_method["model"][-1]
        for label, start, end in gold_tree.spans():
            base = label.split("-")[0].split("=")[0]
            if base not in found:
                continue
            projected = nontrivial(project_spans({(start, end)}, keep), n)
            for span in projected:
                total[base] += 1
                found[base] += span in pred
    return {
        "sentences": len(gold_sets),
        "f1": {m: unlabeled_f1(gold_sets, spans) for m, spans in by_method.items()},
        "recall": {
            label: 100.0 * found[label] / total[label] if total[label] else None
            for label in PHRASE_TYPES
        },
        "phrases": total,
    }
