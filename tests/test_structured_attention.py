"""Structured attention (Liu & Lapata 2018; Kim et al. 2017) against a literal, loop-by-loop
reading of the paper's equations, with the matrix-tree marginals in Koo et al.'s closed form
(an inverse, not autograd) and the projective marginals by enumerating every tree."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from treeattn.attention import build_attention
from treeattn.attention.structured import StructuredAttention, arc_marginals
from treeattn.models.encoder import TransformerEncoder
from treeattn.trees.dependency import DependencyTree


def literal_nonprojective(arc: torch.Tensor, root: torch.Tensor):
    """Liu & Lapata Eqs. 5-10: arc (n, n) scores f_ij (parent i, child j), root (n,) f_i^r.
    Returns a_ij (n, n) and a_i^r (n,) through the inverse of the root-replaced Laplacian."""
    n = root.shape[0]
    weight = [[math.exp(arc[i, j]) if i != j else 0.0 for j in range(n)] for i in range(n)]
    laplacian = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        for j in range(n):
            if i == j:
                laplacian[i, j] = sum(weight[k][j] for k in range(n))
            else:
                laplacian[i, j] = -weight[i][j]
    for j in range(n):
        laplacian[0, j] = math.exp(root[j])
    inverse = torch.linalg.inv(laplacian)
    a = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        for j in range(n):
            a[i, j] = (j != 0) * weight[i][j] * inverse[j, j] - (i != 0) * weight[i][j] * inverse[
                j, i
            ]
    a_root = torch.tensor([math.exp(root[i]) * inverse[i, 0] for i in range(n)])
    return a, a_root


def literal_projective(arc: torch.Tensor, root: torch.Tensor):
    """Marginals by enumerating every projective single-root tree."""
    n = root.shape[0]
    a = torch.zeros(n, n, dtype=torch.float64)
    a_root = torch.zeros(n, dtype=torch.float64)
    total = 0.0
    for heads in itertools.product(range(n + 1), repeat=n):
        if sum(h == 0 for h in heads) != 1:
            continue
        try:
            tree = DependencyTree(["w"] * n, heads)
        except ValueError:  # a cycle
            continue
        if not tree.is_projective():
            continue
        score = sum(root[m] if h == 0 else arc[h - 1, m] for m, h in enumerate(heads))
        weight = math.exp(score)
        total += weight
        for m, h in enumerate(heads):
            if h == 0:
                a_root[m] += weight
            else:
                a[h - 1, m] += weight
    return a / total, a_root / total


def literal_layer(layer: StructuredAttention, x: torch.Tensor, literal_marginals) -> torch.Tensor:
    """One sentence x (n, d), every equation written out per word and head."""
    n, d = x.shape
    heads, d_head = layer.n_heads, d // layer.n_heads
    scorer = layer.arc_scorer
    both = x @ layer.split.weight.T + layer.split.bias
    semantic, structure = both[:, :d], both[:, d:]
    parts = {"e": [], "p": [], "c": []}
    for h in range(heads):
        cols = slice(h * d_head, (h + 1) * d_head)
        e, s = semantic[:, cols], structure[:, cols]
        t_parent = [torch.tanh(scorer.parent[h] @ s[i]) for i in range(n)]
        t_child = [torch.tanh(scorer.child[h] @ s[i]) for i in range(n)]
        f = torch.tensor(
            [
                [float(t_parent[i] @ scorer.bilinear[h] @ t_child[j]) for j in range(n)]
                for i in range(n)
            ]
        )
        f_root = torch.tensor([float(scorer.root[h] @ s[i]) for i in range(n)])
        a, a_root = literal_marginals(f.double(), f_root.double())
        a, a_root = a.to(x.dtype), a_root.to(x.dtype)
        parent = [
            sum(a[k, i] * e[k] for k in range(n)) + a_root[i] * layer.root_value[h]
            for i in range(n)
        ]
        child = [sum(a[i, k] * e[k] for k in range(n)) for i in range(n)]
        parts["e"].append(e)
        parts["p"].append(torch.stack(parent))
        parts["c"].append(torch.stack(child))
    merged = torch.cat([torch.cat(parts[key], dim=-1) for key in ("e", "p", "c")], dim=-1)
    return torch.tanh(merged @ layer.out.weight.T + layer.out.bias)


@pytest.mark.parametrize(
    ("structure", "literal"),
    [("nonprojective", literal_nonprojective), ("projective", literal_projective)],
)
def test_layer_equals_the_literal_equations(structure, literal):
    torch.manual_seed(0)
    layer = StructuredAttention(8, 2, structure=structure).double().eval()
    x = torch.randn(5, 8, dtype=torch.float64)
    with torch.no_grad():
        fast = layer(x[None], torch.zeros(1, 5, dtype=torch.bool))[0]
        torch.testing.assert_close(fast, literal_layer(layer, x, literal))


def test_marginals_depend_on_the_structure():
    torch.manual_seed(1)
    scores = torch.randn(1, 1, 6, 6, dtype=torch.float64) * 3
    lengths = torch.tensor([5])
    nonprojective = arc_marginals(scores, lengths, "nonprojective")
    projective = arc_marginals(scores, lengths, "projective")
    assert not torch.allclose(nonprojective, projective)
    for marginals in (nonprojective, projective):  # each word has one head
        torch.testing.assert_close(
            marginals[0, 0, :, 1:].sum(0), torch.ones(5, dtype=torch.float64)
        )


@pytest.mark.parametrize("structure", ["nonprojective", "projective"])
def test_padded_batch_equals_each_sentence_alone(structure):
    torch.manual_seed(2)
    layer = StructuredAttention(8, 2, structure=structure).double().eval()
    lengths = [5, 2, 4]
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    pad_mask = torch.arange(5)[None, :] >= torch.tensor(lengths)[:, None]
    batch = layer(x, pad_mask)
    for b, n in enumerate(lengths):
        alone = layer(x[b : b + 1, :n], torch.zeros(1, n, dtype=torch.bool))
        torch.testing.assert_close(batch[b, :n], alone[0])


@pytest.mark.parametrize("structure", ["nonprojective", "projective"])
def test_gradcheck(structure):
    torch.manual_seed(3)
    layer = StructuredAttention(4, 2, structure=structure).double().eval()
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    pad_mask = torch.tensor([[False, False, False], [False, False, True]])
    assert torch.autograd.gradcheck(lambda t: layer(t, pad_mask), (x,))


def test_gradients_reach_every_parameter():
    torch.manual_seed(4)
    layer = StructuredAttention(8, 2)
    layer(torch.randn(2, 6, 8), torch.zeros(2, 6, dtype=torch.bool)).square().sum().backward()
    for name, parameter in layer.named_parameters():
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="structure must be"):
        StructuredAttention(8, 2, structure="tree")
    layer = StructuredAttention(8, 2)
    left_padded = torch.tensor([[True, False, False]])
    with pytest.raises(ValueError, match="padding at the end"):
        layer(torch.randn(1, 3, 8), left_padded)
    with pytest.raises(ValueError, match="no real position"):
        layer(torch.randn(1, 3, 8), torch.ones(1, 3, dtype=torch.bool))


def test_registered_and_usable_in_the_encoder():
    layer = build_attention("structured", 8, 2, 0.1, structure="projective")
    assert isinstance(layer, StructuredAttention) and layer.structure == "projective"
    encoder = TransformerEncoder(20, d_model=8, n_heads=2, attention="structured")
    tokens = torch.tensor([[3, 4, 5, 0], [6, 7, 0, 0]])
    assert encoder(tokens, tokens == 0).shape == (2, 4, 8)
