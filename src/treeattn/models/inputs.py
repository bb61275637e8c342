"""Sentences as an encoder reads them: token ids and whatever its registry entry declares
it ``reads`` (gap distances, a constituency tree with its phrase nodes, the binarized
tree), encoded once per sentence so that a batch only pads and stacks.

``InputEncoder`` makes each sentence's tensors (``SentenceInputs``) and batches them into
the typed ``EncoderInputs`` every registered encoder takes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import torch

from treeattn.attention.registry import Reads
from treeattn.data.batching import pad_ids
from treeattn.data.vocab import Vocab
from treeattn.models.pieces import PieceBatch, SentenceTooLong, piece_batch
from treeattn.trees import Tree, binarize
from treeattn.trees.distance import gap_distances
from treeattn.trees.tensors import TreeArrays, TreeTensors, collate_trees, encode_tree
from treeattn.trees.tensors import split_subwords as split_tree

# A tokenizer of sentences into a backbone's pieces: each sentence's ids and piece owners.
PieceRows = Callable[[Sequence[Sequence[str]]], list[tuple[list[int], list[int]]]]
SUBWORD_NODE = "WORD"  # the node over a word's pieces where the tree gives it no tag


@dataclass
class EncoderInputs:
    """A batch as an encoder reads it. ``tokens`` (B, n) ids and ``pad_mask`` (B, n), True
    at padding; ``gaps`` (B, n-1) gap distances; ``trees`` the tree tensors and
    ``node_labels`` (B, m) the phrase nodes' label ids; ``pieces`` the words as a
    pretrained backbone's pieces. What the encoder does not read is ``None``."""

    tokens: torch.Tensor
    pad_mask: torch.Tensor
    gaps: torch.Tensor | None = None
    trees: TreeTensors | None = None
    node_labels: torch.Tensor | None = None
    pieces: PieceBatch | None = None

    def to(self, device: torch.device | str) -> EncoderInputs:
        return EncoderInputs(
            self.tokens.to(device),
            self.pad_mask.to(device),
            None if self.gaps is None else self.gaps.to(device),
            None if self.trees is None else self.trees.to(device),
            None if self.node_labels is None else self.node_labels.to(device),
            None if self.pieces is None else self.pieces.to(device),
        )

    def context(self) -> dict:
        """The inputs a token-level attention mechanism reads, by their ``Reads`` key."""
        return {} if self.gaps is None else {Reads.GAPS: self.gaps}

    def with_tokens(self, tokens: torch.Tensor) -> EncoderInputs:
        """The same batch with other token ids (masked words, say)."""
        return replace(self, tokens=tokens)


@dataclass
class SentenceInputs:
    """One sentence's tensors: token ids (n,), gap distances (n-1,), tree arrays, node
    label ids (m,) and a backbone's pieces."""

    ids: torch.Tensor
    gaps: torch.Tensor | None = None
    tree: TreeArrays | None = None
    node_ids: torch.Tensor | None = None
    piece_ids: torch.Tensor | None = None  # (p,) [CLS] pieces [SEP]
    word_of_piece: torch.Tensor | None = None  # (p,) each piece's word, -1 for [CLS], [SEP]

    @property
    def n_nodes(self) -> int:
        return 0 if self.tree is None else self.tree.n_nodes


class InputEncoder:
    """Makes sentences into what an encoder ``reads`` (a registry entry's declaration).

    ``node_vocab`` maps phrase labels to ids for encoders that read trees (``None`` before
    it is built: ``node_labels`` gives what to build it from); ``check_tree``
    (the entry's) rejects a tree the encoder cannot read, naming the sentence;
    ``piece_rows`` (``PieceSplitter.rows``) splits sentences into a backbone's pieces,
    for encoders that read them.
    """

    def __init__(
        self,
        reads: frozenset[Reads],
        node_vocab: Vocab | None = None,
        check_tree: Callable[[TreeArrays, str], None] | None = None,
        piece_rows: PieceRows | None = None,
    ) -> None:
        self.reads = reads
        self.node_vocab = node_vocab
        self.check_tree = check_tree
        if Reads.PIECES in reads and piece_rows is None:
            raise ValueError("an encoder that reads a backbone's pieces needs its tokenizer")
        self.piece_rows = piece_rows
        self.binary = Reads.BINARY_TREES in reads
        self.trees = self.binary or Reads.TREES in reads

    def model_tree(self, tree: Tree, pieces: Callable[[str], Sequence[str]] | None = None) -> Tree:
        """The tree the encoder reads: binarized where it reads binary trees, and with each
        word's subword ``pieces`` in a subtree under it."""
        tree = binarize(tree) if self.binary else tree
        return tree if pieces is None else split_tree(tree, pieces, SUBWORD_NODE)

    def node_labels(
        self, tree: Tree, pieces: Callable[[str], Sequence[str]] | None = None
    ) -> tuple[str, ...]:
        """The labels of the phrase nodes the encoder sees, in pre-order."""
        return encode_tree(self.model_tree(tree, pieces))[0].labels

    def sentence(
        self,
        ids: Sequence[int],
        tree: Tree | None,
        words: Sequence[str],
        where: str,
        pieces: Callable[[str], Sequence[str]] | None = None,
    ) -> SentenceInputs:
        """One sentence of ``words`` (token ids ``ids``: of the words, or with ``pieces``, of
        each word's subword pieces in turn) over its ``tree``."""
        item = SentenceInputs(torch.tensor(list(ids), dtype=torch.long))
        if self.piece_rows is not None:
            try:
                [(piece_ids, owner)] = self.piece_rows([words])
            except SentenceTooLong as error:
                raise ValueError(f"{where}: {error}") from None
            item.piece_ids = torch.tensor(piece_ids, dtype=torch.long)
            item.word_of_piece = torch.tensor(owner, dtype=torch.long)
        if not self.reads - {Reads.PIECES}:
            return item
        if tree is None:
            raise ValueError(f"{where}: this encoder reads trees, and the sentence has none")
        if Reads.GAPS in self.reads:
            counts = None if pieces is None else [[len(pieces(w)) for w in words]]
            gaps = gap_distances([tree], counts)
            if len(gaps) != len(ids) - 1:
                raise ValueError(
                    f"{where}: its tree has {len(gaps) + 1} words but the sentence has "
                    f"{len(ids)} tokens"
                )
            item.gaps = torch.tensor(gaps, dtype=torch.long)
        if self.trees:
            if self.node_vocab is None:
                raise ValueError("an encoder that reads trees needs a node vocabulary")
            leaves = [p for w in words for p in pieces(w)] if pieces is not None else words
            lnr, arrays = encode_tree(self.model_tree(tree, pieces), leaves, where=where)
            if self.check_tree is not None:
                self.check_tree(arrays, where)
            item.tree = arrays
            item.node_ids = torch.tensor(self.node_vocab.encode(lnr.labels), dtype=torch.long)
        return item

    def batch(self, items: Sequence[SentenceInputs], pad_id: int = Vocab.pad_id) -> EncoderInputs:
        tokens, pad_mask = pad_ids([item.ids for item in items], pad_id)
        inputs = EncoderInputs(tokens, pad_mask)
        if Reads.GAPS in self.reads:
            # Gaps past a sentence's end (0) can only stretch a range into padding, whose
            # keys are masked.
            inputs.gaps = pad_ids([item.gaps for item in items])[0]
        if self.trees:
            inputs.trees = collate_trees([item.tree for item in items])
            inputs.node_labels = pad_ids([item.node_ids for item in items], pad_id)[0]
        if self.piece_rows is not None:
            # Padded pieces take id 0: their keys are masked and their states never read.
            piece_ids, piece_pad = pad_ids([item.piece_ids for item in items], 0)
            owners = pad_ids([item.word_of_piece for item in items], -1)[0]
            inputs.pieces = piece_batch(piece_ids, piece_pad, owners, (~pad_mask).sum(1))
        return inputs
