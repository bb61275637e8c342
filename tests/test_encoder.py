import math

import pytest
import torch

from treeattn import plugins
from treeattn.attention import build_attention
from treeattn.models.classifier import SentenceClassifier
from treeattn.models.encoder import TransformerEncoder, sinusoidal_positions
from treeattn.models.inputs import EncoderInputs


def literal_attention(module, x, pad_mask):
    """Vaswani et al. (2017) Eq. 1 with one head at a time, written out."""
    b, n, d = x.shape
    h = module.n_heads
    q, k, v = module.qkv(x).chunk(3, dim=-1)
    out = torch.zeros_like(x)
    for bi in range(b):
        for head in range(h):
            cols = slice(head * d // h, (head + 1) * d // h)
            scores = q[bi, :, cols] @ k[bi, :, cols].T / math.sqrt(d // h)
            scores = scores.masked_fill(pad_mask[bi][None, :], float("-inf"))
            out[bi, :, cols] = torch.softmax(scores, -1) @ v[bi, :, cols]
    return module.out(out)


def test_vanilla_attention_matches_the_equation_and_gradchecks():
    torch.manual_seed(0)
    attn = build_attention("vanilla", 8, 2, 0.0).double()
    x = torch.randn(2, 5, 8, dtype=torch.float64, requires_grad=True)
    pad_mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    torch.testing.assert_close(attn(x, pad_mask), literal_attention(attn, x, pad_mask))
    assert torch.autograd.gradcheck(lambda t: attn(t, pad_mask), (x,))


@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
def test_padded_batch_equals_items_alone(positions):
    torch.manual_seed(0)
    model = SentenceClassifier(TransformerEncoder(50, 16, 2, 2, 32, positions=positions), 3)
    model.eval()
    lengths = [7, 3, 5]
    tokens = torch.randint(3, 50, (3, 7))
    pad_mask = torch.arange(7)[None, :] >= torch.tensor(lengths)[:, None]
    batched = model(EncoderInputs(tokens, pad_mask))
    for i, n in enumerate(lengths):
        alone = model(EncoderInputs(tokens[i : i + 1, :n], pad_mask[i : i + 1, :n]))
        torch.testing.assert_close(batched[i : i + 1], alone, atol=1e-5, rtol=1e-5)


def test_registry_and_length_errors():
    assert "vanilla" in plugins.mechanisms.names()
    with pytest.raises(KeyError, match="unknown mechanism 'nope'; known: vanilla"):
        build_attention("nope", 8, 2, 0.0)
    encoder = TransformerEncoder(10, 8, 2, 1, 16, max_length=4)
    with pytest.raises(ValueError, match="longer than max_length=4"):
        encoder(torch.ones(1, 5, dtype=torch.long), torch.zeros(1, 5, dtype=torch.bool))
    table = sinusoidal_positions(3, 4)
    assert table[0].tolist() == [0.0, 1.0, 0.0, 1.0]
