"""Labeled sentences as a model reads them: the encoder's inputs (token ids and what its
registry entry declares it reads) and the labels, encoded once, so that a training step
only pads and stacks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from treeattn.attention.tree_loss import TreeLoss
from treeattn.data.batching import pad_ids
from treeattn.data.sst import IGNORE_LABEL
from treeattn.data.vocab import Vocab
from treeattn.models.inputs import EncoderInputs, InputEncoder, PieceRows
from treeattn.models.registry import EncoderConfig, encoder_entry
from treeattn.tasks.sentences import LabeledSentence
from treeattn.trees.tensors import TreeArrays


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


@dataclass
class SentenceBatch:
    """A batch of labeled sentences: the encoder's typed ``inputs``, the class ids
    ``labels`` (B,), for phrase-level training the label of every node (B, m) and leaf
    (B, n) in ``node_targets`` and ``leaf_targets`` (-1: no label), and for a tree loss
    (``models.tree_loss``) the targets its ``collate`` made of the sentences' trees."""

    inputs: EncoderInputs
    labels: torch.Tensor
    node_targets: torch.Tensor | None = None
    leaf_targets: torch.Tensor | None = None
    tree_targets: Any = None

    def to(self, device: torch.device | str) -> SentenceBatch:
        def move(x: torch.Tensor | None) -> torch.Tensor | None:
            return None if x is None else x.to(device)

        return SentenceBatch(
            self.inputs.to(device),
            self.labels.to(device),
            move(self.node_targets),
            move(self.leaf_targets),
            None if self.tree_targets is None else self.tree_targets.to(device),
        )


def input_encoder(
    m: EncoderConfig, node_vocab: Vocab | None = None, piece_rows: PieceRows | None = None
) -> InputEncoder:
    """What the encoder of the model section ``m`` reads, as its registry entry declares;
    ``piece_rows``: the tokenizer of the pretrained backbone it is on (``model.backbone``,
    ``PieceSplitter.rows``), if any."""
    entry = encoder_entry(m.attention, backbone=piece_rows is not None)
    check = entry.check_tree
    return InputEncoder(
        entry.reads,
        node_vocab,
        None
        if check is None
        else (lambda arrays, where: check(m.attention_options, arrays, where)),
        piece_rows,
    )


class EncodedSet:
    """A data set's sentences encoded once for an encoder (``InputEncoder``: token ids, and
    what else it reads), so that a training step only pads and stacks.

    Batches are bounded by tokens plus phrase nodes. ``labels``: the class id of each
    example, where its ``label`` is not one already. ``tree_loss``: a loss on hidden
    states from each sentence's tree (``models.tree_loss``), whose targets are made here
    for every sentence that has a tree; a batch carries them where all its sentences do;
    ``tree_around``: each sentence's tokens that are no word of its tree.
    """

    def __init__(
        self,
        examples: Sequence[LabeledSentence],
        vocab: Vocab,
        inputs: InputEncoder,
        where: str = "data",
        labels: Sequence[int] | None = None,
        tree_loss: TreeLoss | None = None,
        tree_around: int = 0,
    ) -> None:
        self.words = [ex.tokens for ex in examples]
        self.inputs = inputs
        self.items = [
            inputs.sentence(
                vocab.encode(ex.tokens), ex.tree, ex.tokens, f"{where}: sentence {i + 1}"
            )
            for i, ex in enumerate(examples)
        ]
        if labels is None:
            labels = [ex.label for ex in examples]
        self.labels = torch.tensor(labels, dtype=torch.long)
        self.lengths = [len(item.ids) + item.n_nodes for item in self.items]
        self.targets = [
            _phrase_targets(ex.phrase_labels, item.tree)
            for ex, item in zip(examples, self.items, strict=True)
            if ex.phrase_labels and item.tree is not None
        ]
        if self.targets and len(self.targets) != len(examples):
            raise ValueError(f"{where}: some sentences have phrase labels and some have none")
        self.tree_loss = tree_loss
        self.tree_targets = (
            [
                _tree_targets(tree_loss, ex, f"{where}: sentence {i + 1}", tree_around)
                for i, ex in enumerate(examples)
            ]
            if tree_loss is not None
            else []
        )

    def __len__(self) -> int:
        return len(self.items)

    def batch(self, indices: Sequence[int]) -> SentenceBatch:
        inputs = self.inputs.batch([self.items[i] for i in indices])
        batch = SentenceBatch(inputs, self.labels[list(indices)])
        if self.targets:
            batch.node_targets, _ = pad_ids([self.targets[i][0] for i in indices], IGNORE_LABEL)
            batch.leaf_targets, _ = pad_ids([self.targets[i][1] for i in indices], IGNORE_LABEL)
        if self.tree_targets:
            chosen = [self.tree_targets[i] for i in indices]
            if all(item is not None for item in chosen):
                batch.tree_targets = self.tree_loss.collate(chosen)
        return batch


def _tree_targets(
    tree_loss: TreeLoss, example: LabeledSentence, where: str, around: int = 0
) -> Any:
    """A tree loss's targets of one sentence, None where it has no tree; ``around``: the
    sentence's tokens that are no word of its tree (a language model's ``<s>``, ``</s>``)."""
    if example.tree is None:
        return None
    n_leaves = len(example.tree.leaves())
    if n_leaves != len(example.tokens) - around:
        raise ValueError(
            f"{where}: its tree has {n_leaves} words but the sentence has "
            f"{len(example.tokens) - around}"
        )
    return tree_loss.targets(example.tree, where)


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
