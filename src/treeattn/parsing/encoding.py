"""Sentences as the network reads them: word and character ids around start and stop
tokens, in batches with the gold tags, arcs, relations and span charts they have."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import torch

from treeattn.data.batching import pad_ids
from treeattn.parsing.examples import ParseExample
from treeattn.parsing.network import output_ids
from treeattn.parsing.vocab import IGNORE, START, STOP, LabelSet, ParserVocab
from treeattn.trees import Tree
from treeattn.trees.transforms import chain_spans


@dataclass
class ParseBatch:
    words: torch.Tensor  # (B, T) with start and stop tokens
    chars: torch.Tensor  # (B, T, C)
    pad_mask: torch.Tensor  # (B, T)
    lengths: torch.Tensor  # (B,) words
    tags: torch.Tensor  # (B, n) the tagger's outputs, IGNORE at padding and unknown tags
    heads: torch.Tensor | None = None  # (B, n), IGNORE in sentences without dependencies
    rels: torch.Tensor | None = None  # (B, n) the relation classifier's outputs, likewise
    gold_chart: torch.Tensor | None = None  # (B, n, n, L), 0/1
    # (B,) which sentences have a gold constituency tree (their charts alone are gold);
    # with ``gold_chart`` only.
    has_tree: torch.Tensor | None = None
    # Each sentence's words, for a pretrained backbone (which splits them into its own
    # pieces); moved to no device.
    sentences: list[list[str]] | None = None

    def to(self, device: torch.device) -> ParseBatch:
        def move(x: Any) -> Any:
            return x if x is None or isinstance(x, list) else x.to(device)

        return ParseBatch(*(move(getattr(self, f.name)) for f in fields(self)))


class ParseSet:
    """Sentences encoded once; batches build the gold charts of the sentences they hold."""

    def __init__(self, examples: Sequence[ParseExample], vocab: ParserVocab) -> None:
        self.examples = list(examples)
        self.lengths = [len(ex.words) + 2 for ex in examples]
        self.constituency = vocab.constituency
        self.n_labels = len(vocab.labels)
        self.words = [torch.tensor(vocab.words.encode([START, *ex.words, STOP])) for ex in examples]
        self.chars = [encode_chars(ex.words, vocab) for ex in examples]
        self.tags = [output_ids(torch.tensor(vocab.tags.encode(ex.tags))) for ex in examples]
        spans = [gold_spans(ex.tree, vocab.labels) for ex in examples]
        self.spans = [None if item is None else torch.tensor(item).view(-1, 3) for item in spans]
        self.heads = [
            torch.tensor(ex.dependencies.heads) if ex.dependencies else None for ex in examples
        ]
        self.rels = [
            output_ids(torch.tensor(vocab.rels.encode(ex.dependencies.relations)))
            if ex.dependencies
            else None
            for ex in examples
        ]

    def __len__(self) -> int:
        return len(self.examples)

    def batch(self, indices: Sequence[int]) -> ParseBatch:
        words, pad_mask = pad_ids([self.words[i] for i in indices])
        width = max(c.shape[1] for i in indices for c in [self.chars[i]])
        chars = torch.zeros(*words.shape, width, dtype=torch.long)
        for row, i in enumerate(indices):
            chars[row, : self.chars[i].shape[0], : self.chars[i].shape[1]] = self.chars[i]
        tags, _ = pad_ids([self.tags[i] for i in indices], IGNORE)
        lengths = torch.tensor([self.lengths[i] - 2 for i in indices])
        batch = ParseBatch(words, chars, pad_mask, lengths, tags)
        batch.sentences = [list(self.examples[i].words) for i in indices]
        # A batch may mix sentences with and without each annotation (joint training): a
        # sentence without dependencies has IGNORE heads and relations, one without a tree
        # is left out of the chart's loss by ``has_tree``; each loss sees its own alone.
        if any(self.heads[i] is not None for i in indices):
            batch.heads = pad_ids([self._or_ignored(self.heads, i) for i in indices], IGNORE)[0]
            batch.rels = pad_ids([self._or_ignored(self.rels, i) for i in indices], IGNORE)[0]
        has_tree = [self.spans[i] is not None for i in indices]
        if self.constituency and any(has_tree):
            spans = [self.spans[i] if self.spans[i] is not None else [] for i in indices]
            batch.gold_chart = gold_chart(spans, lengths, self.n_labels)
            batch.has_tree = torch.tensor(has_tree)
        return batch

    def _or_ignored(self, rows: list[torch.Tensor | None], i: int) -> torch.Tensor:
        """Sentence ``i``'s row of ``rows``, or IGNORE for each of its words when it has none."""
        row = rows[i]
        return row if row is not None else torch.full((self.lengths[i] - 2,), IGNORE)


def encode(examples: Sequence[ParseExample], vocab: ParserVocab) -> ParseSet:
    """``examples`` encoded once, for batches of any of them."""
    return ParseSet(examples, vocab)


def encode_chars(words: Sequence[str], vocab: ParserVocab) -> torch.Tensor:
    """(n + 2, C) character ids of the start token, the words and the stop token."""
    chars = vocab.chars
    rows = [[chars.index.get(START, chars.unk_id)]]
    rows += [chars.encode(list(word)) for word in words]
    rows += [[chars.index.get(STOP, chars.unk_id)]]
    width = max(len(row) for row in rows)
    # One tensor from padded lists: a tensor a word costs more than the padding.
    return torch.tensor([row + [0] * (width - len(row)) for row in rows])


def gold_spans(tree: Tree | None, labels: LabelSet) -> list[tuple[int, int, int]] | None:
    """(label id in the chart, start, end) of the gold tree's phrases; labels unseen in
    training are left out (they can be scored by EVALB, never predicted)."""
    if tree is None:
        return None
    return [
        (labels.index[label], start, end)
        for label, start, end in chain_spans(tree)
        if label in labels.index
    ]


def gold_chart(
    span_lists: Sequence[Sequence[tuple[int, int, int]]], lengths: torch.Tensor, n_labels: int
) -> torch.Tensor:
    """(B, n, n, L) 0/1: each gold span (label id, start, end exclusive) in its cell, and
    the empty label (id 0) in every other cell of a sentence."""
    n = int(lengths.max())
    chart = torch.zeros(len(span_lists), n, n, n_labels)
    cells = torch.ones(n, n, dtype=torch.bool).triu()
    inside = torch.arange(n)[None, :] < lengths[:, None]
    chart[..., 0] = (cells & inside[:, :, None] & inside[:, None, :]).float()
    spans = [torch.as_tensor(item, dtype=torch.long).view(-1, 3) for item in span_lists]
    label, start, end = torch.cat(spans).unbind(1)
    batch = torch.repeat_interleave(torch.tensor([len(item) for item in spans]))
    chart[batch, start, end - 1, 0] = 0
    chart[batch, start, end - 1, label] = 1
    return chart
