"""The translation decoder: cached steps against teacher forcing, padding, the tree
cross-attention behind it, and greedy / beam search against brute force."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch

from treeattn.models.cross_attention import CrossAttention, Memory
from treeattn.models.decoder import TransformerDecoder
from treeattn.models.hierarchical import TreeMemoryAttention
from treeattn.models.inputs import EncoderInputs
from treeattn.models.search import beam_search, greedy
from treeattn.trees import Tree
from treeattn.trees.tensors import TreeTensors, collate_trees, encode_tree

TREES = [
    Tree.parse("(S (NP a b) (VP c (PP d e)))"),
    Tree.parse("(S f g)"),
]


# What the decoder reads of a source: the encoder's output and the batch it encoded.
Source = tuple[Any, EncoderInputs]


def inputs(pad_mask: torch.Tensor, trees: TreeTensors | None = None) -> EncoderInputs:
    return EncoderInputs(torch.zeros_like(pad_mask, dtype=torch.long), pad_mask, trees=trees)


def tree_source(leaves: torch.Tensor, nodes: torch.Tensor, trees: TreeTensors) -> Source:
    return (leaves, nodes), inputs(trees.leaf_pad_mask, trees)


def sources(tree: bool, batch: int = 2, d: int = 12) -> tuple[Source, list[Source]]:
    """A padded batch of sources and each item alone, float64: leaf and node states with
    their trees (``tree``, as the hierarchical encoder gives), or token states."""
    g = torch.Generator().manual_seed(0)
    if tree:
        arrays = [encode_tree(t)[1] for t in TREES[:batch]]
        trees = collate_trees(arrays)
        n, m = trees.leaf_pad_mask.shape[1], trees.node_pad_mask.shape[1]
        leaves = torch.randn(batch, n, d, generator=g, dtype=torch.float64)
        nodes = torch.randn(batch, m, d, generator=g, dtype=torch.float64)
        alone = [
            tree_source(
                leaves[b : b + 1, : a.n_leaves], nodes[b : b + 1, : a.n_nodes], collate_trees([a])
            )
            for b, a in enumerate(arrays)
        ]
        return tree_source(leaves, nodes, trees), alone
    lengths = [5, 3][:batch]
    states = torch.randn(batch, max(lengths), d, generator=g, dtype=torch.float64)
    pad = torch.arange(max(lengths))[None, :] >= torch.tensor(lengths)[:, None]
    alone = [(states[b : b + 1, :k], inputs(pad[b : b + 1, :k])) for b, k in enumerate(lengths)]
    return (states, inputs(pad)), alone


def decoder(tree: bool, vocab: int = 11, layers: int = 2) -> TransformerDecoder:
    torch.manual_seed(1)
    cross = TreeMemoryAttention if tree else CrossAttention
    model = TransformerDecoder(
        vocab, d_model=12, n_heads=3, n_layers=layers, d_ff=16, cross_attention=cross
    )
    return model.double().eval()


@pytest.mark.parametrize("tree", [False, True])
def test_cached_steps_equal_teacher_forcing(tree):
    model = decoder(tree)
    source, _ = sources(tree)
    memories = model.memories(*source)
    targets = torch.randint(1, 11, (2, 6), generator=torch.Generator().manual_seed(2))
    forced = model(targets, memories)
    cache: dict = {}
    steps = [model(targets[:, t : t + 1], memories, cache, start=t) for t in range(6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), forced)
    # A cached prefix followed by several new words at once.
    cache = {}
    head = model(targets[:, :2], memories, cache)
    tail = model(targets[:, 2:], memories, cache, start=2)
    torch.testing.assert_close(torch.cat([head, tail], dim=1), forced)


@pytest.mark.parametrize("tree", [False, True])
def test_a_padded_batch_equals_each_sentence_alone(tree):
    model = decoder(tree)
    source, alone = sources(tree)
    targets = torch.randint(1, 11, (2, 5), generator=torch.Generator().manual_seed(3))
    target_lengths = [5, 2]
    targets[1, 2:] = 0
    batched = model(targets, model.memories(*source))
    for b, one in enumerate(alone):
        k = target_lengths[b]
        single = model(targets[b : b + 1, :k], model.memories(*one))
        torch.testing.assert_close(batched[b, :k], single[0])


@pytest.mark.parametrize("tree", [False, True])
def test_decoder_gradcheck(tree):
    model = decoder(tree, layers=1)
    source, _ = sources(tree, d=12)
    targets = torch.randint(1, 11, (2, 3), generator=torch.Generator().manual_seed(4))
    encoded, batch = source
    if tree:
        leaves, nodes = (x.clone().requires_grad_() for x in encoded)

        def run(x_leaves, x_nodes):
            return model(targets, model.memories((x_leaves, x_nodes), batch))

        assert torch.autograd.gradcheck(run, (leaves, nodes))
    else:
        states = encoded.clone().requires_grad_()

        def run(x):
            return model(targets, model.memories(x, batch))

        assert torch.autograd.gradcheck(run, (states,))


def test_too_long_targets_are_an_error():
    model = TransformerDecoder(5, d_model=8, n_heads=2, n_layers=1, d_ff=8, max_length=4)
    memories = model.memories(torch.zeros(1, 2, 8), inputs(torch.zeros(1, 2, dtype=torch.bool)))
    with pytest.raises(ValueError, match="longer than max_length=4"):
        model(torch.ones(1, 5, dtype=torch.long), memories)


# ------------------------------------------------------------------------------ search
BOS, EOS, VOCAB = 1, 2, 5  # words 3 and 4, and 0 (never drawn: scored very low)


class PrefixDecoder:
    """Next-word logits that depend on the whole prefix of each row (kept in the cache),
    drawn from a fixed random table: a toy decoder for checking the search."""

    def __init__(self, batch: int, seed: int) -> None:
        self.table = torch.randn(batch, 97, VOCAB, generator=torch.Generator().manual_seed(seed))
        self.table[..., 0] = -30.0
        self.table[..., BOS] = -30.0

    def __call__(self, tokens, memories, cache, start):
        prefix = tokens if "prefix" not in cache else torch.cat([cache["prefix"], tokens], 1)
        cache["prefix"] = prefix
        powers = 7 ** torch.arange(prefix.shape[1])
        code = (prefix * powers).sum(1) % 97
        sentence = memories[0].keys[:, 0, 0, 0].long()  # which sentence a row decodes
        return self.table[sentence, code][:, None]

    def log_prob(self, sentence: int, words: list[int]) -> float:
        """log P(words) of one sentence, words ending with EOS."""
        total, prefix = 0.0, [BOS]
        for w in words:
            code = sum(t * 7**i for i, t in enumerate(prefix)) % 97
            total += self.table[sentence, code].log_softmax(-1)[w].item()
            prefix.append(w)
        return total


def sentence_memories(batch: int) -> list[Memory]:
    keys = torch.arange(batch, dtype=torch.float32).view(batch, 1, 1, 1)
    return [Memory(keys, keys, torch.ones(batch, 1, 1, 1, dtype=torch.bool))]


def brute_force(model: PrefixDecoder, sentence: int, max_length: int, penalty: float):
    """The best score / length^penalty over every sequence of at most max_length words
    that ends with EOS (or is ended there)."""
    best, best_words = float("-inf"), None
    for length in range(1, max_length + 1):
        for body in itertools.product([0, 3, 4], repeat=length - 1):
            words = [*body, EOS]
            score = model.log_prob(sentence, words) / length**penalty
            if score > best:
                best, best_words = score, list(body)
    return best_words


def test_a_wide_beam_finds_the_best_sequence():
    model = PrefixDecoder(batch=3, seed=8)
    best = {}
    for penalty in (0.0, 1.0, 2.0):
        found = beam_search(
            model, sentence_memories(3), BOS, EOS, 81, max_length=4, length_penalty=penalty
        )
        best[penalty] = [brute_force(model, s, 4, penalty) for s in range(3)]
        assert found == best[penalty]
    # The table is drawn so that every penalty picks other sequences: the check has teeth.
    assert best[0.0] != best[1.0] != best[2.0] != best[0.0]


def test_beam_of_one_is_greedy():
    model = PrefixDecoder(batch=4, seed=6)
    memories = sentence_memories(4)
    greedy_words = greedy(model, memories, BOS, EOS, max_length=6)
    assert beam_search(model, memories, BOS, EOS, beam_size=1, max_length=6) == greedy_words
    assert all(len(words) < 6 and EOS not in words for words in greedy_words)


@pytest.mark.parametrize("tree", [False, True])
def test_search_over_a_padded_batch_equals_each_sentence_alone(tree):
    model = decoder(tree)
    source, alone = sources(tree)
    batched = beam_search(model, model.memories(*source), BOS, EOS, beam_size=3, max_length=7)
    for b, one in enumerate(alone):
        memories = model.memories(*one)
        assert beam_search(model, memories, BOS, EOS, beam_size=3, max_length=7) == [batched[b]]
    assert beam_search(model, model.memories(*source), BOS, EOS, 1, 7) == greedy(
        model, model.memories(*source), BOS, EOS, 7
    )
