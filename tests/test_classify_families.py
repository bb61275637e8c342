"""``model.backbone`` on a local folder of another family than BERT: a tiny random
RoBERTa-like encoder (byte-level BPE, ``<s> ... </s>``) and a tiny random Llama-like
decoder (SentencePiece-style BPE, a start piece, grouped-query heads), each saved as
``save_pretrained`` saves one, with a ``tokenizer.json`` trained here. Through the command
line: a classify run with syntax inside and without, then ``predict`` on raw sentences;
as a library: the backbone's hidden states are the ``transformers`` model's own, a head
saved with the weights is left out, a wrong pinned hash is refused. Nothing is fetched."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from tests.helpers import train
from tests.test_classify_backbone import ROWS
from tests.test_parser import SMALL, TOY
from treeattn.analysis.page_data import decode_attention
from treeattn.cli import main
from treeattn.models.backbone import load_backbone
from treeattn.models.pieces import load_splitter
from treeattn.models.syntax_injection import AttentionRecorder, inject_syntax
from treeattn.models.weights import WeightsError
from treeattn.parsing import Parser
from treeattn.tasks import load_config

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

CORPUS = [
    "the cat sat on the mat .",
    "the mat sat , unbelievably on zq .",
    'Dogs can\'t bark (loudly) at "night".',
    "cat sat .",
]
LAYERS = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 4}


def roberta_folder(folder: Path) -> Path:
    raw = tokenizers.ByteLevelBPETokenizer()
    raw.train_from_iterator(CORPUS * 10, vocab_size=300, special_tokens=["<s>", "<pad>", "</s>"])
    raw._tokenizer.post_processor = tokenizers.processors.RobertaProcessing(
        ("</s>", raw.token_to_id("</s>")), ("<s>", raw.token_to_id("<s>"))
    )
    config = transformers.RobertaConfig(
        **LAYERS, vocab_size=300, max_position_embeddings=64, intermediate_size=32, pad_token_id=1
    )
    torch.manual_seed(0)
    # A masked-LM checkpoint: its head is saved beside the encoder and left out when read.
    transformers.RobertaForMaskedLM(config).save_pretrained(folder)
    raw.save(str(folder / "tokenizer.json"))
    return folder


def llama_folder(folder: Path) -> Path:
    raw = tokenizers.SentencePieceBPETokenizer()
    raw.train_from_iterator(CORPUS * 10, vocab_size=200, special_tokens=["<unk>", "<s>"])
    raw._tokenizer.post_processor = tokenizers.processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", raw.token_to_id("<s>"))]
    )
    config = transformers.LlamaConfig(
        **LAYERS,
        vocab_size=200,
        max_position_embeddings=64,
        intermediate_size=32,
        num_key_value_heads=2,
    )
    torch.manual_seed(0)
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    raw.save(str(folder / "tokenizer.json"))
    return folder


FOLDERS = {"roberta": roberta_folder, "llama": llama_folder}


@pytest.fixture(scope="module", params=list(FOLDERS))
def folder(request, tmp_path_factory):
    return FOLDERS[request.param](tmp_path_factory.mktemp(request.param))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("labeled") / "trees.txt"
    path.write_text("".join(row + "\n" for row in ROWS * 4), encoding="utf-8")
    return path


def test_the_backbone_reads_the_transformers_model_of_the_folder(folder):
    backbone = load_backbone(folder, layers=[0, 2]).eval()
    words = [["the", "cat", "sat", "."], ["Dogs", "ca", "n't", "bark", "."]]
    batch = backbone.pieces(words)
    reference = transformers.AutoModel.from_pretrained(folder, local_files_only=True).eval()
    with torch.no_grad():
        got = backbone.hidden_states(batch)
        want = reference(
            input_ids=batch.piece_ids,
            attention_mask=(~batch.pad_mask).long(),
            output_hidden_states=True,
        ).hidden_states
    keep = ~batch.pad_mask
    for mine, theirs in zip(got, want, strict=True):
        torch.testing.assert_close(mine[keep], theirs[keep], rtol=0, atol=1e-6)
    assert backbone.vectors(batch).shape == (2, 5, LAYERS["hidden_size"])


def test_the_pieces_are_as_many_as_the_models_positions_hold(folder):
    """RoBERTa's positions start after its padding id: 64 positions read 62 pieces."""
    splitter = load_splitter(folder)
    model = transformers.AutoModel.from_pretrained(folder, local_files_only=True).eval()
    roberta = model.config.model_type == "roberta"
    assert splitter.max_pieces == (62 if roberta else 64)
    full = torch.full((1, splitter.max_pieces), 5)
    with torch.no_grad():
        model(input_ids=full)  # the longest sentence the splitter lets through runs
        if roberta:  # one piece more finds no position
            with pytest.raises((IndexError, RuntimeError)):
                model(input_ids=torch.full((1, splitter.max_pieces + 1), 5))


def test_what_is_not_tuned_trains_without_dropout(folder):
    """Only the top layer tunes: the embeddings (RoBERTa's dropout and norm) and the lower
    layer compute fixed features in training too; an injection's link modules train."""
    backbone = load_backbone(folder, tune=1)
    inject_syntax(backbone.injectable, "distance", layers=[1], heads=[0])
    backbone.train()
    encoder = backbone.encoder
    top = set(map(id, encoder.layers[-1].modules()))
    links = set(map(id, encoder.model.syntax_injection.modules()))
    assert encoder.outside_modules()
    for module in encoder.model.modules():
        if not any(module.children()):  # what reads the training flag
            assert module.training == (id(module) in top | links), module


def test_a_pinned_hash_is_checked(folder):
    with pytest.raises(WeightsError, match="not the pinned"):
        load_backbone(folder, sha256="0" * 64)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["vanilla", "distance", "constituent"])
def test_classify_trains_and_predicts_through_the_command_line(
    tmp_path, folder, data, mechanism, capsys
):
    inside = ["model.attention_options.layers=[1]", "model.attention_options.heads=[0, 1]"]
    settings = [
        "task=classify",
        "data.name=labeled",
        *(f"data.paths.{split}={data}" for split in ("train", "dev", "test")),
        f"model.backbone={folder}",
        "model.backbone_pooling=mean",
        f"model.attention={mechanism}",
        *(["model.n_layers=0"] if mechanism == "vanilla" else inside),
        "train.epochs=1",
        "train.max_tokens=40",
        "train.progress=false",
        f"out_dir={tmp_path}",
    ]
    assert main(["train", *(arg for s in settings for arg in ("--set", s))]) == 0
    capsys.readouterr()
    lines = tmp_path / "in.txt"
    lines.write_text("The cat sat on the mat.\nDogs can't bark.\n", encoding="utf-8")
    assert main(["predict", str(tmp_path / "best.pt"), str(lines)]) == 0
    predicted = capsys.readouterr().out.splitlines()
    assert len(predicted) == 2 and set(predicted) <= {"neg", "pos"}
    page = tmp_path / "page.html"
    assert main(["view", str(tmp_path / "best.pt"), str(lines), "-o", str(page)]) == 0
    found = re.search(r'id="view-data">(.*?)</script>', page.read_text(encoding="utf-8"), re.S)
    data = json.loads(found.group(1))
    assert data["layers"] == LAYERS["num_hidden_layers"]
    for sentence in data["sentences"]:
        n = len(sentence["words"])
        for layer in sentence["attention"]:
            rows = torch.stack([decode_attention(head, n) for head in layer])  # over the words
            assert rows.sum() > 0 and (rows.sum(-1) < 1.05).all()  # special pieces take some
    assert (len(data["sentences"][0]["panels"]) > 0) == (mechanism != "vanilla")


def test_the_recorded_attention_is_the_models_own(folder):
    """What the viewer keeps of a transformers backbone's layers is the probabilities the
    model's own eager attention gives."""
    backbone = load_backbone(folder).eval()
    batch = backbone.pieces([["the", "cat", "sat", "."]])
    model = backbone.encoder.model
    kept: dict[int, torch.Tensor] = {}
    recorder = AttentionRecorder(model, lambda layer, probs, edit: kept.setdefault(layer, probs))
    with torch.no_grad():
        backbone.hidden_states(batch)
    recorder.remove()
    model.set_attn_implementation("eager")
    with torch.no_grad():
        eager = model(input_ids=batch.piece_ids, output_attentions=True).attentions
    assert len(kept) == len(eager) == LAYERS["num_hidden_layers"]
    for layer, probs in enumerate(eager):
        torch.testing.assert_close(kept[layer], probs, rtol=0, atol=1e-6)


def test_a_parser_on_the_folder_trains_saves_and_parses_the_same(tmp_path, folder):
    """The parser reads words through such a backbone too; its file holds the tuned
    weights (compact: as int8 changes from the folder's) and parses as the checkpoint."""
    treebank = tmp_path / "toy.txt"
    treebank.write_text("".join(line + "\n" for line in TOY * 3), encoding="utf-8")
    settings = [
        "task=parse",
        "data.name=files",
        *(f"data.paths.{split}={treebank}" for split in ("train", "dev", "test")),
        *SMALL,
        f"model.backbone={folder}",
        "model.backbone_tune=1",
        "train.epochs=1",
        f"out_dir={tmp_path / 'run'}",
    ]
    train(load_config(None, settings))
    checkpoint = Parser.load(tmp_path / "run" / "best.pt", device="cpu")
    sentences = [["the", "cat", "sat", "."], ["Dogs", "ca", "n't", "bark", "."]]
    expected = [str(p.tree) for p in checkpoint.parse(sentences)]
    for compact in (False, True):
        path = checkpoint.save(tmp_path / f"parser-{compact}.safetensors", compact=compact)
        parsed = Parser.load(path, device="cpu").parse(sentences)
        assert [str(p.tree) for p in parsed] == expected or compact  # int8 may move a score
        assert len(parsed) == 2
