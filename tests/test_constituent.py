"""Constituent attention (Tree Transformer) against a literal loop over the paper's
equations; its prior, padding, gradients; the induction variants (the paper's Algorithm 1,
the release's rule, the binary one) and gold-derived links; masked-LM masking."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from treeattn.analysis.induction_scores import score_induction
from treeattn.attention.constituent import (
    LINKS,
    ConstituentAttention,
    causal_constituent_prior,
    closing_links,
    constituent_prior,
    hierarchical_links,
    neighbour_links,
)
from treeattn.data.ptb import load_ptb_sample
from treeattn.metrics.unsupervised import REMOVED_TAGS
from treeattn.models.encoder import TransformerEncoder
from treeattn.models.inputs import EncoderInputs
from treeattn.models.masked_lm import MaskedLanguageModel
from treeattn.tasks.mlm import IGNORE, Masking, mask_tokens
from treeattn.trees import Tree
from treeattn.trees.induction import VARIANTS, gold_links, induce_spans, spans_to_tree
from treeattn.trees.transforms import remove_punctuation

DTYPE = torch.float64


def literal_links(query: torch.Tensor, key: torch.Tensor) -> torch.Tensor:
    """a_hat_i = sqrt(p[i, i+1] p[i+1, i]) for one sentence (n, d), word by word."""
    n, d = query.shape
    p = torch.zeros(n, n, dtype=query.dtype)
    if n == 1:
        return query.new_zeros(0)
    for i in range(n):
        neighbours = [j for j in (i - 1, i + 1) if 0 <= j < n]
        scores = torch.stack([query[i] @ key[j] / (d / 2) for j in neighbours])
        for j, prob in zip(neighbours, torch.softmax(scores, 0), strict=True):
            p[i, j] = prob
    return torch.stack([torch.sqrt(p[i, i + 1] * p[i + 1, i]) for i in range(n - 1)])


def literal_prior(links: torch.Tensor) -> torch.Tensor:
    """C[i, j] = prod_{k=i}^{j-1} a_k, symmetric, 1 on the diagonal, for one sentence."""
    n = len(links) + 1
    prior = torch.ones(n, n, dtype=links.dtype)
    for i in range(n):
        for j in range(i + 1, n):
            prior[i, j] = prior[j, i] = torch.prod(links[i:j])
    return prior


def literal_layer(layer: ConstituentAttention, x: torch.Tensor, previous):
    """One layer for one sentence (n, d), by the equations: E = C * softmax(QK^T/sqrt(d_k))."""
    n, d = x.shape
    new = literal_links(layer.link_query(x), layer.link_key(x))
    links = new if previous is None else previous + (1 - previous) * new
    prior = literal_prior(links)
    q, k, v = layer.qkv(x).chunk(3, dim=-1)
    heads, dh = layer.n_heads, d // layer.n_heads
    outputs = []
    for h in range(heads):
        part = slice(h * dh, (h + 1) * dh)
        probs = torch.softmax(q[:, part] @ k[:, part].T / math.sqrt(dh), dim=-1)
        outputs.append((prior * probs) @ v[:, part])
    return layer.out(torch.cat(outputs, dim=-1)), links


def layers(count: int = 2, d: int = 8, heads: int = 2) -> list[ConstituentAttention]:
    torch.manual_seed(3)
    return [ConstituentAttention(d, heads).to(DTYPE).eval() for _ in range(count)]


def test_two_layers_match_the_equations_with_padding():
    stack = layers()
    lengths = [5, 3, 1]
    x = torch.randn(3, 5, 8, dtype=DTYPE)
    pad_mask = torch.arange(5)[None, :] >= torch.tensor(lengths)[:, None]
    context: dict = {}
    hidden = x
    outputs = []
    for layer in stack:
        hidden = layer(hidden, pad_mask, context)
        outputs.append((hidden, context[LINKS]))
    for b, n in enumerate(lengths):
        item, previous = x[b, :n], None
        for layer, (batch_out, batch_links) in zip(stack, outputs, strict=True):
            item_out, previous = literal_layer(layer, item, previous)
            assert_close(batch_out[b, :n], item_out)
            assert_close(batch_links[b, : n - 1], previous)
            assert (batch_links[b, n - 1 :] == 0).all()  # links past the end
            item = item_out


def test_links_only_grow_with_depth_and_stay_in_0_1():
    torch.manual_seed(4)
    query, key = torch.randn(2, 2, 9, 6, dtype=DTYPE).unbind(0)
    lengths = torch.tensor([9, 6])
    first = neighbour_links(query, key, lengths)
    second = hierarchical_links(first, neighbour_links(key, query, lengths))
    assert ((first >= 0) & (first <= 1)).all() and (second >= first).all()
    assert (second <= 1).all()


def test_prior_matches_the_product_and_is_exact_at_links_0_and_1():
    torch.manual_seed(5)
    links = torch.rand(3, 7, dtype=DTYPE)
    links[1, 2], links[1, 4], links[2] = 0.0, 1.0, 1.0
    prior = constituent_prior(links)
    for b in range(3):
        assert_close(prior[b], literal_prior(links[b]), atol=1e-29, rtol=1e-12)
    leaf = links.clone().requires_grad_()
    constituent_prior(leaf).sum().backward()
    assert torch.isfinite(leaf.grad).all()
    # All links at 1: each link's derivative is the number of pairs it joins, 2 * i * (n - i)
    # (i pairs on the left, n - i on the right, both triangles).
    n = links.shape[1] + 1
    expected = torch.tensor([2.0 * i * (n - i) for i in range(1, n)], dtype=DTYPE)
    assert_close(leaf.grad[2], expected)


def test_the_prior_diagonal_option_sets_only_the_diagonal():
    torch.manual_seed(6)
    links = torch.rand(2, 5, dtype=DTYPE)
    eye = torch.eye(6, dtype=torch.bool)
    released = constituent_prior(links, diagonal=3.2e-5)
    assert_close(released[:, ~eye], constituent_prior(links)[:, ~eye])
    assert_close(released[:, eye], torch.full((2, 6), 3.2e-5, dtype=DTYPE))
    layer = ConstituentAttention(16, 2, prior_diagonal=0.0).double()
    x = torch.randn(1, 3, 16, dtype=DTYPE)
    probs = []
    layer.dropout.register_forward_hook(lambda m, i, o: probs.append(o))
    layer(x, torch.zeros(1, 3, dtype=torch.bool))
    assert (probs[0][0, :, eye[:3, :3]] == 0).all()  # no word attends to itself
    with pytest.raises(ValueError, match="prior_diagonal must lie in"):
        ConstituentAttention(16, 2, prior_diagonal=1.5)


def test_prior_keeps_its_precision_on_long_sentences():
    links = torch.full((1, 799), 0.999, dtype=torch.float32)
    prior = constituent_prior(links)
    expected = torch.tensor(float(links[0, 0]) ** 799, dtype=torch.float32)  # float32's 0.999
    assert_close(prior[0, 0, 799], expected, rtol=1e-6, atol=0)


def test_gradcheck():
    stack = layers(count=2, d=4, heads=2)
    x = torch.randn(2, 4, 4, dtype=DTYPE, requires_grad=True)
    pad_mask = torch.tensor([[False] * 4, [False, False, False, True]])

    def run(inputs: torch.Tensor) -> torch.Tensor:
        context: dict = {}
        for layer in stack:
            inputs = layer(inputs, pad_mask, context)
        return inputs[~pad_mask]

    assert torch.autograd.gradcheck(run, (x,))
    links = torch.rand(2, 5, dtype=DTYPE, requires_grad=True)
    assert torch.autograd.gradcheck(constituent_prior, (links,))


def test_the_causal_prior_is_each_prefix_s_prior_by_the_equations():
    """Row i of the causal prior, over two layers, is the last row of the paper's prior
    for the words 0..i alone (word i the last, with one neighbour), written literally."""
    torch.manual_seed(11)
    n, d = 6, 8
    q1, k1, q2, k2 = (torch.randn(1, n, d, dtype=DTYPE) for _ in range(4))
    lengths = torch.tensor([n])
    links = hierarchical_links(neighbour_links(q1, k1, lengths), neighbour_links(q2, k2, lengths))
    closing = hierarchical_links(closing_links(q1, k1, lengths), closing_links(q2, k2, lengths))
    prior = causal_constituent_prior(links, closing)[0]
    for i in range(n):
        first = literal_links(q1[0, : i + 1], k1[0, : i + 1])
        second = literal_links(q2[0, : i + 1], k2[0, : i + 1])
        assert_close(prior[i, : i + 1], literal_prior(first + (1 - first) * second)[i])
        assert (prior[i, i + 1 :] == 0).all()  # no later word


def test_the_causal_prior_has_gradients_and_is_exact_at_links_0_and_1():
    torch.manual_seed(12)
    links = torch.rand(2, 5, dtype=DTYPE, requires_grad=True)
    closing = torch.rand(2, 5, dtype=DTYPE, requires_grad=True)
    assert torch.autograd.gradcheck(causal_constituent_prior, (links, closing))
    edges = torch.tensor([[0.0, 1.0, 0.3, 0.0, 1.0] * 8], dtype=DTYPE, requires_grad=True)
    causal_constituent_prior(edges, edges).sum().backward()  # 41 words: no overflow above
    assert torch.isfinite(edges.grad).all()


def test_encoder_padding_changes_nothing_and_no_nan_for_one_word():
    torch.manual_seed(6)
    encoder = TransformerEncoder(30, d_model=16, n_heads=2, n_layers=3, attention="constituent")
    encoder.eval()
    tokens = torch.randint(3, 30, (3, 7))
    lengths = [7, 4, 1]
    pad_mask = torch.arange(7)[None, :] >= torch.tensor(lengths)[:, None]
    batch = encoder(tokens.masked_fill(pad_mask, 0), pad_mask)
    assert torch.isfinite(batch[~pad_mask]).all()
    for b, n in enumerate(lengths):
        alone = encoder(tokens[b : b + 1, :n], torch.zeros(1, n, dtype=torch.bool))
        assert_close(batch[b, :n], alone[0], atol=1e-5, rtol=1e-5)


def test_a_fresh_pass_starts_from_no_links():
    torch.manual_seed(7)
    encoder = TransformerEncoder(30, d_model=16, n_heads=2, n_layers=2, attention="constituent")
    encoder.eval()
    tokens = torch.randint(3, 30, (2, 5))
    pad_mask = torch.zeros(2, 5, dtype=torch.bool)
    context = {"something": 1}
    first, second = encoder(tokens, pad_mask, context), encoder(tokens, pad_mask, context)
    assert_close(first, second)
    assert context == {"something": 1}  # the caller's context is not written to


# ------------------------------------------------------------------- Algorithm 1


def test_the_binary_variant_descends_while_the_weakest_link_is_strong():
    links = np.array([[0.1, 0.2, 0.9, 0.3], [0.5, 0.95, 0.85, 0.6], [0.9, 0.99, 0.9, 0.7]])
    spans = induce_spans(links, threshold=0.8, min_layer=0, variant="binary")
    # Layer 2 splits off "e" (0.7); inside a..d every link there is above 0.8, so layer 1
    # splits off "a" (0.5); inside b..d layer 1 is above 0.8 again: layer 0 splits at 0.2.
    assert spans == {(0, 5), (0, 4), (1, 4), (2, 4)}
    assert spans_to_tree("a b c d e".split(), spans).to_brackets() == (
        "(X (X (X a) (X (X b) (X (X c) (X d)))) (X e))"
    )
    # With min_layer 1, b..d splits at layer 1's weakest link there (0.85, before "d").
    assert induce_spans(links, 0.8, 1, "binary") == {(0, 5), (0, 4), (1, 4), (1, 3)}
    with pytest.raises(ValueError, match="min_layer"):
        induce_spans(links, 0.8, min_layer=3)
    # Algorithm 1 as written: halves one layer down. "e" splits off at layer 2, a..d
    # starts at layer 1, where "a" splits off; b..d starts at layer 0, split at 0.2.
    assert induce_spans(links, 0.8, 0) == {(0, 5), (0, 4), (1, 4), (2, 4)}


@settings(max_examples=60)
@given(st.integers(1, 30), st.integers(1, 4), st.integers(0, 10_000))
def test_the_binary_variant_gives_a_binary_tree(n: int, n_layers: int, seed: int):
    rng = np.random.default_rng(seed)
    links = np.sort(rng.random((n_layers, n - 1)), axis=0)  # links grow with depth
    spans = induce_spans(links, 0.8, 0, "binary")
    assert len(spans) == max(0, n - 1)  # a binary tree over n words has n - 1 phrases
    if n >= 2:
        assert (0, n) in spans
    for a, b in spans:  # nested or disjoint
        for c, d in spans:
            assert b <= c or d <= a or (a <= c and d <= b) or (c <= a and b <= d)


# Links (3 layers, 6 words) growing with depth, on which the three variants part ways.
# The top layer splits a b c | d e f (0.2). Below it:
# - binary: both halves stay on the top layer: a | b c (0.75) and d | e f (0.5);
# - paper: both go one layer down: a b | c (0.3) and d e | f (0.3);
# - release (minimum layer 0): a b c's links at the top (0.75, 0.78) are all above 0.7, so
#   it goes down (a b | c); d e f's are not (0.5), so it stays (d | e f).
PARTING_LINKS = np.array(
    [
        [0.1, 0.2, 0.05, 0.4, 0.1],
        [0.6, 0.3, 0.1, 0.45, 0.3],
        [0.75, 0.78, 0.2, 0.5, 0.7],
    ]
)


def test_the_variants_part_where_the_halves_start():
    top = {(0, 6), (0, 3), (3, 6)}
    assert induce_spans(PARTING_LINKS, 0.8, 0, "binary") == top | {(1, 3), (4, 6)}
    assert induce_spans(PARTING_LINKS, 0.8, 0, "paper") == top | {(0, 2), (3, 5)}
    assert induce_spans(PARTING_LINKS, 0.8, 0, "release") == top | {(0, 2), (4, 6)}
    # The release's own minimum layer, 2, keeps every half on the top layer here.
    assert induce_spans(PARTING_LINKS, 0.8, None, "release") == top | {(1, 3), (4, 6)}
    with pytest.raises(ValueError, match="unknown induction variant 'tree'"):
        induce_spans(PARTING_LINKS, 0.8, 0, "tree")


def test_a_span_strong_at_the_lowest_layer_stays_flat_but_in_binary():
    links = np.array([[0.9, 0.85], [0.95, 0.9]])  # every link above 0.8, at both layers
    assert induce_spans(links, 0.8, 0, "paper") == {(0, 3)}
    assert induce_spans(links, 0.8, 0, "release") == {(0, 3)}
    assert induce_spans(links, 0.8, 0, "binary") == {(0, 3), (0, 2)}  # splits at 0.85
    flat = spans_to_tree("a b c".split(), {(0, 3)})
    assert flat.to_brackets() == "(X (X a) (X b) (X c))"


@settings(max_examples=40)
@given(st.integers(2, 25), st.integers(3, 5), st.integers(0, 10_000))
def test_mirrored_links_give_the_mirrored_tree(n: int, n_layers: int, seed: int):
    rng = np.random.default_rng(seed)
    links = np.sort(rng.random((n_layers, n - 1)), axis=0)
    for variant in VARIANTS:
        spans = induce_spans(links, 0.8, None, variant)
        mirrored = induce_spans(links[:, ::-1], 0.8, None, variant)
        assert mirrored == {(n - end, n - start) for start, end in spans}


def test_gold_links_are_the_binarized_tree():
    tree = Tree.parse("(S (NP (DT the) (JJ old) (NN man)) (VP (VBD saw) (NP (PRP it))))")
    links = gold_links(tree, n_layers=2)
    # Right-binarized: (S (NP the (@NP old man)) (VP saw (NP it))); the gaps' lowest
    # common ancestors NP, @NP, S, VP have heights 2 1 3 2 (a unary NP over "it" counts).
    assert_close(links, np.tile(1 / np.array([3.0, 2.0, 4.0, 3.0]), (2, 1)))
    for variant in VARIANTS:
        assert induce_spans(links, 0.8, 0, variant) == {(0, 5), (0, 3), (1, 3), (3, 5)}


def test_gold_links_give_84_f1_on_the_ptb_test_split(shared_data):
    """The regression check of the induction apart from any model: links derived from the
    gold trees (without punctuation) read back as the binarized gold trees."""
    gold = [entry.tree for entry in load_ptb_sample("test", root=shared_data, clean=True)]
    for variant in VARIANTS:
        trees = []
        for tree in gold:
            bare = remove_punctuation(tree, REMOVED_TAGS)
            spans = induce_spans(gold_links(bare, 4), 0.8, None, variant)
            trees.append(spans_to_tree(bare.leaves(), spans | {(0, len(bare))}))
        f1 = score_induction(gold, trees)["f1"]
        assert f1["model"].sentence_f1 >= 84 and f1["model"].corpus_f1 >= 84
        assert f1["random"].sentence_f1 < 20  # the scorer is no pushover


# ------------------------------------------------------------------- masking


def test_masking_rates_and_split():
    generator = torch.Generator().manual_seed(0)
    tokens = torch.randint(3, 1000, (200, 500), generator=generator)
    pad_mask = torch.zeros_like(tokens, dtype=torch.bool)
    pad_mask[:, 400:] = True
    masking = Masking(1 / 7, (0.8, 0.1, 0.1), 1000)
    inputs, targets = mask_tokens(tokens, pad_mask, masking, generator)
    chosen = targets != IGNORE
    assert not chosen[pad_mask].any() and (inputs[pad_mask] == tokens[pad_mask]).all()
    assert chosen[~pad_mask].float().mean().item() == pytest.approx(1 / 7, abs=0.005)
    assert (targets[chosen] == tokens[chosen]).all() and (inputs[~chosen] == tokens[~chosen]).all()
    shown_as_mask = (inputs[chosen] == 2).float().mean().item()
    unchanged = (inputs[chosen] == tokens[chosen]).float().mean().item()
    assert shown_as_mask == pytest.approx(0.8, abs=0.01)
    assert unchanged == pytest.approx(0.1, abs=0.01)  # random words rarely hit the same id
    assert (inputs >= 2).all()  # never padding or unknown drawn as a random word


def test_masking_settings_are_checked():
    with pytest.raises(ValueError, match="mask_rate"):
        Masking(0.0, (0.8, 0.1, 0.1), 10).check("cfg")
    with pytest.raises(ValueError, match="mask_split"):
        Masking(0.15, (0.8, 0.1), 10).check("cfg")
    with pytest.raises(ValueError, match="mask_split"):
        Masking(0.15, (0.8, 0.3, 0.1), 10).check("cfg")


def test_masked_lm_scores_only_the_chosen_positions_and_matches_all_positions():
    torch.manual_seed(0)
    encoder = TransformerEncoder(50, d_model=16, n_heads=2, attention="constituent", dropout=0.0)
    model = MaskedLanguageModel(encoder, 50).eval()
    tokens = torch.randint(3, 50, (3, 7))
    pad_mask = torch.zeros_like(tokens, dtype=torch.bool)
    pad_mask[1, 5:] = True
    chosen = torch.rand(3, 7) < 0.4
    chosen &= ~pad_mask
    every = model(EncoderInputs(tokens, pad_mask))
    some = model(EncoderInputs(tokens, pad_mask), predict=chosen)
    assert every.shape == (3, 7, 50) and some.shape == (int(chosen.sum()), 50)
    assert_close(some, every[chosen])
