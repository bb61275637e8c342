"""Syntax-guided local attention (Hou et al. 2022): gap distances, local ranges, the hard
and soft gates, and the attention layer against a literal implementation."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from tests.strategies import trees
from treeattn.attention.distance import (
    GAPS,
    DistanceAttention,
    first_wider,
    local_bias,
    local_range,
)
from treeattn.attention.registry import Reads
from treeattn.attention.vanilla import VanillaSelfAttention
from treeattn.data.vocab import Vocab
from treeattn.models.encoder import TransformerEncoder
from treeattn.models.inputs import InputEncoder
from treeattn.tasks import load_config
from treeattn.tasks.datasets import open_dataset
from treeattn.tasks.encoding import EncodedSet
from treeattn.tasks.sentences import LabeledSentence
from treeattn.trees import Tree
from treeattn.trees.distance import SENTENCE_BREAK, gap_distances

PAPER = Tree.parse("(S I (VP swim (PP across (NP the river))) .)")
TREES = trees(st.just("X"), st.just("T"), st.sampled_from(["a", "b"]))


def literal_range(gaps: list[float], i: int) -> tuple[int, int]:
    """Token i's local range [start, end), walking one gap at a time as the paper says."""
    n = len(gaps) + 1
    start = i
    while start > 0 and gaps[start - 1] <= gaps[i - 1]:
        start -= 1
    end = i + 1
    while end < n and gaps[end - 1] <= gaps[i]:
        end += 1
    return start, end


def literal_gate(gaps: list[float], tau: float) -> torch.Tensor:
    """The soft gate (n, n): the product of alphas over the gaps between query and key."""
    n = len(gaps) + 1

    def alpha(own: float, gap: float) -> float:
        return (math.tanh((own - gap + 0.5) / tau) + 1) / 2

    gate = torch.ones(n, n, dtype=torch.float64)
    for i in range(n):
        for j in range(n):
            if j < i:
                gate[i, j] = math.prod(alpha(gaps[i - 1], gaps[k]) for k in range(j, i))
            elif j > i:
                gate[i, j] = math.prod(alpha(gaps[i], gaps[k]) for k in range(i, j))
    return gate


def ranges_of(bias: torch.Tensor) -> list[tuple[int, int]]:
    inside = bias == 0
    found = []
    for row in inside:
        columns = row.nonzero().flatten().tolist()
        assert columns == list(range(columns[0], columns[-1] + 1))  # one window
        found.append((columns[0], columns[-1] + 1))
    return found


def test_paper_figure_1():
    gaps = gap_distances([PAPER])
    assert gaps == [5, 4, 3, 2, 5]  # the figure's 4 3 2 1 4, each raised by 1
    ranges = ranges_of(local_bias(torch.tensor([gaps]))[0])
    words = PAPER.leaves()
    assert words[slice(*ranges[2])] == ["swim", "across", "the", "river"]  # across
    assert words[slice(*ranges[3])] == ["across", "the", "river"]  # the


def test_subword_pieces_and_sentence_breaks():
    first, second = Tree.parse("(S (NP a b) c)"), Tree.parse("(S d e)")
    assert gap_distances([first]) == [2, 3]
    # "b" in three pieces, two sentences in one sequence.
    assert gap_distances([first, second], [[1, 3, 1], [1, 1]]) == [2, 1, 1, 3, SENTENCE_BREAK, 2]
    with pytest.raises(ValueError, match="piece counts"):
        gap_distances([first], [[1, 1]])
    with pytest.raises(ValueError, match="piece counts"):
        gap_distances([first], [[1, 0, 1]])


@settings(max_examples=100)
@given(TREES)
def test_local_range_is_the_lowest_phrases_around_each_gap(tree: Tree):
    """Left end: the start of the lowest phrase holding token i and its left neighbour;
    right end: the end of the lowest phrase holding i and its right neighbour."""
    n = len(tree)
    gaps = gap_distances([tree])
    spans = [(start, end) for _, start, end in tree.spans()] + [(0, n)]

    def lowest(a: int, b: int) -> tuple[int, int]:
        return min((s for s in spans if s[0] <= a and b < s[1]), key=lambda s: s[1] - s[0])

    ranges = ranges_of(local_bias(torch.tensor([gaps]).reshape(1, n - 1))[0])
    for i in range(n):
        start = lowest(i - 1, i)[0] if i > 0 else 0
        end = lowest(i, i + 1)[1] if i < n - 1 else n
        assert ranges[i] == (start, end) == literal_range(gaps, i)


@settings(max_examples=100)
@given(st.lists(st.lists(st.integers(1, 4), min_size=0, max_size=20), min_size=1, max_size=3))
def test_ranges_by_binary_lifting_equal_the_walk(rows: list[list[int]]):
    """Any gaps, ties included, padded to one length with arbitrary values (a range may
    run on into padding, whose keys are masked anyway)."""
    width = max(len(row) for row in rows)
    padded = [row + [7] * (width - len(row)) for row in rows]
    gaps = torch.tensor(padded, dtype=torch.long).reshape(len(rows), width)
    start, end = local_range(gaps)
    for b, row in enumerate(rows):
        for i in range(len(row) + 1):
            assert (start[b, i], min(end[b, i], len(row) + 1)) == literal_range(row, i)
    found = first_wider(gaps)
    for b, row in enumerate(padded):
        wider = [[k for k in range(m + 1, width) if row[k] > row[m]] for m in range(width)]
        assert found[b].tolist() == [(ks or [width])[0] for ks in wider]


@settings(max_examples=50)
@given(st.lists(st.integers(1, 6), min_size=0, max_size=12), st.sampled_from([0.3, 1.0, 4.0]))
def test_soft_gate_is_the_product_of_alphas(gaps: list[int], tau: float):
    gaps_tensor = torch.tensor([gaps]).reshape(1, len(gaps))
    bias = local_bias(gaps_tensor, "soft", tau)[0]
    assert_close(bias.exp(), literal_gate(gaps, tau), rtol=1e-9, atol=1e-12)
    fast = local_bias(gaps_tensor, "soft", tau, dtype=torch.float32)[0]
    assert_close(fast.double().exp(), bias.exp(), rtol=1e-6, atol=1e-7)


def test_soft_gate_tends_to_the_hard_mask():
    gaps = torch.tensor([gap_distances([PAPER])])
    hard = local_bias(gaps).exp()
    errors = [(local_bias(gaps, "soft", tau).exp() - hard).abs().max() for tau in (1, 0.1, 0.01)]
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-20


def test_padded_gaps_do_not_change_the_real_rows():
    gaps = torch.tensor([[5, 4, 3, 2, 5], [3, 2, 0, 0, 0]])
    for gate in ("hard", "soft"):
        both = local_bias(gaps, gate)
        alone = local_bias(gaps[1:, :2], gate)
        assert_close(both[1, :3, :3], alone[0])
        assert torch.isfinite(both[0]).any(-1).all()


def reference_attention(layer, x, pad_mask, gaps):
    """Per item and head: softmax over real keys; a local head multiplies the probabilities
    by the gate (0/1 or the soft product) and renormalises."""
    b, n, d = x.shape
    h = layer.n_heads
    q, k, v = layer.qkv(x).chunk(3, dim=-1)
    out = torch.zeros_like(x)
    for item in range(b):
        length = int((~pad_mask[item]).sum())
        row_gaps = gaps[item, : length - 1].tolist()
        if layer.gate == "soft":
            gate = literal_gate(row_gaps, layer.tau).to(x.dtype)
        else:
            gate = torch.zeros(length, length, dtype=x.dtype)
            for i in range(length):
                start, end = literal_range(row_gaps, i)
                gate[i, start:end] = 1
        heads = []
        for head in range(h):
            cols = slice(head * d // h, (head + 1) * d // h)
            qh, kh, vh = (t[item, :length, cols] for t in (q, k, v))
            p = torch.softmax(qh @ kh.T / math.sqrt(d // h), dim=-1)
            if head < layer.local_heads:
                p = p * gate
                p = p / p.sum(-1, keepdim=True)
            heads.append(p @ vh)
        out[item, :length] = layer.out(torch.cat(heads, dim=-1))
    return out


@pytest.mark.parametrize("gate", ["hard", "soft"])
def test_layer_matches_the_literal_equations_with_padding(gate):
    torch.manual_seed(0)
    layer = DistanceAttention(16, 4, local_heads=2, gate=gate, tau=0.7).double()
    x = torch.randn(2, 6, 16, dtype=torch.float64)
    pad_mask = torch.tensor([[False] * 6, [False] * 3 + [True] * 3])
    gaps = torch.tensor([[5, 4, 3, 2, 5], [3, 2, 0, 0, 0]])
    out = layer(x, pad_mask, {GAPS: gaps})
    expected = reference_attention(layer, x, pad_mask, gaps)
    assert_close(out[0], expected[0])
    assert_close(out[1, :3], expected[1, :3])
    alone = layer(x[1:, :3], pad_mask[1:, :3], {GAPS: gaps[1:, :2]})
    assert_close(out[1:, :3], alone)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("gate", ["hard", "soft"])
def test_gradcheck(gate):
    torch.manual_seed(0)
    layer = DistanceAttention(8, 2, local_heads=1, gate=gate).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    pad_mask = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    gaps = torch.tensor([[3, 2, 4, 2], [2, 3, 0, 0]])
    assert torch.autograd.gradcheck(lambda t: layer(t, pad_mask, {GAPS: gaps}), (x,))


def test_global_heads_and_other_layers_are_plain_attention():
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16)
    pad_mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    gaps = torch.tensor([[5, 4, 3, 2, 5], [3, 2, 4, 0, 0]])
    vanilla = VanillaSelfAttention(16, 4)
    expected = vanilla(x, pad_mask)
    for options, layer_index in (({"local_heads": 0}, 0), ({"layers": [1]}, 0)):
        layer = DistanceAttention(16, 4, **options)
        layer.load_state_dict(vanilla.state_dict())
        assert_close(layer(x, pad_mask, {GAPS: gaps, "layer": layer_index}), expected)
    layer = DistanceAttention(16, 4, layers=[1])
    layer.load_state_dict(vanilla.state_dict())
    assert not torch.allclose(layer(x, pad_mask, {GAPS: gaps, "layer": 1}), expected)


def test_encoder_tells_each_layer_its_index():
    torch.manual_seed(0)
    options = {"layers": [1], "local_heads": 4}
    encoder = TransformerEncoder(
        20, d_model=16, n_heads=4, attention="distance", attention_options=options
    ).eval()
    tokens = torch.randint(3, 20, (1, 6))
    pad_mask = torch.zeros_like(tokens, dtype=torch.bool)
    far = {GAPS: torch.tensor([[9, 9, 9, 9, 9]])}  # every token sees the whole sentence
    near = {GAPS: torch.tensor([[2, 9, 2, 9, 2]])}
    assert not torch.allclose(encoder(tokens, pad_mask, far), encoder(tokens, pad_mask, near))
    encoder.layers[1].attn.layers = frozenset({5})  # no layer is local any more
    assert_close(encoder(tokens, pad_mask, far), encoder(tokens, pad_mask, near))


def test_bad_options_and_missing_distances():
    with pytest.raises(ValueError, match="local_heads"):
        DistanceAttention(16, 4, local_heads=5)
    with pytest.raises(ValueError, match="gate"):
        DistanceAttention(16, 4, gate="fuzzy")
    with pytest.raises(ValueError, match="tau"):
        DistanceAttention(16, 4, gate="soft", tau=0.0)
    with pytest.raises(KeyError, match="gap_distances"):
        DistanceAttention(16, 4)(torch.randn(1, 3, 16), torch.zeros(1, 3, dtype=torch.bool))


# ---------------------------------------------------------------------- data


def test_batches_carry_each_sentence_gap_distances():
    vocab = Vocab.build([["I", "swim", "across", "the", "river", "."]])
    rows = [
        LabeledSentence(PAPER.leaves(), 1, PAPER),
        LabeledSentence(["the", "river"], 0, Tree.parse("(NP the river)")),
    ]
    gaps = InputEncoder(frozenset({Reads.GAPS}))
    encoded = EncodedSet(rows, vocab, gaps)
    batch = encoded.batch([0, 1])
    assert batch.inputs.context()[GAPS].tolist() == [[5, 4, 3, 2, 5], [2, 0, 0, 0, 0]]
    with pytest.raises(ValueError, match="sentence 1: its tree has 2 words"):
        EncodedSet([LabeledSentence(["a", "b", "c"], 0, Tree.parse("(S a b)"))], vocab, gaps)
    with pytest.raises(ValueError, match="sentence 1: this encoder reads trees"):
        EncodedSet([LabeledSentence(["a"], 0)], vocab, gaps)


@pytest.mark.slow
def test_phrase_level_rows_carry_their_subtrees(shared_data):
    cfg = load_config("configs/sst5-distance.yaml")
    rows = open_dataset(cfg.data).load_split("train")
    assert all(row.tree is not None and row.tree.leaves() == row.tokens for row in rows)


def test_masked_language_modelling_rejects_distance_attention():
    with pytest.raises(ValueError, match="needs trees"):
        load_config(None, ["data.name=text", "model.attention=distance"])


def test_gaps_of_the_wrong_shape_name_both_shapes():
    encoder = TransformerEncoder(10, attention="distance")
    tokens, pad_mask = torch.ones(1, 5, dtype=torch.long), torch.zeros(1, 5, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"has shape \(1, 3\), but a batch of 1 sentences of 5"):
        encoder(tokens, pad_mask, {GAPS: torch.ones(1, 3, dtype=torch.long)})
