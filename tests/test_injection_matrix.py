"""The property matrix of ``inject_syntax``: every injecting mechanism (distance with its
hard and soft gate, constituent) in every model family it claims, decoders (GPT-2, Llama,
Qwen2, Mistral with a sliding window) and encoder-decoders (BART, T5), each a tiny random
model (nothing is fetched):

- a later token changes no earlier position of a causal stack;
- a padded batch equals each sentence alone, padding on the left and on the right (no NaN
  from a query whose keys are all masked);
- syntax that allows everything gives the plain model (distance; constituent's links are
  learned, so it has no such syntax);
- ``remove()`` gives the plain model back bit for bit.

Encoder-decoders take their layers by stack and never have their cross-attention edited.
"""

from __future__ import annotations

import copy

import pytest
import torch

from tests.helpers import tiny_transformers_config
from treeattn.models.syntax_injection import inject_syntax
from treeattn.parsing.tree_source import right_branching
from treeattn.trees import Tree

transformers = pytest.importorskip("transformers")

VOCAB, LENGTH, SHORT = 40, 7, 4  # padding 3: a sliding window of 3 sees none
DECODERS = ["gpt2", "llama", "qwen2", "mistral"]
ENCODER_DECODERS = ["bart", "t5"]
FAMILIES = DECODERS + ENCODER_DECODERS
# name -> (mechanism, options); the soft gate's small temperature makes a flat tree's gate 1
INJECTIONS = {
    "distance-hard": ("distance", {"gate": "hard"}),
    "distance-soft": ("distance", {"gate": "soft", "tau": 0.01}),
    "constituent": ("constituent", {}),
}


def tiny_model(family: str) -> torch.nn.Module:
    torch.manual_seed(0)
    config = tiny_transformers_config(family, n_layers=3, vocab=VOCAB)
    return transformers.AutoModel.from_config(config, attn_implementation="sdpa").eval()


def inject(model, family: str, name: str, layers=(0, 1, 2)):
    mechanism, options = INJECTIONS[name]
    chosen = list(layers)
    if family in ENCODER_DECODERS:
        chosen = {"encoder": chosen, "decoder": chosen}
    return inject_syntax(model, mechanism, layers=chosen, heads=[0, 2, 3], **options)


def words_of(mask: torch.Tensor) -> torch.Tensor:
    """Each piece's word (one word a piece, -1 at padding) for a (B, p) attention mask."""
    return (mask.cumsum(-1) - 1).masked_fill(mask == 0, -1)


def make_syntax(injection, family: str, trees, mask: torch.Tensor):
    def one(part):
        return part.inputs(trees, words_of(mask), mask == 0)

    if family in ENCODER_DECODERS:
        return {"encoder": one(injection["encoder"]), "decoder": one(injection["decoder"])}
    return one(injection)


def run(model, family: str, ids, mask, syntax=None, decoder_ids=None) -> dict[str, torch.Tensor]:
    """The last hidden states (B, p, d) of each stack, by stack name."""
    extra = {} if syntax is None else {"syntax": syntax}
    with torch.no_grad():
        if family in ENCODER_DECODERS:
            out = model(
                input_ids=ids,
                attention_mask=mask,
                decoder_input_ids=ids if decoder_ids is None else decoder_ids,
                decoder_attention_mask=mask,
                **extra,
            )
            return {"encoder": out.encoder_last_hidden_state, "decoder": out.last_hidden_state}
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding keeps each position
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, **extra)
        return {"decoder": out.last_hidden_state}


def sentences() -> torch.Tensor:
    torch.manual_seed(1)
    return torch.randint(3, VOCAB, (2, LENGTH))


def trees(lengths) -> list[Tree]:
    return [right_branching([f"w{i}" for i in range(n)]) for n in lengths]


@pytest.mark.slow
@pytest.mark.parametrize("name", list(INJECTIONS))
@pytest.mark.parametrize("family", FAMILIES)
def test_a_later_token_never_changes_an_earlier_position(family, name):
    model = tiny_model(family)
    ids = sentences()[:1]
    mask = torch.ones_like(ids)
    injection = inject(model, family, name)
    syntax = make_syntax(injection, family, trees([LENGTH]), mask)  # syntax is not text
    changed = ids.clone()
    changed[0, -1] = (changed[0, -1] + 1) % VOCAB
    before = run(model, family, ids, mask, syntax)["decoder"]
    after = run(model, family, changed, mask, syntax, decoder_ids=changed)["decoder"]
    if family in ENCODER_DECODERS:  # the source stays; only the decoder's last token moves
        after = run(model, family, ids, mask, syntax, decoder_ids=changed)["decoder"]
    torch.testing.assert_close(after[0, :-1], before[0, :-1], rtol=0, atol=1e-6)
    assert (after[0, -1] - before[0, -1]).abs().max() > 0


def padded(ids: torch.Tensor, side: str, short: int = SHORT) -> tuple[torch.Tensor, torch.Tensor]:
    """The batch of ``ids[0]`` (LENGTH words) and ``ids[1][:short]``, padded on ``side``."""
    mask = torch.ones_like(ids)
    batch = ids.clone()
    if side == "right":
        mask[1, short:] = 0
    else:
        mask[1, : LENGTH - short] = 0
        batch[1, LENGTH - short :] = ids[1, :short]
    return batch.masked_fill(mask == 0, 0), mask


@pytest.mark.parametrize("short", [SHORT, 1])  # 1: a one-token sentence beside a long one
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("name", list(INJECTIONS))
@pytest.mark.parametrize("family", FAMILIES)
def test_a_padded_batch_equals_each_sentence_alone(family, name, side, short):
    if family == "bart" and side == "left":
        pytest.skip("BART's learned absolute positions move with left padding, plain or not")
    model = tiny_model(family)
    injection = inject(model, family, name)
    ids = sentences()
    batch, mask = padded(ids, side, short)
    together = run(
        model, family, batch, mask, make_syntax(injection, family, trees([LENGTH, short]), mask)
    )
    for row, n in enumerate((LENGTH, short)):
        alone_ids, alone_mask = ids[row : row + 1, :n], torch.ones(1, n, dtype=torch.long)
        syntax = make_syntax(injection, family, trees([n]), alone_mask)
        alone = run(model, family, alone_ids, alone_mask, syntax)
        for stack, states in together.items():
            real = states[row][mask[row].bool()]
            assert not real.isnan().any(), f"NaN at a real position of the {stack}"
            torch.testing.assert_close(real, alone[stack][0], rtol=0, atol=1e-5)


def flat(n: int) -> Tree:
    """Every word a child of the root: each word's local range is the whole sentence."""
    return Tree("S", [Tree("X", [f"w{i}"]) for i in range(n)])


@pytest.mark.parametrize("name", ["distance-hard", "distance-soft"])
@pytest.mark.parametrize("family", FAMILIES)
def test_syntax_that_allows_everything_gives_the_plain_model(family, name):
    model = tiny_model(family)
    batch, mask = padded(sentences(), "right")
    plain = run(model, family, batch, mask)
    injection = inject(model, family, name)
    ranged = run(
        model,
        family,
        batch,
        mask,
        make_syntax(injection, family, [flat(LENGTH), flat(SHORT)], mask),
    )
    for stack, states in plain.items():
        real = mask.bool()
        torch.testing.assert_close(ranged[stack][real], states[real], rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", list(INJECTIONS))
@pytest.mark.parametrize("family", FAMILIES)
def test_remove_gives_the_plain_model_back(family, name):
    model = tiny_model(family)
    batch, mask = padded(sentences(), "right")
    implementation = model.config._attn_implementation
    plain = run(model, family, batch, mask)
    injection = inject(model, family, name, layers=(1,))
    syntaxed = run(
        model, family, batch, mask, make_syntax(injection, family, trees([LENGTH, SHORT]), mask)
    )
    assert (syntaxed["decoder"] - plain["decoder"]).abs().max() > 1e-4  # it took syntax
    injection.remove()
    again = run(model, family, batch, mask)
    assert model.config._attn_implementation == implementation
    assert not hasattr(model, "syntax_injection")
    for stack, states in plain.items():
        torch.testing.assert_close(again[stack], states, rtol=0, atol=0)


@pytest.mark.parametrize("family", ENCODER_DECODERS)
def test_cross_attention_is_never_edited(family):
    model = tiny_model(family)
    inject(model, family, "distance-hard")
    hooked = [name for name, m in model.named_modules() if m._forward_pre_hooks]
    assert len(hooked) == 6  # three self-attentions in each stack
    assert not [name for name in hooked if "encoder_attn" in name or "EncDec" in name]


def test_an_encoder_decoder_model_takes_its_layers_by_stack():
    model = tiny_model("bart")
    with pytest.raises(ValueError, match="encoder-decoder model: layers names each stack"):
        inject_syntax(model, "distance", layers=[0], heads=[0])
    with pytest.raises(ValueError, match="encoder-decoder model"):
        inject_syntax(model, "distance", layers={"middle": [0]}, heads=[0])
    with pytest.raises(ValueError, match="one stack of layers"):
        inject_syntax(tiny_model("gpt2"), "distance", layers={"decoder": [0]}, heads=[0])


def test_a_layer_with_an_attention_of_unknown_kind_is_refused():
    model = tiny_model("bart")
    layer = model.decoder.layers[0]
    layer.add_module("other_attn", copy.deepcopy(layer.encoder_attn))  # self or cross?
    with pytest.raises(TypeError, match="layer layers.0 holds 2 attentions"):
        inject_syntax(model, "distance", layers={"decoder": [0]}, heads=[0])
    assert not hasattr(model, "syntax_injection")


def test_a_mechanism_without_a_causal_form_is_refused_by_name(monkeypatch):
    from treeattn.attention.distance import DistanceInjection

    monkeypatch.setattr(DistanceInjection, "causal_form", False)
    with pytest.raises(ValueError, match="the distance mechanism has no causal form"):
        inject_syntax(tiny_model("llama"), "distance", layers=[0], heads=[0])
    model = tiny_model("bart")  # its encoder would take it; its decoder refuses it whole
    with pytest.raises(ValueError, match="the distance mechanism has no causal form"):
        inject_syntax(model, "distance", layers={"encoder": [0], "decoder": [0]}, heads=[0])
    assert not hasattr(model, "syntax_injection")
    assert not [name for name, m in model.named_modules() if m._forward_pre_hooks]


@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2-135M's decoder stack (30 layers, 9 query heads over 3 key and value heads),
    from its package; skips when the package is not installed."""
    from treeattn.models.packaged_lm import load_packaged_lm
    from treeattn.models.weights import WeightsError

    try:
        model, _ = load_packaged_lm("smollm2-135m")
    except WeightsError as error:
        pytest.skip(str(error))
    return model.model


@pytest.mark.slow
@pytest.mark.parametrize("name", ["distance-hard", "constituent"])
def test_smollm2_a_later_token_never_changes_an_earlier_position(smollm2, name):
    mechanism, options = INJECTIONS[name]
    torch.manual_seed(2)
    ids = torch.randint(100, 20000, (1, 9))
    changed = ids.clone()
    changed[0, -1] += 1
    mask = torch.ones_like(ids)
    injection = inject_syntax(smollm2, mechanism, layers=[0, 14, 29], heads=[0, 4, 8], **options)
    try:
        syntax = injection.inputs(trees([9]), words_of(mask), mask == 0)
        with torch.no_grad():
            before = smollm2(input_ids=ids, syntax=syntax).last_hidden_state
            after = smollm2(input_ids=changed, syntax=syntax).last_hidden_state
    finally:
        injection.remove()
    torch.testing.assert_close(after[0, :-1], before[0, :-1], rtol=0, atol=1e-5)
    assert (after[0, -1] - before[0, -1]).abs().max() > 1e-3


def test_smollm2_syntax_that_allows_everything_gives_the_plain_model(smollm2):
    torch.manual_seed(3)
    ids = torch.randint(100, 20000, (1, 9))
    mask = torch.ones_like(ids)
    with torch.no_grad():
        plain = smollm2(input_ids=ids).last_hidden_state
        injection = inject_syntax(smollm2, "distance", layers=[0, 14, 29], heads=[0, 4, 8])
        try:
            syntax = injection.inputs([flat(9)], words_of(mask), mask == 0)
            ranged = smollm2(input_ids=ids, syntax=syntax).last_hidden_state
        finally:
            injection.remove()
    torch.testing.assert_close(ranged, plain, rtol=1e-5, atol=1e-4)


def test_a_bert_decoder_s_cross_attention_is_never_edited():
    config = tiny_transformers_config("bert", vocab=VOCAB)
    config.is_decoder, config.add_cross_attention = True, True
    model = transformers.AutoModel.from_config(config, attn_implementation="sdpa")
    injection = inject_syntax(model, "distance", layers=[0, 1], heads=[0])
    hooked = [name for name, m in model.named_modules() if m._forward_pre_hooks]
    assert hooked == ["encoder.layer.0.attention.self", "encoder.layer.1.attention.self"]
    assert injection.causal  # a BERT decoder's self-attention is causal
