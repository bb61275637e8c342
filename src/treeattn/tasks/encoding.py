"""Sentences as a model reads them: token ids, and for tree models tree arrays and node
labels, or for ``distance`` attention the gaps' syntactic distances; encoded once, so that a
training step only pads and stacks."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from treeattn.attention.distance import GAPS, gap_distances
from treeattn.attention.hierarchical import DEFAULT_MAX_DEPTH
from treeattn.data.batching import TokenBatch, pad_ids
from treeattn.data.sst import IGNORE_LABEL
from treeattn.data.vocab import Vocab
from treeattn.tasks.encoders import TREE_ENCODERS, EncoderConfig, uses_distances, uses_trees
from treeattn.tasks.sentences import LabeledSentence
from treeattn.trees import Tree, binarize
from treeattn.trees.lnr import to_lnr
from treeattn.trees.tensors import TreeArrays, collate_trees, encode_tree


def check_lengths(examples: Sequence[LabeledSentence], max_length: int, where: str) -> None:
    """Over-long sentences are an error, never truncated."""
    for i, ex in enumerate(examples):
        if len(ex.tokens) > max_length:
            raise ValueError(
                f"{where}: sentence {i + 1} has {len(ex.tokens)} tokens, more than "
                f"model.max_length={max_length}; raise model.max_length"
            )
        if not ex.tokens:
            raise ValueError(f"{where}: sentence {i + 1} is empty")


def node_labels(example: LabeledSentence, binary: bool) -> tuple[str, ...]:
    """The labels of the nodes a tree model sees for ``example``, in pre-order."""
    return to_lnr(_model_tree(example, binary)).labels


def _model_tree(example: LabeledSentence, binary: bool) -> Tree:
    if example.tree is None:
        raise ValueError("tree models need data with trees")
    return binarize(example.tree) if binary else example.tree


class EncodedSet:
    """A data set's token ids, and for tree models its tree arrays, encoded once so that a
    training step only pads and stacks.

    Tree models pass ``node_vocab`` (node label ids) and ``binary`` (binarise the trees
    first); ``where`` names the data in errors. Batches are bounded by leaves + nodes.
    ``distances`` keeps each tree's gap distances instead, for the ``distance`` mechanism.
    ``labels``: the class id of each example, where its ``label`` is not one already.
    """

    def __init__(
        self,
        examples: Sequence[LabeledSentence],
        vocab: Vocab,
        node_vocab: Vocab | None = None,
        binary: bool = False,
        where: str = "data",
        distances: bool = False,
        labels: Sequence[int] | None = None,
    ) -> None:
        self.words = [ex.tokens for ex in examples]
        self.ids = [torch.tensor(vocab.encode(ex.tokens), dtype=torch.long) for ex in examples]
        if labels is None:
            labels = [ex.label for ex in examples]
        self.labels = torch.tensor(labels, dtype=torch.long)
        self.lengths = [len(ids) for ids in self.ids]
        self.node_vocab = node_vocab
        self.gaps = (
            [_gaps(ex, f"{where}: sentence {i + 1}") for i, ex in enumerate(examples)]
            if distances
            else []
        )
        if node_vocab is None:
            return
        self.trees: list[TreeArrays] = []
        self.node_ids: list[torch.Tensor] = []
        self.targets: list[tuple[torch.Tensor, torch.Tensor]] = []
        for i, ex in enumerate(examples):
            lnr, arrays = encode_tree(
                _model_tree(ex, binary), ex.tokens, where=f"{where}: sentence {i + 1}"
            )
            self.trees.append(arrays)
            self.node_ids.append(torch.tensor(node_vocab.encode(lnr.labels), dtype=torch.long))
            self.lengths[i] += arrays.n_nodes
            if ex.phrase_labels:
                self.targets.append(_phrase_targets(ex.phrase_labels, arrays))
        if self.targets and len(self.targets) != len(examples):
            raise ValueError(f"{where}: some sentences have phrase labels and some have none")

    def __len__(self) -> int:
        return len(self.ids)

    def batch(self, indices: Sequence[int]) -> TokenBatch:
        tokens, pad_mask = pad_ids([self.ids[i] for i in indices], Vocab.pad_id)
        batch = TokenBatch(tokens, pad_mask, self.labels[list(indices)])
        if self.gaps:
            # Gaps past a sentence's end (0) can only stretch a range into padding,
            # whose keys are masked.
            batch.context = {GAPS: pad_ids([self.gaps[i] for i in indices])[0]}
        if self.node_vocab is None:
            return batch
        trees = collate_trees([self.trees[i] for i in indices])
        node_ids, _ = pad_ids([self.node_ids[i] for i in indices], Vocab.pad_id)
        batch.context = {"trees": trees, "node_labels": node_ids}
        if self.targets:
            batch.node_targets, _ = pad_ids([self.targets[i][0] for i in indices], IGNORE_LABEL)
            batch.leaf_targets, _ = pad_ids([self.targets[i][1] for i in indices], IGNORE_LABEL)
        return batch


def _gaps(example: LabeledSentence, where: str) -> torch.Tensor:
    if example.tree is None:
        raise ValueError(f"{where}: distance attention needs data with trees")
    gaps = gap_distances([example.tree])
    if len(gaps) != len(example.tokens) - 1:
        raise ValueError(
            f"{where}: its tree has {len(gaps) + 1} words but the sentence has "
            f"{len(example.tokens)} tokens"
        )
    return torch.tensor(gaps, dtype=torch.long)


def encode_split(
    m: EncoderConfig,
    examples: Sequence[LabeledSentence],
    vocab: Vocab,
    node_vocab: Vocab | None,
    where: str,
    labels: Sequence[int] | None = None,
) -> EncodedSet:
    """``examples`` encoded for the encoder ``m`` (with trees for tree models)."""
    if not uses_trees(m):
        return EncodedSet(examples, vocab, where=where, distances=uses_distances(m), labels=labels)
    binary = TREE_ENCODERS[m.attention][1]
    encoded = EncodedSet(examples, vocab, node_vocab, binary=binary, where=where, labels=labels)
    for i, arrays in enumerate(encoded.trees):
        check_depth(m, arrays, f"{where}: sentence {i + 1}")
    return encoded


def check_depth(m: EncoderConfig, arrays: TreeArrays, where: str) -> None:
    """A tree deeper than the hierarchical embeddings allow is an error naming ``where``,
    raised before any training, not when the first too-deep batch comes up."""
    options = m.attention_options
    if m.attention != "hierarchical" or not options.get("hierarchical_embeddings", True):
        return
    limit = options.get("max_depth", DEFAULT_MAX_DEPTH)
    if arrays.paths.shape[1] > limit:
        raise ValueError(
            f"{where}: a token lies {arrays.paths.shape[1]} nodes deep, more than "
            f"model.attention_options.max_depth={limit}"
        )


def _phrase_targets(
    phrases: Sequence[tuple[int, int, int]], arrays: TreeArrays
) -> tuple[torch.Tensor, torch.Tensor]:
    """The label of every node (by its span) and every leaf (the span of its one word).

    Phrases and nodes both come in pre-order. A unary chain shares one span: its k-th node
    takes the span's k-th label, and a word takes the label left over below the nodes over
    it, its collapsed pre-terminal's.
    """
    by_span: dict[tuple[int, int], list[int]] = {}
    for start, end, label in phrases:
        by_span.setdefault((start, end), []).append(label)
    used: dict[tuple[int, int], int] = {}
    nodes = []
    for span in zip(arrays.node_start.tolist(), arrays.node_end.tolist(), strict=True):
        labels, k = by_span.get(span, []), used.get(span, 0)
        nodes.append(labels[k] if k < len(labels) else IGNORE_LABEL)
        used[span] = k + 1
    leaves = []
    for j in range(arrays.n_leaves):
        labels, k = by_span.get((j, j + 1), []), used.get((j, j + 1), 0)
        leaves.append(labels[k] if k < len(labels) else IGNORE_LABEL)
    return torch.tensor(nodes, dtype=torch.long), torch.tensor(leaves, dtype=torch.long)
