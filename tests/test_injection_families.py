"""``inject_syntax`` on ``transformers`` models of several families, encoders and decoders,
each built from a tiny random config (nothing is fetched): syntax that allows everything
gives the plain model, layers not chosen are untouched, gradients reach the link modules,
``remove()`` gives the plain model back, and a model whose attention is its own code is
refused by name. Causality, padding and encoder-decoders, for every mechanism: the matrix
in ``test_injection_matrix.py``."""

from __future__ import annotations

import pytest
import torch

from tests.helpers import tiny_transformers_config
from treeattn.models.syntax_injection import inject_syntax
from treeattn.parsing.tree_source import right_branching
from treeattn.trees import Tree

transformers = pytest.importorskip("transformers")

VOCAB, LENGTH = 40, 7


FAMILIES = ["bert", "roberta", "electra", "distilbert", "gpt2", "llama", "qwen2", "mistral"]


def tiny_model(family: str) -> torch.nn.Module:
    torch.manual_seed(0)
    model = transformers.AutoModel.from_config(
        tiny_transformers_config(family, vocab=VOCAB), attn_implementation="sdpa"
    )
    return model.eval()


def batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Token ids (2, LENGTH), the attention mask (the second sentence padded at the end)
    and each piece's word (one word a piece, -1 at padding)."""
    torch.manual_seed(1)
    ids = torch.randint(3, VOCAB, (2, LENGTH))
    mask = torch.ones(2, LENGTH, dtype=torch.long)
    mask[1, 5:] = 0
    words = torch.arange(LENGTH).repeat(2, 1).masked_fill(mask == 0, -1)
    return ids, mask, words


def flat(n: int) -> Tree:
    """Every word a child of the root: each word's local range is the whole sentence."""
    return Tree("S", [Tree("X", [f"w{i}"]) for i in range(n)])


def states(model, ids, mask, syntax=None, layer: int = -1) -> torch.Tensor:
    extra = {} if syntax is None else {"syntax": syntax}
    out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, **extra)
    return out.hidden_states[layer]


@pytest.mark.parametrize("family", FAMILIES)
def test_syntax_that_allows_everything_gives_the_plain_model(family):
    model = tiny_model(family)
    ids, mask, words = batch()
    real = mask.bool()
    with torch.no_grad():
        plain = states(model, ids, mask)
        injection = inject_syntax(model, "distance", layers=[0, 1], heads=[0, 2])
        lengths = real.sum(1).tolist()
        syntax = injection.inputs([flat(n) for n in lengths], words, ~real)
        ranged = states(model, ids, mask, syntax)
    torch.testing.assert_close(ranged[real], plain[real], rtol=0, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_a_layer_not_chosen_is_untouched_and_remove_gives_the_plain_model(family):
    model = tiny_model(family)
    ids, mask, words = batch()
    real = mask.bool()
    implementation = model.config._attn_implementation
    with torch.no_grad():
        plain = [states(model, ids, mask, layer=k) for k in (1, 2)]
        injection = inject_syntax(model, "distance", layers=[1], heads=[1, 3])
        trees = [right_branching([f"w{i}" for i in range(n)]) for n in real.sum(1).tolist()]
        syntax = injection.inputs(trees, words, ~real)
        first = states(model, ids, mask, syntax, layer=1)  # after layer 0, not chosen
        second = states(model, ids, mask, syntax, layer=2)
        torch.testing.assert_close(first[real], plain[0][real], rtol=0, atol=1e-6)
        assert (second[real] - plain[1][real]).abs().max() > 1e-4  # layer 1 took syntax
        injection.remove()
        again = states(model, ids, mask, layer=2)
    assert model.config._attn_implementation == implementation
    assert not hasattr(model, "syntax_injection")
    torch.testing.assert_close(again, plain[1], rtol=0, atol=0)


@pytest.mark.parametrize("family", FAMILIES)
def test_gradients_reach_the_constituent_link_modules(family):
    model = tiny_model(family)
    ids, mask, words = batch()
    injection = inject_syntax(model, "constituent", layers=[0, 1], heads=[0])
    syntax = injection.inputs(None, words, mask == 0)
    states(model, ids, mask, syntax)[mask.bool()].sum().backward()
    for link in injection.links.values():
        assert link.link_query.weight.grad is not None
        assert link.link_query.weight.grad.abs().sum() > 0


def test_a_model_with_its_own_attention_code_is_refused_by_name():
    config = transformers.DebertaV2Config(
        vocab_size=VOCAB,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=32,
        max_position_embeddings=32,
    )
    model = transformers.AutoModel.from_config(config)
    with pytest.raises(TypeError, match="DebertaV2Model: its attention does not go through"):
        inject_syntax(model, "distance", layers=[0], heads=[0])
